// Latency the way users feel it: an open loop at a fixed rate (lib/open-loop-child.mjs,
// latency from each request's scheduled send time, so a server that falls
// behind is not hidden by a load generator that waits for it), at 50 % and
// 80 % of the bare undici proxy's maximum, measured at the start of this
// scenario with a closed loop on the same connections. Each route of one
// deployed bearward (Redis store, log level info; lib/deployed.mjs):
// public, JWT, opaque, DPoP (a fresh proof per request) and MCP (a small
// tools/call with per-tool rules), against the bare proxy at the same rate in
// the same rounds. Targets: p99 added over the bare proxy ≤ 1 ms at 50 %,
// ≤ 3 ms at 80 %.
//
// A second process of the same bare proxy runs right before the first at each
// rate: what two identical servers differ by at p99 in this run (the noise
// floor). On 2 cores the load generator, the upstream and the server share the
// CPU, and a single stall of the machine (tens of ms) moves a 3 s round's p99
// by as much. Where that floor exceeds a target, the row says it could not be
// judged in this run rather than yes or no.
//
// With BENCH_AB_NODE_FLAGS set (lib/bearward.mjs), a second bearward on the
// same values runs with those node flags, its public, JWT and opaque routes
// measured in the same rounds (`<kind>+ab@<pct>`).
import { abNodeFlags, bearwardUnavailable } from '../lib/bearward.mjs'
import { requestFor, startDeployed } from '../lib/deployed.mjs'
import { runOpenLoop } from '../lib/open-loop.mjs'
import { pairedLatencyAdded } from '../lib/report.mjs'
import { notRun, row } from '../lib/rows.mjs'

const LEVELS = [
  { pct: 50, maxP99AddedMs: 1 },
  { pct: 80, maxP99AddedMs: 3 },
]
const ROUTES = [
  { kind: 'public', label: 'public route' },
  { kind: 'jwt', label: 'JWT route' },
  { kind: 'opaque', label: 'opaque route (Redis)' },
  { kind: 'dpop', label: 'DPoP route, fresh proof per request' },
  { kind: 'mcp', label: 'MCP route, tools/call with per-tool rules' },
]
const TARGET = 'p99 added over bare ≤ 1 ms at 50 %, ≤ 3 ms at 80 % of the bare maximum'
const log = (msg) => process.stderr.write(`[open-loop] ${msg}\n`)
const ms = (v) => (v == null ? '—' : `${v >= 0 ? '+' : ''}${v.toFixed(2)}`)

export default {
  title: 'open loop at a fixed rate (latency added over the bare proxy)',
  target: TARGET,
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { skip: unavailable }
    const { opts } = ctx
    const up = await ctx.upstream()
    const bare = await ctx.baseline('bare-undici-proxy.mjs', [up.url])
    const bareTwin = await ctx.baseline('bare-undici-proxy.mjs', [up.url], 'bare-undici-proxy-twin')
    const d = await startDeployed(ctx, { name: 'bearward-open-loop' })
    const ab = abNodeFlags()
    const b = ab === null ? null : await startDeployed(ctx, { name: 'bearward-open-loop-ab', shared: d, nodeFlags: ab })
    const AB_ROUTES = b === null ? [] : ROUTES.filter((r) => ['public', 'jwt', 'opaque'].includes(r.kind))
    const jwt = requestFor(d, 'jwt')
    const common = { connections: opts.connections, warmupSec: opts.warmupSec, durationSec: opts.durationSec }
    /** The JWT route's request stream, sent to a bare proxy instead. */
    const throughBare = (server) => ({ ...jwt, url: server.url + new URL(jwt.url).pathname })

    // The bare proxy's maximum on this machine now, with the JWT route's request stream.
    const max = await runOpenLoop({ ...common, ...throughBare(bare), mode: 'max', serverPids: [bare.pid] }, ctx.workDir)
    if (max.problems.length > 0) throw new Error(`bare proxy maximum: ${max.problems.join('; ')}`)
    log(`bare undici proxy maximum: ${Math.round(max.rps)} req/s (closed loop, ${opts.connections} connections)`)

    const targets = []
    for (const level of LEVELS) {
      const rate = Math.max(1, Math.round((max.rps * level.pct) / 100))
      const measure = (req, server) => () => runOpenLoop({ ...common, ...req, mode: 'rate', rate, serverPids: [server.pid] }, ctx.workDir)
      targets.push({
        id: `bareTwin@${level.pct}`,
        label: `bare undici proxy, a second process @${level.pct} % (${rate} req/s)`,
        measure: measure(throughBare(bareTwin), bareTwin),
      })
      targets.push({
        id: `bare@${level.pct}`,
        label: `bare undici proxy @${level.pct} % (${rate} req/s)`,
        measure: measure(throughBare(bare), bare),
      })
      for (const r of ROUTES) {
        const id = `${r.kind}@${level.pct}`
        const label = `bearward ${r.label} @${level.pct} % (${rate} req/s)`
        if (r.kind === 'dpop') {
          // Proofs signed just before each measurement (each used once, inside the proof window).
          const count = Math.ceil(rate * (opts.warmupSec + opts.durationSec) * 1.1) + opts.connections
          targets.push({
            id,
            label,
            measure: () =>
              runOpenLoop(
                { ...common, ...jwt, values: { file: d.dpopProofs(count), as: 'dpop', once: true }, mode: 'rate', rate, serverPids: [d.bw.pid] },
                ctx.workDir,
              ),
          })
        } else targets.push({ id, label, measure: measure(requestFor(d, r.kind), d.bw) })
      }
      for (const r of AB_ROUTES) {
        targets.push({
          id: `${r.kind}+ab@${level.pct}`,
          label: `bearward ${r.label} with ${ab.join(' ')} @${level.pct} % (${rate} req/s)`,
          measure: measure(requestFor(b, r.kind), b.bw),
        })
      }
    }
    return {
      // Fourteen targets: fewer rounds than the closed-loop scenarios, still in forward/reverse pairs.
      rounds: opts.quick ? 1 : Math.min(opts.rounds, 4),
      targets,
      extra: { bareMaxRps: max.rps },
      evaluate(a) {
        const rows = []
        for (const level of LEVELS) {
          const base = a[`bare@${level.pct}`]
          rows.push(
            row(base, {
              subject: `bare undici proxy, open loop at ${level.pct} % of its maximum (${Math.round((max.rps * level.pct) / 100)} req/s)`,
              ratio: `p99.9 ${base?.rounds?.[0]?.latency?.p999?.toFixed(2) ?? '—'} ms (round 1)`,
            }),
          )
          const twin = a[`bareTwin@${level.pct}`]
          const floor = pairedLatencyAdded(twin, base, 'p99')
          rows.push(
            row(twin, {
              subject: `the same bare proxy, a second process (noise floor), ${level.pct} %`,
              ratio: `added over the first: p50 ${ms(pairedLatencyAdded(twin, base, 'p50'))} ms, p99 ${ms(floor)} ms`,
            }),
          )
          // Two identical servers differing by more than the target at p99: this run cannot tell a route's tail from the machine's.
          const judgeable = floor == null || Math.abs(floor) <= level.maxP99AddedMs
          const variants = [
            ...ROUTES.map((r) => ({ id: r.kind, label: r.label })),
            ...AB_ROUTES.map((r) => ({ id: `${r.kind}+ab`, label: `${r.label} with ${ab.join(' ')}` })),
          ]
          for (const r of variants) {
            const agg = a[`${r.id}@${level.pct}`]
            if (!agg) {
              rows.push(notRun(`bearward ${r.label} @${level.pct} %`, '', 'no measurement'))
              continue
            }
            const p50 = pairedLatencyAdded(agg, base, 'p50')
            const p99 = pairedLatencyAdded(agg, base, 'p99')
            const p999 = pairedLatencyAdded(agg, base, 'p999')
            rows.push(
              row(agg, {
                subject: `bearward ${r.label}, ${level.pct} %`,
                target: `p99 added ≤ ${level.maxP99AddedMs} ms`,
                ratio: `added over bare: p50 ${ms(p50)} ms, p99 ${ms(p99)} ms, p99.9 ${ms(p999)} ms`,
                checks: judgeable
                  ? [{ ok: p99 != null && p99 <= level.maxP99AddedMs, what: `p99 added ≤ ${level.maxP99AddedMs} ms` }]
                  : [{ ok: false, what: `not judged: two bare proxy processes differ by ${ms(floor)} ms at p99 in this run` }],
              }),
            )
          }
        }
        return rows
      },
    }
  },
}
