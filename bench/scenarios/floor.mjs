// The floor of bearward's CPU per request (issue #39): what bearward costs
// with nothing but proxying, and what each deployed extra adds to it, in
// server CPU µs per request against the bare undici proxy.
//
// bearward as deployed (lib/deployed.mjs: Redis store, `log.level: info`, no
// tracing configured) and the same routes, values and Redis with the extras
// config can turn off turned off:
//   public route, log.level info      the access line written per request
//   public route, log.level warn      no access line: the floor config allows
//   JWT route, log.level info / warn  the same, with a token checked from the verified-token cache
//   DPoP route at warn: a fresh proof per request (the DPoP floor: an ES256 verify and one store write)
//   JWT route, tracing configured but off (OTEL_TRACES_EXPORTER=none): what configuring it costs
//   JWT route, tracing on, 10 % sampled and exported to a local OTLP sink: what spans cost
// The extras config cannot turn off (X-Request-Id on every answer, the
// X-Forwarded-* headers and a traceparent upstream) are measured by a twin
// of the bare proxy that sends them too (`--gateway-headers`): the public
// route at `warn` over that twin is bearward's own code. Identity headers on
// a token route are split out by a CPU profile of the `warn` instance
// (`--cpu-prof`, bench/profile.mjs; bench/README.md).
//
// Each row says its CPU per request, its ratio to the bare proxy within
// pairs of rounds, and, for a row with one extra more than another, the µs
// that extra adds (the mean within each pair of rounds, median over pairs).
import { bearwardUnavailable } from '../lib/bearward.mjs'
import { PATHS, requestFor, startDeployed } from '../lib/deployed.mjs'
import { median, pairedCpuRatio } from '../lib/report.mjs'
import { row } from '../lib/rows.mjs'
import { startProcess } from '../lib/spawn.mjs'
import { runOpenLoop } from '../lib/open-loop.mjs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const BENCH = fileURLToPath(new URL('..', import.meta.url))
/** DPoP proofs signed per second of load, above what the DPoP route serves (as in the cpu scenario). */
const PROOFS_PER_SEC = 15_000
const SINK = fileURLToPath(new URL('../lib/otlp-sink.mjs', import.meta.url))

/**
 * µs of CPU per request `a` adds over `b`: within each round the difference,
 * over each pair of rounds (both orders once) the mean, the median over pairs.
 */
export function pairedCpuAdded(a, b, of) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const diffs = []
  for (let i = 0; i + 1 < Math.min(ra.length, rb.length); i += 2) {
    const d = [0, 1].map((k) => {
      const x = ra[i + k].serverCpuUsPerReq
      const y = rb[i + k].serverCpuUsPerReq
      return x != null && y != null ? x - y : null
    })
    if (d[0] != null && d[1] != null) diffs.push((d[0] + d[1]) / 2)
  }
  const value = median(diffs)
  if (value === null) return { value: null, text: '—' }
  const range = diffs.length > 1 ? ` (pairs ${Math.min(...diffs).toFixed(1)} to ${Math.max(...diffs).toFixed(1)})` : ''
  return { value, text: `${value >= 0 ? '+' : ''}${value.toFixed(1)} µs over ${of}${range}` }
}

export default {
  title: 'The floor: bearward with its extras turned off one by one',
  target: 'report: CPU/req of each row, ÷ bare, and µs each extra adds',
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { skip: unavailable }
    const { opts } = ctx
    const up = await ctx.upstream()
    // With --cpu-prof the bare proxy is profiled too: its profile is the floor's reference, area by area.
    const bareProfileDir = opts.cpuProf ? join(ctx.workDir, 'cpuprof', 'bare-undici-proxy-floor') : undefined
    const bare = bareProfileDir
      ? {
          ...ctx.track(
            await startProcess({
              name: 'bare-undici-proxy-floor',
              args: ['--cpu-prof', `--cpu-prof-dir=${bareProfileDir}`, join(BENCH, 'baselines', 'bare-undici-proxy.mjs'), up.url],
              logDir: ctx.workDir,
              measured: true,
            }),
          ),
          profileDir: bareProfileDir,
        }
      : await ctx.baseline('bare-undici-proxy.mjs', [up.url])
    // The same proxy sending the headers every bearward route sends whatever its config.
    const bareHeaders = await ctx.baseline('bare-undici-proxy.mjs', [up.url, '--gateway-headers'], 'bare-undici-proxy-gateway-headers')
    const info = await startDeployed(ctx, { name: 'bearward-floor-info' })
    const warn = await startDeployed(ctx, { name: 'bearward-floor-warn', shared: info, logLevel: 'warn' })
    const sink = ctx.track(await startProcess({ name: 'otlp-sink-floor', args: [SINK], logDir: ctx.workDir }))
    const off = await startDeployed(ctx, {
      name: 'bearward-floor-tracing-off',
      shared: info,
      logLevel: 'warn',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_EXPORTER: 'none' },
    })
    // Tracing on as the cpu scenario runs it (10 % sampled, exported to a local OTLP sink), at warn: what sampled spans add.
    const on = await startDeployed(ctx, {
      name: 'bearward-floor-tracing-10',
      shared: info,
      logLevel: 'warn',
      extra: { telemetry: { traces: { otlp: { endpoint: sink.url }, sample: 0.1 } } },
    })
    const common = { connections: opts.connections, warmupSec: opts.warmupSec, durationSec: opts.durationSec, mode: 'max' }
    // profileDir: with --cpu-prof, the runner prints each target's profile summary command over its measured phases.
    const target = (id, label, req, server) => ({
      id,
      label,
      profileDir: server.profileDir,
      measure: () => runOpenLoop({ ...common, ...req, serverPids: [server.pid] }, ctx.workDir),
    })
    const jwt = requestFor(info, 'jwt')
    const targets = [
      target('bare', 'bare undici proxy', { ...jwt, url: bare.url + PATHS.jwt }, bare),
      target('bareHeaders', 'bare undici proxy + gateway headers', { ...jwt, url: bareHeaders.url + PATHS.jwt }, bareHeaders),
      target('publicWarn', 'bearward public route, log.level warn', requestFor(warn, 'public', warn.bw.url), warn.bw),
      target('publicInfo', 'bearward public route, log.level info', requestFor(info, 'public'), info.bw),
      target('jwtWarn', 'bearward JWT route, log.level warn', requestFor(warn, 'jwt', warn.bw.url), warn.bw),
      target('jwtInfo', 'bearward JWT route, log.level info', jwt, info.bw),
      // DPoP at warn: a fresh proof per request (one ES256 verify, one replay-cache write to Redis); the floor's arithmetic in bench/README.md.
      {
        id: 'dpopWarn',
        label: 'bearward DPoP route, log.level warn, a fresh proof per request',
        profileDir: warn.bw.profileDir,
        measure: () =>
          runOpenLoop(
            {
              ...common,
              ...requestFor(warn, 'jwt', warn.bw.url),
              values: { file: info.dpopProofs(Math.ceil(PROOFS_PER_SEC * (opts.warmupSec + opts.durationSec))), as: 'dpop', once: true },
              serverPids: [warn.bw.pid],
            },
            ctx.workDir,
          ),
      },
      target('jwtTracingOff', 'bearward JWT route, log.level warn, tracing configured but off', requestFor(off, 'jwt', off.bw.url), off.bw),
      target('jwtTracingOn', 'bearward JWT route, log.level warn, tracing 10 % sampled', requestFor(on, 'jwt', on.bw.url), on.bw),
    ]
    return {
      targets,
      evaluate(a) {
        const vsBare = (x) => pairedCpuRatio(x, a.bare, 'bare').text
        const r = (x, subject, added) => row(x, { subject, ratio: added ? `${vsBare(x)}; ${added.text}` : vsBare(x) })
        return [
          row(a.bare, { subject: 'bare undici proxy (baseline)' }),
          r(
            a.bareHeaders,
            'bare proxy + the headers every bearward route sends (X-Forwarded-For/-Proto/-Host, traceparent upstream; X-Request-Id back)',
            pairedCpuAdded(a.bareHeaders, a.bare, 'bare'),
          ),
          r(a.publicWarn, 'floor: public route, log.level warn (X-Request-Id and X-Forwarded-* still on)', pairedCpuAdded(a.publicWarn, a.bare, 'bare')),
          row(a.publicWarn, {
            subject: "the same public route against the bare proxy sending the same headers: bearward's own code",
            ratio: `${pairedCpuRatio(a.publicWarn, a.bareHeaders, 'bare + headers').text}; ${pairedCpuAdded(a.publicWarn, a.bareHeaders, 'bare + headers').text}`,
          }),
          row(a.jwtWarn, {
            subject: 'JWT route, log.level warn, against the bare proxy sending the same headers',
            ratio: pairedCpuRatio(a.jwtWarn, a.bareHeaders, 'bare + headers').text,
          }),
          r(a.publicInfo, 'public route, log.level info (+ the access line)', pairedCpuAdded(a.publicInfo, a.publicWarn, 'warn')),
          r(a.jwtWarn, 'JWT route, log.level warn (+ token from the cache, identity headers)', pairedCpuAdded(a.jwtWarn, a.publicWarn, 'public at warn')),
          r(a.jwtInfo, 'JWT route, log.level info (+ the access line)', pairedCpuAdded(a.jwtInfo, a.jwtWarn, 'warn')),
          r(
            a.dpopWarn,
            'DPoP route, log.level warn (+ an ES256 proof verified, its jti written to Redis)',
            pairedCpuAdded(a.dpopWarn, a.jwtWarn, 'JWT at warn'),
          ),
          r(a.jwtTracingOff, 'JWT route, warn, tracing configured but off', pairedCpuAdded(a.jwtTracingOff, a.jwtWarn, 'not configured')),
          r(a.jwtTracingOn, 'JWT route, warn, tracing 10 % sampled, exported', pairedCpuAdded(a.jwtTracingOn, a.jwtWarn, 'not configured')),
        ]
      },
    }
  },
}
