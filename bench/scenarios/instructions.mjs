// Issue #39's ratios as instructions per request instead of CPU time: each
// measured server runs under valgrind's callgrind (lib/callgrind.mjs), which
// counts the user-space instructions it executes over a fixed number of
// requests. On a shared, noisy VM a CPU-time round moves by ±20 %; a count
// moves by about 2 % whatever else runs, so this scenario resolves a few per
// cent between two routes, or between two builds (`--compare REF`), where the
// `cpu` scenario cannot. What it does not see: time in the kernel (system
// calls count as one instruction each, and both proxies make the same ones,
// docs/performance.md) and how fast the instructions run (cache misses, the
// CPU's speed). So a ratio here is larger than the same ratio in CPU time,
// whose system calls are common to both sides; it is the part of the
// difference that is code.
//
// Targets: the bare undici proxy (GET, and the MCP POST), its twin sending the
// headers every bearward route sends (`--gateway-headers`), and those plus the
// identity headers of a token route (`--identity-headers`), and those with the
// MCP POST's body read and parsed (`--read-json`, the MCP row's floor), and bearward as
// deployed (lib/deployed.mjs: log.level info; the memory store, see below) on its public, JWT,
// opaque, MCP and DPoP routes, and the MCP route's twin without its `mcp`
// section (the same POST, forwarded unread: the MCP inspection's own cost).
// Three more instances on the same values, as in the `cpu` scenario: tracing
// on (10 % sampled, exported to a local OTLP sink), the JWT route alone in its
// config, and the JWT route among a route of every other per-route feature. Each round: a closed loop of CONNECTIONS
// connections, a warm-up that opens and closes connections (below), then
// REQUESTS requests counted.
import { bearwardUnavailable } from '../lib/bearward.mjs'
import { assertValgrind } from '../lib/callgrind.mjs'
import { fileURLToPath } from 'node:url'
import { everyFeature, jwtRouteAlone, PATHS, requestFor, startDeployed, withMcpTwin } from '../lib/deployed.mjs'
import { runOpenLoop } from '../lib/open-loop.mjs'
import { instructionRatio } from '../lib/report.mjs'
import { row } from '../lib/rows.mjs'
import { startProcess } from '../lib/spawn.mjs'

const SINK = fileURLToPath(new URL('../lib/otlp-sink.mjs', import.meta.url))

const REQUESTS = 1000
const CONNECTIONS = 4
/**
 * Warm-up, outside the count: CYCLES of CYCLE_REQUESTS requests, each on fresh
 * connections that close at its end, then WARMUP requests on the counted
 * round's own connections. A warm-up on one set of connections left the code
 * optimised for requests only: the first connections to close (the round's
 * end) deoptimised the request path (`--trace-deopt`: "wrong map" in
 * onStreamRead, Readable.push, the parser's callbacks), and the next round
 * counted TurboFan recompiling it on its background thread (callgrind counts
 * every thread): 150 k rounds read 350-400 k. Connections that open and close
 * during the warm-up, as they do in service, leave code that has seen both.
 */
const FIRST_CYCLES = 5
const CYCLES = 2
const CYCLE_REQUESTS = 1000
const WARMUP = 200

export default {
  title: 'instructions per request under callgrind (issue #39 ratios, counted)',
  target: 'report: instructions/req of each route ÷ the bare proxy',
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { skip: unavailable }
    assertValgrind()
    const up = await ctx.upstream()
    const bare = await ctx.baseline('bare-undici-proxy.mjs', [up.url], 'bare-undici-proxy-counted', { callgrind: true })
    const bareHeaders = await ctx.baseline('bare-undici-proxy.mjs', [up.url, '--gateway-headers'], 'bare-undici-proxy-headers-counted', {
      callgrind: true,
    })
    const bareIdentity = await ctx.baseline('bare-undici-proxy.mjs', [up.url, '--identity-headers'], 'bare-undici-proxy-identity-counted', {
      callgrind: true,
    })
    // The MCP row's floor: those headers, and the POST's body read whole and parsed before it is forwarded.
    const bareJson = await ctx.baseline('bare-undici-proxy.mjs', [up.url, '--identity-headers', '--read-json'], 'bare-undici-proxy-json-counted', {
      callgrind: true,
    })
    // The memory store: under callgrind the event loop turns so slowly that the Redis heartbeat
    // (a PING answered within 750 ms) misses, the store is taken for unreachable and requests get
    // 503 (seen on a loaded VM). Two routes touch the store per request: the opaque one looks its
    // token up on every use (revocation deletes it) and DPoP writes its proof's jti; here they do
    // it in memory, as deployed over Redis (ioredis's command and reply work is not counted).
    const d = await startDeployed(ctx, { name: 'bearward-counted', callgrind: true, memoryStore: true, routes: withMcpTwin })
    const sink = ctx.track(await startProcess({ name: 'otlp-sink-counted', args: [SINK], logDir: ctx.workDir }))
    const same = { shared: d, callgrind: true, memoryStore: true }
    const traced = await startDeployed(ctx, {
      ...same,
      name: 'bearward-counted-tracing-10',
      extra: { telemetry: { traces: { otlp: { endpoint: sink.url }, sample: 0.1 } } },
    })
    const alone = await startDeployed(ctx, { ...same, name: 'bearward-counted-jwt-alone', routes: jwtRouteAlone })
    const mixed = await startDeployed(ctx, { ...same, name: 'bearward-counted-every-feature', routes: everyFeature })
    const counted = (id, label, server, req) => ({
      id,
      label,
      measure: async (round) => {
        const plain = { connections: CONNECTIONS, warmupSec: 0, durationSec: 0, mode: 'max' }
        for (let i = 0; i < (round === 0 ? FIRST_CYCLES : CYCLES); i++) {
          await runOpenLoop({ ...plain, warmupRequests: 0, requests: CYCLE_REQUESTS, ...req() }, ctx.workDir)
        }
        return runOpenLoop({ ...plain, warmupRequests: WARMUP, requests: REQUESTS, ...req(), callgrind: { dir: ctx.workDir, pid: server.pid } }, ctx.workDir)
      },
    })
    const jwt = requestFor(d, 'jwt')
    const mcp = requestFor(d, 'mcp')
    // A fresh proof per request, signed just before its round (their iat must be recent); warm-up included,
    // and a margin: the first round ran out at exactly warm-up + counted (requests in flight when each phase ends).
    const dpop = () => ({ ...jwt, values: { file: d.dpopProofs(REQUESTS + Math.max(WARMUP, CYCLE_REQUESTS) + 10 * CONNECTIONS), as: 'dpop', once: true } })
    const targets = [
      counted('bare', 'bare undici proxy, GET', bare, () => ({ ...jwt, url: bare.url + PATHS.jwt })),
      counted('bareHeaders', 'bare undici proxy + gateway headers, GET', bareHeaders, () => ({ ...jwt, url: bareHeaders.url + PATHS.jwt })),
      counted('bareIdentity', 'bare undici proxy + gateway and identity headers, GET', bareIdentity, () => ({ ...jwt, url: bareIdentity.url + PATHS.jwt })),
      counted('barePost', 'bare undici proxy, the MCP POST', bare, () => ({ ...mcp, url: bare.url + PATHS.mcp })),
      counted('bareJsonPost', 'bare undici proxy + gateway and identity headers, the MCP POST read and parsed', bareJson, () => ({
        ...mcp,
        url: bareJson.url + PATHS.mcp,
      })),
      counted('public', 'bearward public route', d.bw, () => requestFor(d, 'public')),
      counted('jwt', 'bearward JWT route', d.bw, () => jwt),
      counted('opaque', 'bearward opaque route (cached)', d.bw, () => requestFor(d, 'opaque')),
      counted('jwtPost', 'bearward JWT route, the MCP POST (no mcp section)', d.bw, () => requestFor(d, 'post')),
      counted('mcp', 'bearward MCP route, tools/call with per-tool rules', d.bw, () => mcp),
      counted('dpop', 'bearward DPoP route, a fresh proof per request', d.bw, dpop),
      counted('tracing', 'bearward JWT route, tracing on (10 % sampled, exported)', traced.bw, () => requestFor(traced, 'jwt')),
      counted('jwtAlone', 'bearward JWT route, no other route configured', alone.bw, () => requestFor(alone, 'jwt')),
      counted('everyFeature', 'bearward JWT route among every per-route feature', mixed.bw, () => requestFor(mixed, 'jwt')),
    ]
    return {
      targets,
      // A round can read 2-4 × the others (a full GC or a recompilation among its requests): five, read as medians.
      rounds: 5,
      evaluate(a) {
        const kilo = (x) => (x?.instructionsPerReq == null ? '—' : `${(x.instructionsPerReq / 1000).toFixed(1)} k instructions/req`)
        const spread = (x) => {
          const v = (x?.rounds ?? []).map((r) => r.instructionsPerReq).filter((n) => n != null)
          return v.length > 1 ? ` (rounds ${(Math.min(...v) / 1000).toFixed(1)}–${(Math.max(...v) / 1000).toFixed(1)} k)` : ''
        }
        const r = (x, subject, base, of) => row(x, { subject, ratio: `${kilo(x)}${spread(x)}; ${instructionRatio(x, base, of).text}` })
        return [
          row(a.bare, { subject: 'bare undici proxy, GET (baseline)', ratio: `${kilo(a.bare)}${spread(a.bare)}` }),
          r(a.bareHeaders, 'bare proxy + the headers every bearward route sends', a.bare, 'bare'),
          row(a.barePost, { subject: 'bare undici proxy, the MCP POST (baseline)', ratio: `${kilo(a.barePost)}${spread(a.barePost)}` }),
          r(a.public, 'public route ÷ bare proxy (#39: ≤ 1.05 × in CPU)', a.bare, 'bare'),
          r(a.public, "public route ÷ the bare proxy sending the same headers: bearward's own code", a.bareHeaders, 'bare + headers'),
          r(a.bareIdentity, 'bare proxy + those headers + the four identity headers a token route sends', a.bare, 'bare'),
          r(a.jwt, 'JWT route ÷ bare proxy (#39: ≤ 1.10 ×)', a.bare, 'bare'),
          r(a.jwt, 'JWT route ÷ the bare proxy sending the same headers, identity included: its token work', a.bareIdentity, 'bare + identity'),
          r(a.opaque, 'opaque route (cached) ÷ bare proxy (#39: ≤ 1.20 ×)', a.bare, 'bare'),
          r(a.mcp, 'MCP route ÷ bare proxy forwarding the same POST (#39: ≤ 1.3 ×)', a.barePost, 'bare POST'),
          r(a.bareJsonPost, "the MCP row's floor: bare POST + every header a token route sends + the body read and JSON-parsed", a.barePost, 'bare POST'),
          r(a.mcp, "MCP route ÷ that floor: bearward's routing, token work and MCP rules", a.bareJsonPost, 'floor'),
          r(a.jwtPost, 'the same POST through a JWT route without mcp ÷ bare POST', a.barePost, 'bare POST'),
          r(a.mcp, 'MCP route ÷ its twin without mcp: the MCP inspection', a.jwtPost, 'twin'),
          r(a.dpop, 'DPoP route ÷ bare proxy (#39: ≤ 2.5 ×)', a.bare, 'bare'),
          r(a.tracing, 'tracing on (10 %) ÷ the JWT route, tracing off (#39: req/s ≥ 0.95 ×, so ≤ 1.053 × here)', a.jwt, 'JWT route'),
          r(a.everyFeature, 'the JWT route among every feature ÷ alone (#39: ≥ 0.98 × alone, so ≤ 1.020 × here)', a.jwtAlone, 'alone'),
        ]
      },
      extra: { requests: REQUESTS, connections: CONNECTIONS },
    }
  },
}
