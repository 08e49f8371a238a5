/**
 * The log batcher (src/log-batch.ts): lines reach the descriptor in order, in
 * batches of about `maxChars`, none later than `maxWaitMs` after it was
 * written; each write at most PIPE_BUF bytes and cut at a line end; a full
 * non-blocking descriptor loses nothing until the backlog bound, and then
 * says how much it dropped; a dead one throws nothing. The process-exit path
 * with the real App is test/e2e/access-log-flush.test.ts; two processes on
 * one pipe are at the end of this file.
 */
import { spawn } from 'node:child_process'
import { EventEmitter, once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { type BatchOptions, BatchedLines, PIPE_BUF } from '../src/log-batch.js'

/** Errors as fs.writeSync throws them. */
function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: write`), { code })
}

/**
 * A descriptor: records what each write took (as text), and can be made
 * full (EAGAIN), short (takes fewer bytes than asked) or dead (EPIPE).
 */
class Descriptor extends EventEmitter {
  writes: string[] = []
  full = false
  dead = false
  /** Bytes the next write takes at most, once. */
  shortBy: number | null = null
  calls = 0
  readonly write = (data: Buffer, offset: number, length: number): number => {
    this.calls++
    this.emit('called')
    if (this.dead) throw errno('EPIPE')
    if (this.full) throw errno('EAGAIN')
    const took = this.shortBy === null ? length : Math.min(length, this.shortBy)
    this.shortBy = null
    const text = data.subarray(offset, offset + took).toString('utf8')
    this.writes.push(text)
    this.emit('written', text)
    return took
  }
  get text(): string {
    return this.writes.join('')
  }
}

const line = (i: number): string => `{"n":${String(i).padStart(4, '0')}}\n`
const LINE = line(0).length
const lines = (from: number, to: number): string => Array.from({ length: to - from }, (_, i) => line(from + i)).join('')

/**
 * The batcher's timers do not hold the process open (exit flushes): a test
 * that waits for one must. Closes the batcher at the end.
 */
function keepAlive(t: Test, batcher: BatchedLines): void {
  const alive = setInterval(() => undefined, 1000)
  t.teardown(() => {
    clearInterval(alive)
    batcher.close()
  })
}

function options(overrides: Partial<BatchOptions>): BatchOptions {
  return {
    maxChars: 1 << 20,
    maxWaitMs: 60_000,
    maxBacklogBytes: 1 << 20,
    retryMs: 5,
    droppedLine: (n) => `{"dropped":${n}}\n`,
    ...overrides,
  }
}

t.test('lines wait until a batch is full, then go out as one write, in order', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({ maxChars: LINE * 10 }))
  t.teardown(() => batcher.close())
  for (let i = 0; i < 9; i++) batcher.write(line(i))
  t.same(fd.writes, [], 'nine lines are below the batch size: nothing written yet')
  batcher.write(line(9))
  t.same(fd.writes, [lines(0, 10)], 'the tenth fills it: one write of all ten')
  for (let i = 10; i < 25; i++) batcher.write(line(i))
  t.equal(fd.writes.length, 2, 'the next ten make the second write')
  t.equal(fd.text, lines(0, 20), 'nothing lost, nothing reordered')
  batcher.flushSync()
  t.equal(fd.text, lines(0, 25), 'flushSync writes the rest')
})

t.test('a line never waits longer than maxWaitMs when few come', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({ maxWaitMs: 20 }))
  keepAlive(t, batcher)
  const started = performance.now()
  batcher.write(line(1))
  batcher.write(line(2))
  const [written] = (await once(fd, 'written')) as [string]
  t.equal(written, line(1) + line(2), 'both lines, in one write')
  t.ok(performance.now() - started >= 19, 'sent by the timer, not at once')
  batcher.write(line(3))
  const [again] = (await once(fd, 'written')) as [string]
  t.equal(again, line(3), 'the timer is armed again by the next line')
})

t.test('no write is longer than PIPE_BUF bytes, and each ends at a line end', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({}))
  t.teardown(() => batcher.close())
  // Lines of 1, 2 and 3 UTF-8 bytes a character: characters undercount bytes.
  const text = Array.from({ length: 300 }, (_, i) => `{"i":${i},"s":"${['a', 'é', '€'][i % 3]?.repeat(20 + (i % 37))}"}\n`)
  for (const l of text) batcher.write(l)
  batcher.flush()
  t.equal(fd.text, text.join(''), 'everything, in order')
  t.ok(fd.writes.length > 1, `${fd.writes.length} writes`)
  t.same(
    fd.writes.filter((w) => Buffer.byteLength(w) > PIPE_BUF || !w.endsWith('\n')),
    [],
    'each write at most PIPE_BUF bytes, whole lines',
  )
})

t.test('a line longer than PIPE_BUF goes out whole and alone', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({}))
  t.teardown(() => batcher.close())
  const long = `{"long":"${'x'.repeat(PIPE_BUF * 2)}"}\n`
  batcher.write(line(1))
  batcher.write(long)
  batcher.write(line(2))
  batcher.flush()
  t.same(fd.writes, [line(1), long, line(2)])
})

t.test('a short write: the rest goes out next, nothing lost', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({}))
  t.teardown(() => batcher.close())
  fd.shortBy = 5
  batcher.write(line(1))
  batcher.write(line(2))
  batcher.flush()
  t.same(fd.writes, [line(1).slice(0, 5), line(1).slice(5) + line(2)])
})

t.test('a full non-blocking descriptor: lines wait in the backlog, in order, and flush calls back once it took them', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({ maxChars: LINE * 4, retryMs: 5 }))
  keepAlive(t, batcher)
  fd.full = true
  for (let i = 0; i < 20; i++) batcher.write(line(i))
  let flushed = false
  batcher.flush(() => {
    flushed = true
  })
  t.same(fd.writes, [], 'nothing taken while full')
  t.notOk(flushed, 'flush has not called back')
  // The retry timer keeps trying; make room once it has tried again.
  await once(fd, 'called')
  t.notOk(flushed, 'still full after a retry: no callback')
  fd.full = false
  await once(fd, 'written')
  await new Promise<void>((res) => setImmediate(res))
  t.equal(fd.text, lines(0, 20), 'every line, in order, once')
  t.ok(flushed, 'flush called back once the descriptor took everything')
  t.equal(batcher.dropped, 0)
})

t.test('past the backlog bound whole batches are dropped, then counted in one line when the reader is back', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({ maxChars: LINE * 2, maxBacklogBytes: LINE * 6, retryMs: 5 }))
  keepAlive(t, batcher)
  fd.full = true
  for (let i = 0; i < 20; i++) batcher.write(line(i))
  t.equal(batcher.dropped, 14, 'three batches of two kept (the bound), seven dropped')
  fd.full = false
  const done = new Promise<void>((res) => batcher.flush(() => res()))
  await done
  t.equal(fd.text, lines(0, 6) + '{"dropped":14}\n', 'the kept lines, then the count of what was dropped')
  t.equal(batcher.dropped, 0, 'reported once')
  batcher.write(line(99))
  batcher.flush()
  t.equal(fd.writes.at(-1), line(99), 'and lines flow again')
})

t.test('flushSync (at exit) waits out a full descriptor for a while', async (t) => {
  const fd = new Descriptor()
  let refusals = 3
  const write = fd.write
  const flaky = new BatchedLines((data, offset, length) => {
    if (refusals-- > 0) throw errno('EAGAIN')
    return write(data, offset, length)
  }, options({}))
  t.teardown(() => flaky.close())
  flaky.write(line(1))
  flaky.write(line(2))
  flaky.flushSync()
  t.equal(fd.text, line(1) + line(2), 'written before flushSync returned, after three refusals')
})

t.test('a dead descriptor (EPIPE) throws nothing, takes nothing more, and flush still calls back', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({ maxChars: LINE * 2 }))
  t.teardown(() => batcher.close())
  fd.dead = true
  batcher.write(line(1))
  batcher.write(line(2))
  const callsWhenDead = fd.calls
  t.equal(callsWhenDead, 1, 'one attempt')
  batcher.write(line(3))
  batcher.write(line(4))
  let called = false
  batcher.flush(() => {
    called = true
  })
  batcher.flushSync()
  t.equal(fd.calls, callsWhenDead, 'no write after the descriptor died')
  t.ok(called, 'flush called back')
})

t.test('close writes what is pending', async (t) => {
  const fd = new Descriptor()
  const batcher = new BatchedLines(fd.write, options({}))
  batcher.write(line(7))
  batcher.close()
  t.same(fd.writes, [line(7)])
})

/**
 * Workers share the primary's stdout. Two processes write big batches of
 * long lines into one pipe whose reader (this test) is slower than they are,
 * so the pipe is full most of the time. A write longer than PIPE_BUF into a
 * full pipe goes in parts, and the other writer's data can land between them:
 * a torn line (one 256 KiB write per batch tore 1 to 3 lines a run). Every
 * line read must be whole, and each writer's, all of them in order: the
 * backlog a full non-blocking pipe left is written at exit, after close().
 */
t.test('two processes batching into one pipe: no line torn, none lost', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bearward-log-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const writer = join(dir, 'writer.mjs')
  const LINES = 4000
  await writeFile(
    writer,
    `
import { BatchedLines } from ${JSON.stringify(resolve('dist/log-batch.js'))}
const who = process.argv[2]
const log = BatchedLines.toFd(1, { maxChars: 256 * 1024, maxWaitMs: 100, maxBacklogBytes: 1 << 24, retryMs: 5, droppedLine: (n) => '{"dropped":' + n + '}\\n' })
const pad = who.repeat(600)
for (let i = 0; i < ${LINES}; i++) log.write(JSON.stringify({ who, i, pad }) + '\\n')
log.close()
`,
  )
  const primary = join(dir, 'primary.mjs')
  await writeFile(
    primary,
    `
import { spawn } from 'node:child_process'
// Node makes a stdout pipe it opens as a stream non-blocking, for every process sharing it
// (npm does this to \`npm start\`'s bearward): the writers meet EAGAIN and partial writes.
if (!process.stdout.writable) process.exit(2)
const run = (who) => new Promise((res) => spawn(process.execPath, [${JSON.stringify(writer)}, who], { stdio: ['ignore', 'inherit', 'inherit'] }).on('close', res))
await Promise.all([run('a'), run('b')])
`,
  )
  const child = spawn(process.execPath, [primary], { stdio: ['ignore', 'pipe', 'inherit'] })
  const chunks: Buffer[] = []
  // A slow reader: take a chunk, then yield to the timers phase before the next.
  child.stdout.on('data', (chunk: Buffer) => {
    chunks.push(chunk)
    child.stdout.pause()
    setTimeout(() => child.stdout.resume(), 1)
  })
  const [code] = (await once(child, 'close')) as [number]
  t.equal(code, 0)
  const read = Buffer.concat(chunks).toString('utf8').split('\n')
  t.equal(read.pop(), '', 'the output ends with a line end')
  const torn: string[] = []
  const seen: Record<string, number[]> = { a: [], b: [] }
  for (const l of read) {
    try {
      const e = JSON.parse(l) as { who: string; i: number; pad: string }
      if (e.pad !== e.who.repeat(600)) torn.push(l.slice(0, 80))
      else seen[e.who]?.push(e.i)
    } catch {
      torn.push(l.slice(0, 80))
    }
  }
  t.same(torn.slice(0, 3), [], `no torn line (${torn.length} of ${read.length})`)
  const inOrder = Array.from({ length: LINES }, (_, i) => i)
  t.same(seen.a, inOrder, 'every line of the first writer, in order')
  t.same(seen.b, inOrder, 'every line of the second writer, in order')
})
