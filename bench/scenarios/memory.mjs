// Memory: 1,000,000 requests over 100,000 distinct valid tokens against the
// JWT route (10× the default verified-token cache size, so the cache must
// evict). bearward's RSS is sampled from /proc every 250 ms.
// Target: max RSS < 200 MB. `--quick`: 100,000 requests over 10,000 tokens.
// With BENCH_AB_NODE_FLAGS set (lib/bearward.mjs), a second bearward with
// those node flags takes the same requests after the first.
import { abNodeFlags, bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { freePort } from '../lib/spawn.mjs'
import { SCOPE, gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { runLoad } from '../lib/load.mjs'
import { generateSigningJwk, mintJwtsToFile } from '../lib/tokens.mjs'
import { notRun, row } from '../lib/rows.mjs'

const TARGET = 'max RSS < 200 MB'
const LIMIT = 200 * 1024 * 1024
const MB = 1024 * 1024

export default {
  title: 'memory: 1M requests over 100k tokens',
  target: TARGET,
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { targets: [], evaluate: () => [notRun('bearward', TARGET, unavailable)] }
    const requests = ctx.opts.quick ? 100_000 : 1_000_000
    const tokenCount = ctx.opts.quick ? 10_000 : 100_000
    const up = await ctx.upstream()
    const { port, publicUrl } = await reserveAddress()
    const jwk = await generateSigningJwk()
    const keyFile = writeJson(ctx.file('memory.jwk'), jwk)
    const file = mintJwtsToFile(ctx.file('memory.tokens'), { privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE, count: tokenCount })
    const config = await gatewayConfig({ publicUrl, keyFile, routes: [route('api', '/api', up.url, { token: 'jwt', scopes: { GET: [SCOPE] } })] })
    const samples = []
    /** One instance's target: RSS sampled every 250 ms while it serves every request once. */
    const target = async (id, name, nodeFlags, listenPort) => {
      const bw = ctx.track(await startBearward(ctx, { name, port: listenPort, config, nodeFlags }))
      const suffix = nodeFlags.length > 0 ? ` with ${nodeFlags.join(' ')}` : ''
      return {
        id,
        label: `bearward${suffix}, ${requests.toLocaleString('en-US')} requests over ${tokenCount.toLocaleString('en-US')} tokens`,
        suffix,
        profileDir: bw.profileDir,
        async measure() {
          const startRss = bw.rss()
          const mine = []
          const timer = setInterval(() => mine.push({ t: Date.now(), rss: bw.rss() }), 250)
          try {
            const r = await runLoad(
              {
                url: bw.url + '/api/items',
                connections: ctx.opts.connections,
                warmupSec: 0,
                amount: requests,
                timeoutSec: 30,
                serverPids: [bw.pid],
                rotate: { file, as: 'bearer' },
              },
              ctx.workDir,
            )
            const maxRss = Math.max(startRss, ...mine.map((m) => m.rss))
            samples.push(...mine.map((m) => ({ ...m, target: id })))
            return { ...r, startRss, maxRss, endRss: bw.rss(), requests, tokens: tokenCount }
          } finally {
            clearInterval(timer)
          }
        },
      }
    }
    const targets = [await target('bearward', 'bearward-memory', [], port)]
    const ab = abNodeFlags()
    if (ab !== null) targets.push(await target('bearward+ab', 'bearward-memory-ab', ab, await freePort()))
    return {
      rounds: 1,
      targets,
      extra: { samples },
      evaluate(a) {
        return targets.map((t) => {
          // A target left out by --only: its row reads not run, as other scenarios' do.
          if (!a[t.id]) return notRun(`bearward${t.suffix}`, TARGET, 'not measured in this run')
          const r = a[t.id].rounds[0]
          const text = `max RSS ${(r.maxRss / MB).toFixed(0)} MB (start ${(r.startRss / MB).toFixed(0)}, end ${(r.endRss / MB).toFixed(0)})`
          return row(a[t.id], {
            subject: `bearward${t.suffix}, ${r.requests.toLocaleString('en-US')} req / ${r.tokens.toLocaleString('en-US')} tokens`,
            target: TARGET,
            ratio: text,
            checks: [{ ok: r.maxRss < LIMIT, what: TARGET }],
          })
        })
      },
    }
  },
}
