// Start and stop the servers of a benchmark, each in its own process.
// stdout/stderr go to files in the run's log directory (no pipe for the
// runner to drain while the load runs); readiness is a JSON line in stdout
// with a `url` (our own programs) or a probe the caller supplies.
import { execFileSync, spawn } from 'node:child_process'
import { openSync, closeSync, readFileSync, readdirSync, existsSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { underCallgrind } from './callgrind.mjs'

/** Every child this runner started and has not stopped yet (killed on exit). */
const live = new Set()
process.on('exit', () => {
  for (const child of live) {
    try {
      process.kill(child.pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
})

/** A TCP port that was free a moment ago (bind 0, read it, close). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

function tail(file, lines = 15) {
  if (!existsSync(file)) return ''
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n')
}

/** The `url` of the first JSON line in `text` that has one. */
export function readyUrlFromStdout(text) {
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue
    try {
      const o = JSON.parse(line)
      if (typeof o.url === 'string') return o.url
    } catch {
      // a partial line: wait for more
    }
  }
  return null
}

/**
 * Every Node server here (upstream, baselines, peers, bearward) runs with the
 * V8 flags bearward's own launchers pass (bin/bearward, npm start, the Docker
 * image), so every target runs on the same runtime settings. Without
 * --no-memory-reducer, V8's memory reducer leaves process.nextTick about ten
 * times slower in any process that sat idle for a few seconds, which in an
 * interleaved run hits whichever target waited longest (docs/performance.md).
 */
export const NODE_SERVER_FLAGS = ['--no-memory-reducer', '--max-semi-space-size=8', '--heap-growing-percent=100']

/**
 * `--pin` (run.mjs): the CPU every measured server (bearward, a baseline, a
 * native peer) is started on, with `taskset`; the runner has moved itself,
 * and so everything else it starts (the upstream, Redis, the load
 * generator), to the other CPUs. null: no pinning.
 */
let serverCpu = null

/** Pin measured servers to `cpu` and this process (and so every other child) to the rest. */
export function pinServersTo(cpu) {
  const cpus = availableParallelism()
  if (cpus < 2) throw new Error('--pin needs at least 2 CPUs: one for the measured server, one for the rest')
  const rest = Array.from({ length: cpus }, (_, i) => i).filter((i) => i !== cpu)
  try {
    execFileSync('taskset', ['-a', '-p', '-c', rest.join(','), String(process.pid)], { stdio: 'ignore' })
  } catch (err) {
    throw new Error(`--pin needs taskset (util-linux): ${err.message}`)
  }
  serverCpu = cpu
}

/**
 * Spawn `command args` with output to `<logDir>/<name>.{out,err}.log` and
 * wait until ready: `probe()` resolves to a URL string, or (default) stdout
 * shows a JSON line with `url`. Rejects with the stderr tail when the process
 * exits first or `timeoutMs` passes. `callgrind`: run it under valgrind's
 * callgrind, counting nothing until asked (callgrind.mjs), its dumps in `logDir`.
 */
export async function startProcess({
  name,
  command = process.execPath,
  args = [],
  env = {},
  logDir,
  probe,
  timeoutMs = 30_000,
  cwd,
  measured = false,
  callgrind = false,
}) {
  if (command === process.execPath) args = [...NODE_SERVER_FLAGS, ...args]
  if (callgrind) {
    // Counted, not timed (callgrind.mjs); it starts 20-100 times slower too.
    ;({ command, args } = underCallgrind(logDir, name, command, args))
    timeoutMs *= 20
  }
  // taskset execs the command: the pid, and so the CPU read from /proc, stay the server's.
  if (measured && serverCpu !== null) {
    args = ['-c', String(serverCpu), command, ...args]
    command = 'taskset'
  }
  const outFile = join(logDir, `${name}.out.log`)
  const errFile = join(logDir, `${name}.err.log`)
  const out = openSync(outFile, 'w')
  const err = openSync(errFile, 'w')
  const child = spawn(command, args, { stdio: ['ignore', out, err], env: { ...process.env, ...env }, cwd })
  closeSync(out)
  closeSync(err)
  live.add(child)
  let exit = null
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      exit = { code, signal }
      live.delete(child)
      resolve(exit)
    }),
  )
  child.on('error', (e) => {
    exit = { code: null, signal: null, error: e.message }
  })

  const deadline = Date.now() + timeoutMs
  let url = null
  while (url === null) {
    if (exit !== null) throw new Error(`${name} exited before ready (${JSON.stringify(exit)}):\n${tail(errFile)}\n${tail(outFile)}`)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${name} not ready after ${timeoutMs} ms:\n${tail(errFile)}\n${tail(outFile)}`)
    }
    url = probe ? await probe().catch(() => null) : readyUrlFromStdout(readFileSync(outFile, 'utf8'))
    if (url === null) await sleep(50)
  }

  return {
    name,
    pid: child.pid,
    url,
    outFile,
    errFile,
    exited,
    /** Resident set size in bytes, from /proc (Linux). */
    rss() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
      return m ? Number(m[1]) * 1024 : null
    },
    /** SIGTERM (or `signal`), then SIGKILL after `graceMs`. Resolves with how it exited. */
    async stop({ signal = 'SIGTERM', graceMs = 10_000 } = {}) {
      if (exit !== null) return exit
      const t0 = Date.now()
      child.kill(signal)
      let killed = false
      const timer = setTimeout(() => {
        killed = true
        child.kill('SIGKILL')
      }, graceMs)
      const result = await exited
      clearTimeout(timer)
      return { ...result, killed, ms: Date.now() - t0 }
    },
  }
}

/** The pids of `pid`'s children (Linux /proc), e.g. a cluster primary's workers. */
export function childPids(pid) {
  const out = []
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const list = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim()
      if (list) out.push(...list.split(/\s+/).map(Number))
    }
  } catch {
    // gone, or not Linux
  }
  return out
}

/** Resolves `url` when an HTTP GET to it answers with `status`; null otherwise. */
export async function httpProbe(url, status = 200) {
  const res = await fetch(url, { signal: AbortSignal.timeout(1000) })
  await res.arrayBuffer()
  return res.status === status ? url : null
}

/** Resolves true when a RESP `PING` on host:port answers `+PONG`. */
export function redisPing(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const sock = connect(port, host)
    let buf = ''
    const done = (ok) => {
      sock.destroy()
      resolve(ok)
    }
    sock.setTimeout(1000, () => done(false))
    sock.on('error', () => done(false))
    sock.on('connect', () => sock.write('PING\r\n'))
    sock.on('data', (d) => {
      buf += d
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'))
    })
  })
}
