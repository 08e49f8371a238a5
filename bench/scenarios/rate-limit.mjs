// What one rate limit costs a route (issue #44), as deployed (Redis store, log
// level info; lib/deployed.mjs): the JWT route, and the same route with one
// rate limit keyed by client (leased from Redis 1 % at a time, so about one
// Lua script call per lease of 10,000 units rather than one per request;
// docs/traffic.md "Leases"), high enough that nothing is refused, measured in the same interleaved
// rounds. Target: CPU per request without ÷ with ≥ 0.90.
import { bearwardUnavailable } from '../lib/bearward.mjs'
import { deployedRoutes, requestFor, startDeployed } from '../lib/deployed.mjs'
import { SCOPE, route } from '../lib/gateway-config.mjs'
import { runOpenLoop } from '../lib/open-loop.mjs'
import { pairedCpuRatio } from '../lib/report.mjs'
import { pairedRatio, row } from '../lib/rows.mjs'

const TARGET = 'CPU/req without ÷ with one rate limit ≥ 0.90'
const LIMITED = '/lim/items'

/** The deployed routes and the JWT route again, with one rate limit nothing reaches (1,000,000 per second per client). */
function withLimitedRoute(upstream) {
  return [
    ...deployedRoutes(upstream),
    route('lim', '/lim', upstream, {
      token: 'jwt',
      scopes: { GET: [SCOPE] },
      rate_limits: [{ name: 'per-client', key: 'client', limit: 1_000_000, per: '1s' }],
    }),
  ]
}

export default {
  title: 'one rate limit on a route, Redis',
  target: TARGET,
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { skip: unavailable }
    const { opts } = ctx
    const d = await startDeployed(ctx, { name: 'bearward-rate-limit', routes: withLimitedRoute })
    const common = { connections: opts.connections, warmupSec: opts.warmupSec, durationSec: opts.durationSec, mode: 'max' }
    const jwt = requestFor(d, 'jwt')
    const target = (id, label, req) => ({ id, label, measure: () => runOpenLoop({ ...common, ...req, serverPids: [d.bw.pid] }, ctx.workDir) })
    return {
      targets: [target('plain', 'bearward JWT route', jwt), target('limited', 'bearward JWT route, one rate limit', { ...jwt, url: d.bw.url + LIMITED })],
      evaluate(a) {
        // CPU per request of the route without over with: ≥ 0.90 means the limit costs at most about 11 %.
        const cpu = pairedCpuRatio(a.plain, a.limited, 'with one rate limit')
        const rate = pairedRatio(a.limited, a.plain, 'without')
        return [
          row(a.plain, { subject: 'bearward JWT route (baseline)' }),
          row(a.limited, {
            subject: 'bearward JWT route with one rate limit (key: client, Redis)',
            target: TARGET,
            ratio: `without ÷ with: ${cpu.text}; ${rate.text}`,
            checks: [{ ok: cpu.value != null && cpu.value >= 0.9, what: TARGET }],
          }),
        ]
      },
    }
  },
}
