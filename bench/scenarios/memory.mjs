// Memory: 1,000,000 requests over 100,000 distinct valid tokens against the
// JWT route (10× the default verified-token cache size, so the cache must
// evict). bearward's RSS is sampled from /proc every 250 ms.
// Target: max RSS < 200 MB. `--quick`: 100,000 requests over 10,000 tokens.
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
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
    const bw = ctx.track(await startBearward(ctx, { name: 'bearward-memory', port, config }))
    const samples = []
    return {
      rounds: 1,
      targets: [
        {
          id: 'bearward',
          label: `bearward, ${requests.toLocaleString('en-US')} requests over ${tokenCount.toLocaleString('en-US')} tokens`,
          profileDir: bw.profileDir,
          async measure() {
            const startRss = bw.rss()
            const timer = setInterval(() => samples.push({ t: Date.now(), rss: bw.rss() }), 250)
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
              const maxRss = Math.max(startRss, ...samples.map((s) => s.rss))
              return { ...r, startRss, maxRss, endRss: bw.rss(), requests, tokens: tokenCount }
            } finally {
              clearInterval(timer)
            }
          },
        },
      ],
      extra: { samples },
      evaluate(a) {
        const r = a.bearward.rounds[0]
        const text = `max RSS ${(r.maxRss / MB).toFixed(0)} MB (start ${(r.startRss / MB).toFixed(0)}, end ${(r.endRss / MB).toFixed(0)})`
        return [
          row(a.bearward, {
            subject: `bearward, ${r.requests.toLocaleString('en-US')} req / ${r.tokens.toLocaleString('en-US')} tokens`,
            target: TARGET,
            ratio: text,
            checks: [{ ok: r.maxRss < LIMIT, what: TARGET }],
          }),
        ]
      },
    }
  },
}
