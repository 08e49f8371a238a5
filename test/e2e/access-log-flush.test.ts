/**
 * Log lines are buffered (src/log.ts: up to 64 KiB or 100 ms) and written in
 * batches. Whatever was logged must still come out when the process stops:
 * on SIGTERM (bin/bearward drains and exits), and when it dies of an
 * uncaught exception. Only a process killed outright (SIGKILL, an OOM kill)
 * can lose a buffer's worth (docs/performance.md).
 */
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, constants, openSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { childEnv, startBin, tempConfig } from '../helpers/bin.js'
import { eventually } from '../helpers/http.js'
import { startUpstream } from '../helpers/upstream.js'

const config = (upstream: string): string => `
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://gw.test
log: { level: info }
routes:
  - name: docs
    match: { path: /docs }
    upstream: ${upstream}
    public: true
`

/** The access lines among `lines` (raw JSON text). */
function accessLines(lines: readonly string[]): Array<Record<string, unknown>> {
  return lines.flatMap((l) => {
    try {
      const e = JSON.parse(l) as Record<string, unknown>
      return e.msg === 'request' ? [e] : []
    } catch {
      return []
    }
  })
}

/** `n` requests, `concurrency` at a time; the X-Request-Id of each answer. */
async function requests(base: string, n: number, concurrency: number): Promise<string[]> {
  const ids: string[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++
      const res = await fetch(`${base}/docs/${i}`)
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`request ${i}: ${res.status}`)
      ids.push(String(res.headers.get('x-request-id')))
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return ids
}

t.test('every request answered before SIGTERM has its access line in the output', async (t) => {
  const up = await startUpstream('docs')
  const cfg = await tempConfig(config(up.url))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop('SIGKILL')
    await up.close()
    await cfg.cleanup()
  })
  const ids = await requests(bin.url, 200, 8)
  // SIGTERM at once: most of these lines are still in the buffer.
  const closed = new Promise<void>((res) => bin.child.stdout?.once('close', () => res()))
  t.equal(await bin.stop('SIGTERM'), 0, 'bearward exits 0 on SIGTERM')
  await closed
  t.ok(await eventually(() => accessLines(bin.lines).length >= ids.length, 5000), `${ids.length} access lines (saw ${accessLines(bin.lines).length})`)
  const logged = new Set(accessLines(bin.lines).map((e) => e.req_id))
  t.same(
    ids.filter((id) => !logged.has(id)),
    [],
    'no answered request is missing from the log',
  )
  t.ok(
    bin.lines.some((l) => l.includes('"bearward stopped"')),
    'the last line of the shutdown is out too',
  )
})

/**
 * The real App (dist/app.js) in a process of its own: N requests to itself,
 * then a throw nobody catches. With `busyPool`, the middle of the run waits
 * out one batch interval while every libuv thread-pool thread is busy (as
 * scrypt secret checks or DNS lookups keep it), so a batch is written while
 * nothing on the pool can run; an asynchronous write would still be queued
 * there when the process dies, and come out after the lines written at exit.
 *
 * The pool's threads are kept busy by opening a FIFO for reading, which blocks
 * each one until a writer opens it; this test opens it once the process has
 * written its dying words to stderr. (It used to be four pbkdf2 runs of 2M
 * iterations: 6.4 CPU-s, all spent, since a dying Node still waits for its
 * pool's work; blocked opens hold the threads for as long without CPU, and as
 * long as the process lives, however slow the machine.)
 */
async function crashAfterRequests(t: Test, busyPool: boolean): Promise<void> {
  const cfg = await tempConfig(config('http://127.0.0.1:1'))
  t.teardown(() => cfg.cleanup())
  const script = join(cfg.dir, 'crash.mjs')
  const fifo = join(cfg.dir, 'pool.fifo')
  const N = 25
  if (busyPool) {
    const made = spawnSync('mkfifo', [fifo], { encoding: 'utf8' })
    if (made.status !== 0) throw new Error(`mkfifo failed: ${made.error ?? made.stderr}`)
  }
  await writeFile(
    script,
    `
import { open } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { App } from ${JSON.stringify(resolve('dist/app.js'))}
import { LOG_FLUSH_INTERVAL_MS } from ${JSON.stringify(resolve('dist/log.js'))}
const app = await App.start({ configPath: ${JSON.stringify(cfg.file)}, watch: false })
const base = app.addresses().listen
for (let i = 0; i < ${N}; i++) {
  const res = await fetch(base + '/nowhere/' + i)
  await res.arrayBuffer()
  if (res.status !== 404) {
    // Said on stderr first: that is when the test lets a blocked pool go, so the process can exit.
    console.error('status ' + res.status)
    process.exit(3)
  }
  if (${busyPool} && i === 12) {
    const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4)
    for (let k = 0; k < threads; k++) open(${JSON.stringify(fifo)}, 'r', () => undefined)
    await sleep(LOG_FLUSH_INTERVAL_MS * 1.5)
  }
}
// The server wrote each line when its response closed, before the client read it; crash at once.
setImmediate(() => {
  throw new Error('deliberate crash after ${N} requests')
})
`,
  )
  const child = spawn(process.execPath, ['--no-memory-reducer', script], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  let released = !busyPool
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString()
    if (released) return
    released = true
    // The process is dying (or failed): open the FIFO's writing end, which lets every blocked
    // open in its pool return, so the process can finish exiting. Non-blocking: with no
    // reader (it failed before blocking its pool) this fails with ENXIO and nothing waits.
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENXIO') throw err
    }
  })
  const code = await new Promise<number | null>((res) => child.on('close', (c) => res(c)))
  t.equal(code, 1, 'the process died of the exception')
  t.match(stderr, /deliberate crash after 25 requests/)
  const lines = accessLines(stdout.split('\n'))
  t.equal(lines.length, N, `all ${N} access lines are in the output`)
  t.same(
    lines.map((e) => e.path),
    Array.from({ length: N }, (_, i) => `/nowhere/${i}`),
    'in order',
  )
  t.ok(
    lines.every((e) => e.status === 404 && e.route === 'not_found'),
    'each as the request ended',
  )
}

t.test('a process that dies of an uncaught exception loses no line it logged', (t) => crashAfterRequests(t, false))

t.test('nor when the thread pool is busy as it dies: every line, in order', (t) => crashAfterRequests(t, true))
