// CPU time per request, not only requests per second. On a 2-core machine the
// load generator and the upstream share the cores with the server measured,
// so requests/s ratios mix bearward's cost with theirs; the user + system
// time of each server's own process per request (from /proc) shows what each
// feature costs. Every target is driven the same way (lib/open-loop-child.mjs
// in its closed-loop 'max' mode: every connection sends its next request when
// the answer is in), in interleaved rounds.
//
// bearward as deployed (Redis store, log level info; lib/deployed.mjs),
// against the bare undici proxy with the same request stream (issue #39):
//   public route                      CPU/req ≤ 1.05 × bare
//   JWT route                         CPU/req ≤ 1.1 × bare
//   opaque route, cached              CPU/req ≤ 1.2 × bare
//   MCP route, tools/call, per-tool   CPU/req ≤ 1.3 × bare forwarding the same POST
//   DPoP route, fresh proof           CPU/req ≤ 2.5 × bare
//   JWT route in a config with every other per-route feature (DPoP, step-up,
//     upstream token, gRPC routes)    ≥ 0.98 × the JWT route alone (CPU/req inverted)
//   tracing configured but off        ≥ 0.98 × the JWT route's req/s (OTEL_TRACES_EXPORTER=none)
//   tracing on, 10 % sampled          ≥ 0.95 × the JWT route's req/s (exporting to a local OTLP sink)
// nginx (plain proxy) and HAProxy (jwt_verify) as references, when installed,
// with their CPU per request beside bearward's (jwt-warm checks HAProxy's refusals).
// With BENCH_AB_NODE_FLAGS set (lib/bearward.mjs), a second bearward with those
// node flags: its public and JWT routes' CPU per request ÷ the first's.
import { createPublicKey } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { abNodeFlags, bearwardUnavailable } from '../lib/bearward.mjs'
import { everyFeature, jwtRouteAlone, PATHS, requestFor, startDeployed } from '../lib/deployed.mjs'
import { SCOPE } from '../lib/gateway-config.mjs'
import { findPeer, startHaproxyJwt, startNginx } from '../lib/native-peers.mjs'
import { runOpenLoop } from '../lib/open-loop.mjs'
import { pairedCpuRatio } from '../lib/report.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'
import { startProcess } from '../lib/spawn.mjs'
import { publicJwk } from '../lib/tokens.mjs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const SINK = fileURLToPath(new URL('../lib/otlp-sink.mjs', import.meta.url))
const TARGET =
  'CPU/req: public ≤ 1.05 ×, JWT ≤ 1.1 ×, opaque ≤ 1.2 ×, MCP ≤ 1.3 ×, DPoP ≤ 2.5 × bare; JWT route among every feature ≥ 0.98 × alone; tracing off ≥ 0.98 ×, on (10 %) ≥ 0.95 × the JWT route req/s'
/** DPoP proofs signed per second of load, generously above what the DPoP route serves. */
const PROOFS_PER_SEC = 15_000
const log = (msg) => process.stderr.write(`[cpu] ${msg}\n`)

export default {
  title: 'CPU per request, as deployed',
  target: TARGET,
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { skip: unavailable }
    const { opts } = ctx
    const up = await ctx.upstream()
    const bare = await ctx.baseline('bare-undici-proxy.mjs', [up.url])
    const d = await startDeployed(ctx, { name: 'bearward-cpu' })
    const sink = ctx.track(await startProcess({ name: 'otlp-sink', args: [SINK], logDir: ctx.workDir }))
    // The same routes, values and Redis, with tracing configured but not exporting, and exporting 10 %.
    const off = await startDeployed(ctx, {
      name: 'bearward-cpu-tracing-off',
      shared: d,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_EXPORTER: 'none' },
    })
    const on = await startDeployed(ctx, {
      name: 'bearward-cpu-tracing-10',
      shared: d,
      extra: { telemetry: { traces: { otlp: { endpoint: sink.url }, sample: 0.1 } } },
    })
    // The JWT route with no other route configured, and among a route of every other per-route feature.
    const alone = await startDeployed(ctx, { name: 'bearward-cpu-jwt-alone', shared: d, routes: jwtRouteAlone })
    const mixed = await startDeployed(ctx, { name: 'bearward-cpu-every-feature', shared: d, routes: everyFeature })

    const common = { connections: opts.connections, warmupSec: opts.warmupSec, durationSec: opts.durationSec, mode: 'max' }
    const jwt = requestFor(d, 'jwt')
    // profileDir: with --cpu-prof, the runner prints each target's profile summary command over its measured phases.
    const target = (id, label, req, server) => ({
      id,
      label,
      profileDir: server.profileDir,
      measure: () => runOpenLoop({ ...common, ...req, serverPids: [server.pid] }, ctx.workDir),
    })
    const onBare = { ...jwt, url: bare.url + PATHS.jwt }
    const seconds = opts.warmupSec + opts.durationSec
    const mcp = requestFor(d, 'mcp')
    const targets = [
      target('bare', 'bare undici proxy', onBare, bare),
      target('jwt', 'bearward JWT route', jwt, d.bw),
      target('public', 'bearward public route', requestFor(d, 'public'), d.bw),
      target('opaque', 'bearward opaque route (cached introspection)', requestFor(d, 'opaque'), d.bw),
      target('bareMcp', 'bare undici proxy, the MCP POST', { ...mcp, url: bare.url + PATHS.mcp }, bare),
      target('mcp', 'bearward MCP route', mcp, d.bw),
      target('alone', 'bearward JWT route, no other route configured', requestFor(d, 'jwt', alone.bw.url), alone.bw),
      target('mixed', 'bearward JWT route among every per-route feature', requestFor(d, 'jwt', mixed.bw.url), mixed.bw),
      {
        id: 'dpop',
        label: 'bearward DPoP route',
        measure: () =>
          runOpenLoop(
            { ...common, ...jwt, values: { file: d.dpopProofs(Math.ceil(PROOFS_PER_SEC * seconds)), as: 'dpop', once: true }, serverPids: [d.bw.pid] },
            ctx.workDir,
          ),
      },
      target('tracingOff', 'bearward JWT route, tracing configured but off', requestFor(off, 'jwt', off.bw.url), off.bw),
      {
        ...target('tracingOn', 'bearward JWT route, tracing 10 % sampled', requestFor(on, 'jwt', on.bw.url), on.bw),
        // What reached the sink so far (exports and bytes), kept with each round: spans were really exported.
        async measure() {
          const r = await runOpenLoop({ ...common, ...requestFor(on, 'jwt', on.bw.url), serverPids: [on.bw.pid] }, ctx.workDir)
          const sinkStats = await (await fetch(`${sink.url}/stats`)).json()
          log(`OTLP sink so far: ${sinkStats.exports} exports, ${sinkStats.bytes} bytes (the SDK exports every 5 s or 512 spans)`)
          return { ...r, sinkStats }
        },
      },
    ]
    const ab = abNodeFlags()
    /** The routes the second bearward (BENCH_AB_NODE_FLAGS) is measured on, and each one's row label. */
    const abRoutes =
      ab === null
        ? []
        : [
            { kind: 'public', label: `bearward public route with ${ab.join(' ')}` },
            { kind: 'jwt', label: `bearward JWT route with ${ab.join(' ')}` },
          ]
    if (ab !== null) {
      const b = await startDeployed(ctx, { name: 'bearward-cpu-ab', shared: d, nodeFlags: ab })
      for (const r of abRoutes) targets.push(target(`${r.kind}+ab`, r.label, requestFor(b, r.kind), b.bw))
    }
    const nginxBin = findPeer('nginx')
    if (nginxBin.skip) log(`nginx skipped: ${nginxBin.skip}`)
    else {
      const nginx = await startNginx(ctx, { path: nginxBin.path, upstreamUrl: up.url, name: 'nginx-cpu' })
      targets.push(target('nginx', 'nginx plain proxy', { ...jwt, url: nginx.url + PATHS.jwt }, nginx))
    }
    const haproxyBin = findPeer('haproxy')
    if (haproxyBin.skip) log(`HAProxy skipped: ${haproxyBin.skip}`)
    else {
      const pem = join(ctx.workDir, 'cpu.pub.pem')
      writeFileSync(pem, createPublicKey({ key: publicJwk(d.jwk), format: 'jwk' }).export({ type: 'spki', format: 'pem' }))
      const haproxy = await startHaproxyJwt(ctx, {
        path: haproxyBin.path,
        upstreamUrl: up.url,
        publicKeyPem: pem,
        issuer: d.publicUrl,
        audience: d.publicUrl,
        scope: SCOPE,
        name: 'haproxy-jwt-cpu',
      })
      targets.push(target('haproxy', 'HAProxy jwt_verify', { ...jwt, url: haproxy.url + PATHS.jwt }, haproxy))
    }

    return {
      targets,
      evaluate(a) {
        const cpu = (x, max, what) => {
          const r = pairedCpuRatio(x, a.bare, 'bare')
          return { text: r.text, check: { ok: r.value != null && r.value <= max, what } }
        }
        const jwtCpu = cpu(a.jwt, 1.1, 'CPU/req ≤ 1.1 × bare')
        const publicCpu = cpu(a.public, 1.05, 'CPU/req ≤ 1.05 × bare')
        const opaqueCpu = cpu(a.opaque, 1.2, 'CPU/req ≤ 1.2 × bare')
        const mcpRatio = pairedCpuRatio(a.mcp, a.bareMcp, 'bare, same POST')
        const mcpCpu = { text: mcpRatio.text, check: { ok: mcpRatio.value != null && mcpRatio.value <= 1.3, what: 'CPU/req ≤ 1.3 × bare, same POST' } }
        const dpopCpu = cpu(a.dpop, 2.5, 'CPU/req ≤ 2.5 × bare')
        // CPU per request of the JWT route alone over among every feature: ≥ 0.98 means features elsewhere cost it ≤ 2 %.
        const mixedRatio = pairedCpuRatio(a.alone, a.mixed, 'among every feature')
        const mixedRate = pairedRatio(a.mixed, a.alone, 'alone')
        const offRate = pairedRatio(a.tracingOff, a.jwt, 'the JWT route')
        const onRate = pairedRatio(a.tracingOn, a.jwt, 'the JWT route')
        const rows = [
          row(a.bare, { subject: 'bare undici proxy (baseline)' }),
          row(a.public, { subject: 'bearward public route', target: 'CPU/req ≤ 1.05 × bare', ratio: publicCpu.text, checks: [publicCpu.check] }),
          row(a.jwt, { subject: 'bearward JWT route', target: 'CPU/req ≤ 1.1 × bare', ratio: jwtCpu.text, checks: [jwtCpu.check] }),
          row(a.opaque, {
            subject: 'bearward opaque route, cached introspection',
            target: 'CPU/req ≤ 1.2 × bare',
            ratio: opaqueCpu.text,
            checks: [opaqueCpu.check],
          }),
          row(a.bareMcp, { subject: 'bare undici proxy forwarding the MCP POST (baseline of the MCP row)' }),
          row(a.mcp, {
            subject: 'bearward MCP route, tools/call with per-tool rules',
            target: 'CPU/req ≤ 1.3 × bare, same POST',
            ratio: mcpCpu.text,
            checks: [mcpCpu.check],
          }),
          row(a.dpop, {
            subject: 'bearward DPoP route, fresh proof per request',
            target: 'CPU/req ≤ 2.5 × bare',
            ratio: dpopCpu.text,
            checks: [dpopCpu.check],
          }),
          row(a.alone, { subject: 'bearward JWT route, no other route configured' }),
          row(a.mixed, {
            subject: 'bearward JWT route in a config with MCP, DPoP, step-up, upstream-token and gRPC routes',
            target: '≥ 0.98 × the JWT route alone',
            ratio: `alone ÷ here: ${mixedRatio.text}; ${mixedRate.text}`,
            checks: [{ ok: mixedRatio.value != null && mixedRatio.value >= 0.98, what: 'CPU/req alone ÷ here ≥ 0.98' }],
          }),
          row(a.tracingOff, {
            subject: 'bearward JWT route, tracing configured but off',
            target: '≥ 0.98 × the JWT route',
            ratio: `${offRate.text}; ${pairedCpuRatio(a.tracingOff, a.jwt, 'the JWT route').text}`,
            checks: [{ ok: offRate.value != null && offRate.value >= 0.98, what: '≥ 0.98 × the JWT route' }],
          }),
          row(a.tracingOn, {
            subject: 'bearward JWT route, tracing on, 10 % sampled, exported to a local OTLP sink',
            target: '≥ 0.95 × the JWT route',
            ratio: `${onRate.text}; ${pairedCpuRatio(a.tracingOn, a.jwt, 'the JWT route').text}`,
            checks: [{ ok: onRate.value != null && onRate.value >= 0.95, what: '≥ 0.95 × the JWT route' }],
          }),
        ]
        for (const { kind, label } of abRoutes) {
          const x = a[`${kind}+ab`]
          rows.push(row(x, { subject: label, ratio: `${pairedCpuRatio(x, a[kind], 'without').text}; ${pairedRatio(x, a[kind], 'without').text}` }))
        }
        rows.push(
          a.nginx
            ? row(a.nginx, { subject: 'nginx 1 worker, plain proxy, no check (reference)', ratio: pairedCpuRatio(a.nginx, a.bare, 'bare').text })
            : notRun('nginx proxy (reference)', '', nginxBin.skip),
          a.haproxy
            ? row(a.haproxy, { subject: 'HAProxy 1 thread, jwt_verify (reference)', ratio: pairedCpuRatio(a.haproxy, a.bare, 'bare').text })
            : notRun('HAProxy jwt_verify (reference)', '', haproxyBin.skip),
        )
        return rows
      },
    }
  },
}
