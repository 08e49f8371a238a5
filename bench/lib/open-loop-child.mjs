// The open-loop load generator, run in its own process: `node open-loop-child.mjs SPEC.json`.
// Prints one JSON line with the measured phase.
//
// Why: a closed loop (autocannon: N connections, each sends its next request
// when the previous answer arrives) slows down with the server, so a stall
// delays the requests that would have been sent meanwhile instead of making
// them wait, and their wait is never measured (coordinated omission). Here
// requests are sent on a fixed schedule, request i at start + i / rate, over
// a pool of keep-alive connections (undici Pool, no pipelining); a request
// whose connection is still busy waits in the pool's queue, and its latency
// is measured from its *scheduled* send time to the end of its answer. A
// server that falls behind therefore shows as latency, as users would feel it.
//
// SPEC: { url, mode: 'rate' | 'max', rate?, connections, warmupSec, warmupRequests?, durationSec, requests?,
//         method, headers, body, serverPids?, values?: { file, as: 'bearer' | 'dpop', once? },
//         callgrind?: { dir, pid } }
// mode 'max' is a closed loop on every connection (the bare proxy's maximum,
// which sets the rates of an open-loop run); with `requests` its measured phase
// is that many requests instead of `durationSec`. `callgrind`: the server runs
// under callgrind (callgrind.mjs), and its instructions are counted over the
// measured phase only (`instructionsPerReq`, less what it runs when idle). `values` walks a newline-separated
// list (see autocannon-child.mjs): `bearer` sets Authorization: Bearer <v>,
// `dpop` takes `<token> <proof>` lines; `once` reports running out.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Pool } from 'undici'
import { countInstructions } from './callgrind.mjs'

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100)

function cpuUs(pids) {
  let ticks = 0
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(f[11]) + Number(f[12])
  }
  return ticks * TICK_US
}

const url = new URL(spec.url)
const pool = new Pool(url.origin, { connections: spec.connections, pipelining: 1, keepAliveTimeout: 60_000 })
const path = url.pathname + url.search
const method = spec.method ?? 'GET'
const baseHeaders = spec.headers ?? {}
const body = spec.body ?? null

const values = spec.values ? readFileSync(spec.values.file, 'utf8').split('\n').filter(Boolean) : null
let next = 0
let wraps = 0
function headersFor() {
  if (values === null) return baseHeaders
  const v = values[next]
  next += 1
  if (next === values.length) {
    next = 0
    wraps += 1
  }
  if (spec.values.as === 'dpop') {
    const space = v.indexOf(' ')
    return { ...baseHeaders, authorization: `DPoP ${v.slice(0, space)}`, dpop: v.slice(space + 1) }
  }
  return { ...baseHeaders, authorization: `Bearer ${v}` }
}

/** Latencies of 2xx answers (ms), statuses, errors: one phase's record. */
function phase() {
  return { lat: [], statuses: {}, errors: 0, sent: 0, done: 0 }
}

function send(rec, scheduledNs) {
  rec.sent += 1
  return pool
    .request({ method, path, headers: headersFor(), body })
    .then(async (res) => {
      // The answer is complete when its body has been read.
      for await (const _ of res.body) {
        // drain
      }
      const ms = Number(process.hrtime.bigint() - scheduledNs) / 1e6
      rec.statuses[res.statusCode] = (rec.statuses[res.statusCode] ?? 0) + 1
      if (res.statusCode >= 200 && res.statusCode < 300) rec.lat.push(ms)
    })
    .catch(() => {
      rec.errors += 1
    })
    .finally(() => {
      rec.done += 1
    })
}

/** Closed loop on every connection for `sec` seconds, or until `requests` were sent (when given). */
async function closedLoop(rec, sec, requests = null) {
  const until = process.hrtime.bigint() + BigInt(Math.round(sec * 1e9))
  const more = requests === null ? () => process.hrtime.bigint() < until : () => rec.sent < requests
  const worker = async () => {
    while (more()) await send(rec, process.hrtime.bigint())
  }
  await Promise.all(Array.from({ length: spec.connections }, worker))
}

/**
 * Requests at `rate` per second for `sec` seconds, each sent at its scheduled
 * time (a 1 ms timer sends every request whose time has come). Resolves when
 * every answer is in.
 */
function openLoop(rec, rate, sec) {
  return new Promise((resolve) => {
    const start = process.hrtime.bigint()
    const total = Math.round(rate * sec)
    const intervalNs = 1e9 / rate
    let i = 0
    const inflight = []
    const tick = () => {
      const now = process.hrtime.bigint()
      while (i < total) {
        const at = start + BigInt(Math.round(i * intervalNs))
        if (at > now) break
        inflight.push(send(rec, at))
        i += 1
      }
      if (i < total) setTimeout(tick, 1)
      else Promise.all(inflight).then(resolve)
    }
    tick()
  })
}

function summary(lat) {
  const s = Float64Array.from(lat).sort()
  const at = (p) => (s.length === 0 ? null : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))])
  return { count: s.length, p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: s.length ? s[s.length - 1] : null }
}

const run = (rec, sec, requests = null) => (spec.mode === 'max' ? closedLoop(rec, sec, requests) : openLoop(rec, spec.rate, sec))
if (spec.warmupSec > 0) await run(phase(), spec.warmupSec)
// A warm-up counted in requests (a closed loop): under callgrind the rate is too low for seconds to say how much code ran.
if (spec.warmupRequests > 0) await closedLoop(phase(), 0, spec.warmupRequests)
// Reused values (tokens) each go out once before the measured phase, however far the warm-up got: a slow
// warm-up (a busy machine, a profiled server) left first uses, cold signature checks, in the measured phase.
if (values !== null && spec.values.once !== true && wraps === 0) {
  const primer = phase()
  const worker = async () => {
    while (wraps === 0) await send(primer, process.hrtime.bigint())
  }
  await Promise.all(Array.from({ length: spec.connections }, worker))
}
const usedInWarmup = next + wraps * (values?.length ?? 0)
const rec = phase()
const pids = spec.serverPids ?? []
const cpuBefore = cpuUs(pids)
const started = process.hrtime.bigint()
const measured = () => run(rec, spec.durationSec, spec.requests ?? null)
let instructions = null
if (spec.callgrind) instructions = (await countInstructions(spec.callgrind.dir, spec.callgrind.pid, measured)).instructions
else await measured()
const elapsedSec = Number(process.hrtime.bigint() - started) / 1e9
const serverCpuUs = cpuUs(pids) - cpuBefore
// What the server runs on its timers whatever the load (bearward's store heartbeat, four PINGs a
// second; its log flush): under callgrind a request takes 20-100 times longer, so that work is
// charged to 20-100 times fewer requests than in a real run. Counted over an idle window, as a
// rate, and taken off the measured phase's count for its duration.
let idlePerSec = null
if (spec.callgrind) {
  const idleSec = spec.callgrind.idleSec ?? 3
  const { instructions: idle } = await countInstructions(spec.callgrind.dir, spec.callgrind.pid, () => new Promise((r) => setTimeout(r, idleSec * 1000)))
  idlePerSec = idle / idleSec
}
await pool.close()
const non2xx = Object.entries(rec.statuses)
  .filter(([code]) => !code.startsWith('2'))
  .reduce((n, [, c]) => n + c, 0)
process.stdout.write(
  JSON.stringify({
    mode: spec.mode,
    rateTarget: spec.mode === 'rate' ? spec.rate : null,
    total: rec.done,
    elapsedSec,
    // Open loop: what the server kept up with (answers over the time until the last one came).
    rps: rec.done / elapsedSec,
    latency: summary(rec.lat),
    serverCpuUsPerReq: pids.length > 0 && rec.done > 0 ? serverCpuUs / rec.done : null,
    serverCpuCores: pids.length > 0 ? serverCpuUs / 1e6 / elapsedSec : null,
    instructionsPerReq: instructions !== null && rec.done > 0 ? Math.max(0, instructions - idlePerSec * elapsedSec) / rec.done : null,
    instructionsRaw: instructions,
    idleInstructionsPerSec: idlePerSec,
    statuses: rec.statuses,
    non2xx,
    errors: rec.errors,
    timeouts: 0,
    rotation: values ? { values: values.length, used: next + wraps * values.length, usedInWarmup, wraps } : null,
    // CLOCK_MONOTONIC µs, the clock V8 CPU profiles use: `profile.mjs --window` selects this phase.
    window: { startUs: Number(started / 1000n), endUs: Number(started / 1000n) + Math.round(elapsedSec * 1e6) },
  }) + '\n',
)
