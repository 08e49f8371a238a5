// JWT route, a new token on every request: the verified-token cache never
// hits, so each request pays a full signature verification. Reported as
// req/s and its ratio to a jose.jwtVerify loop in one process (the most one
// core can verify with the same library and options, with no HTTP at all).
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { SCOPE, gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { cpuSnapshot, foreignShare } from '../lib/cpu.mjs'
import { runLoad } from '../lib/load.mjs'
import { checkWithJose, generateSigningJwk, mintJwts, mintJwtsToFile, publicJwk, writeLines } from '../lib/tokens.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = 'report req/s and ratio to a jose.jwtVerify loop'

const PATH = '/api/items'
const LOOP = fileURLToPath(new URL('../baselines/jose-verify-loop.mjs', import.meta.url))

export default {
  title: 'JWT route, new token every request (cache-cold)',
  target: TARGET,
  async setup(ctx) {
    const { opts } = ctx
    const up = await ctx.upstream()
    const { port, publicUrl } = await reserveAddress()
    const jwk = await generateSigningJwk()
    const keyFile = writeJson(ctx.file('jwt-cold.jwk'), jwk)
    const pubFile = writeJson(ctx.file('jwt-cold.pub.jwk'), publicJwk(jwk))
    const claims = { privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE }
    const loopTokens = mintJwts({ ...claims, count: 5000 })
    await checkWithJose(loopTokens[0], jwk, publicUrl, publicUrl)
    const loopFile = writeLines(ctx.file('jwt-cold.loop.tokens'), loopTokens)

    // Single-use tokens, sized from the last jose-loop rate: bearward cannot
    // verify much faster than one core running jose (2× headroom, then × 1.3).
    let lastLoopRate = 10_000
    const loop = {
      id: 'jose',
      label: 'jose.jwtVerify loop (1 process)',
      async measure() {
        const before = cpuSnapshot()
        const { stdout } = await promisify(execFile)(process.execPath, [
          LOOP,
          loopFile,
          pubFile,
          publicUrl,
          publicUrl,
          String(opts.durationSec),
          String(Math.max(0.5, opts.warmupSec)),
        ])
        const r = JSON.parse(stdout.trim())
        lastLoopRate = r.jose.rps
        return { rps: r.jose.rps, latency: null, problems: [], jose: r.jose, raw: r.raw, foreignCpu: foreignShare(before, cpuSnapshot()) }
      },
    }
    const targets = [loop]
    const unavailable = bearwardUnavailable()
    if (!unavailable) {
      const config = await gatewayConfig({ publicUrl, keyFile, routes: [route('api', '/api', up.url, { token: 'jwt', scopes: { GET: [SCOPE] } })] })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-jwt-cold', port, config }))
      targets.push({
        id: 'bearward',
        label: 'bearward JWT route, cold',
        profileDir: bw.profileDir,
        async measure(round) {
          const count = Math.ceil(Math.max(2000, 2 * lastLoopRate) * (opts.warmupSec + opts.durationSec) * 1.3)
          const file = mintJwtsToFile(ctx.file(`jwt-cold.round${round}.tokens`), { ...claims, count })
          return runLoad(
            {
              url: bw.url + PATH,
              connections: opts.connections,
              warmupSec: opts.warmupSec,
              durationSec: opts.durationSec,
              serverPids: [bw.pid],
              rotate: { file, as: 'bearer', once: true },
            },
            ctx.workDir,
          )
        },
      })
    }
    return {
      targets,
      evaluate(a) {
        const raw = a.jose.rounds.map((r) => r.raw.rps)
        const rawRps = raw.reduce((x, y) => x + y, 0) / raw.length
        const rows = [
          row(a.jose, {
            subject: 'jose.jwtVerify loop, 1 process (baseline)',
            ratio: `node:crypto verify alone: ${Math.round(rawRps).toLocaleString('en-US')}/s`,
          }),
        ]
        if (!a.bearward) return [...rows, notRun('bearward', TARGET, unavailable)]
        rows.push(row(a.bearward, { subject: 'bearward', target: TARGET, ratio: pairedRatio(a.bearward, a.jose, 'jose loop').text }))
        return rows
      },
    }
  },
}
