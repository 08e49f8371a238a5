// The load generator, run in its own process: `node autocannon-child.mjs SPEC.json`.
// Runs autocannon for `warmupSec` (discarded), then for `durationSec` (or
// `amount` requests), and prints one JSON line with the measured phase.
//
// Latency is recorded here from autocannon's per-response timings (float ms):
// autocannon's own histogram keeps whole milliseconds, too coarse for
// "p99 added < 1 ms".
//
// SPEC: { url, connections, warmupSec, durationSec, amount?, overallRate?, method, headers, body, serverPids?,
//         rotate?: { file, as: 'bearer' | 'dpop' | 'body', prefix?, once?, prebuilt? } }
// rotate walks a newline-separated list of values (tokens, codes, refresh
// tokens), one per request across all connections: `bearer` sets
// `Authorization: Bearer <v>`, `dpop` takes `<token> <proof>` lines and sets
// `Authorization: DPoP <token>` and `DPoP: <proof>`, `body` sends `prefix + v`. `once` means each
// value must be used at most once; running out is reported.
//
// Walking costs the load generator a request rebuild per request (autocannon's
// setupRequest), CPU taken from the servers on a shared machine. For reused
// bearer tokens, `prebuilt` instead gives autocannon one ready request per
// token (each connection cycles through all of them, no per-request work),
// after a priming pass that sends every token once, so caches are warm.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'))

// CPU time (user + system) of the servers under test, from /proc: CPU per
// request is a figure other work on the machine hardly disturbs.
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
const serverPids = spec.serverPids ?? []

function walker(rotate) {
  const values = readFileSync(rotate.file, 'utf8').split('\n').filter(Boolean)
  if (values.length === 0) throw new Error(`no values in ${rotate.file}`)
  const state = { used: 0, wraps: 0 }
  let i = 0
  const next = () => {
    const v = values[i]
    i += 1
    state.used += 1
    if (i === values.length) {
      i = 0
      state.wraps += 1
    }
    return v
  }
  let setupRequest
  if (rotate.as === 'bearer') {
    setupRequest = (req) => {
      req.headers.authorization = 'Bearer ' + next()
      return req
    }
  } else if (rotate.as === 'dpop') {
    setupRequest = (req) => {
      const line = next()
      const space = line.indexOf(' ')
      req.headers.authorization = 'DPoP ' + line.slice(0, space)
      req.headers.dpop = line.slice(space + 1)
      return req
    }
  } else {
    const prefix = rotate.prefix ?? ''
    setupRequest = (req) => {
      req.body = prefix + next()
      return req
    }
  }
  return { setupRequest, state, count: values.length }
}

/** Growable float array of 2xx latencies (ms). */
class Samples {
  #a = new Float64Array(1 << 16)
  #n = 0
  push(v) {
    if (this.#n === this.#a.length) {
      const b = new Float64Array(this.#a.length * 2)
      b.set(this.#a)
      this.#a = b
    }
    this.#a[this.#n++] = v
  }
  summary() {
    const s = this.#a.subarray(0, this.#n).sort()
    const at = (p) => (s.length === 0 ? null : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))])
    let sum = 0
    for (const v of s) sum += v
    return {
      count: s.length,
      mean: s.length ? sum / s.length : null,
      p50: at(50),
      p90: at(90),
      p99: at(99),
      p999: at(99.9),
      max: s.length ? s[s.length - 1] : null,
    }
  }
}

function run(opts, samples) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)))
    if (samples) {
      instance.on('response', (_client, statusCode, _bytes, responseTime) => {
        if (statusCode >= 200 && statusCode < 300) samples.push(responseTime)
      })
    }
  })
}

const rotation = spec.rotate ? walker(spec.rotate) : null
const prebuilt = spec.rotate?.prebuilt === true && spec.rotate.as === 'bearer' && !spec.rotate.once
const common = {
  url: spec.url,
  connections: spec.connections,
  pipelining: 1,
  method: spec.method ?? 'GET',
  headers: spec.headers ?? {},
  body: spec.body,
  timeout: spec.timeoutSec ?? 10,
  // A fixed request rate (for comparing CPU per request at equal load); unset = as fast as possible.
  ...(spec.overallRate ? { overallRate: spec.overallRate } : {}),
}
const walking = { ...common, requests: rotation ? [{ setupRequest: rotation.setupRequest }] : undefined }
let base = walking
if (prebuilt) {
  // Priming: every token once, so the measured phase sees a warm cache however slow the machine was.
  await run({ ...walking, amount: Math.max(spec.connections, rotation.count) })
  const values = readFileSync(spec.rotate.file, 'utf8').split('\n').filter(Boolean)
  base = { ...common, requests: values.map((v) => ({ headers: { ...common.headers, authorization: 'Bearer ' + v } })) }
}
// A non-2xx answer is a failed measurement, but keep going: the runner reports it.
if (spec.warmupSec > 0) await run({ ...base, duration: spec.warmupSec })
const warmUsed = rotation ? rotation.state.used : 0

const samples = new Samples()
const cpuBefore = cpuUs(serverPids)
const started = process.hrtime.bigint()
const result = await run(spec.amount ? { ...base, amount: spec.amount } : { ...base, duration: spec.durationSec }, samples)
const elapsedSec = Number(process.hrtime.bigint() - started) / 1e9
const serverCpuUs = cpuUs(serverPids) - cpuBefore

const total = result.requests.total
const statuses = {}
for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = count
process.stdout.write(
  JSON.stringify({
    total,
    elapsedSec,
    rps: total / elapsedSec,
    latency: samples.summary(),
    serverCpuUsPerReq: serverPids.length > 0 && total > 0 ? serverCpuUs / total : null,
    serverCpuCores: serverPids.length > 0 ? serverCpuUs / 1e6 / elapsedSec : null,
    statuses,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    // CLOCK_MONOTONIC µs, the clock V8 CPU profiles use: `profile.mjs --window` selects this phase.
    window: { startUs: Number(started / 1000n), endUs: Number(started / 1000n) + Math.round(elapsedSec * 1e6) },
    rotation: rotation
      ? prebuilt
        ? { values: rotation.count, mode: 'prebuilt', primed: rotation.state.used }
        : { values: rotation.count, mode: 'walk', used: rotation.state.used, usedInWarmup: warmUsed, wraps: rotation.state.wraps }
      : null,
  }) + '\n',
)
