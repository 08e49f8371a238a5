/**
 * The log batcher (src/log-batch.ts): lines reach the writer in order, in
 * batches of about `maxChars`, none later than `maxWaitMs` after it was
 * written, and everything pending on flush, flushSync and close. The
 * process-exit path with the real binary is test/e2e/access-log-flush.test.ts.
 */
import { once, EventEmitter } from 'node:events'
import t from 'tap'
import { BatchedLines, type LineSink } from '../src/log-batch.js'

/** A sink that records each write, flush and flushSync. */
class Sink extends EventEmitter implements LineSink {
  writes: string[] = []
  flushes = 0
  syncFlushes = 0
  destroyed = false
  write(data: string): boolean {
    this.writes.push(data)
    this.emit('written', data)
    return true
  }
  flush(cb?: (err?: Error) => void): void {
    this.flushes++
    cb?.()
  }
  flushSync(): void {
    this.syncFlushes++
  }
}

const line = (i: number): string => `{"n":${String(i).padStart(4, '0')}}\n`
const LINE = line(0).length

t.test('lines wait until a batch is full, then go out as one write, in order', async (t) => {
  const sink = new Sink()
  const batcher = new BatchedLines(sink, { maxChars: LINE * 10, maxWaitMs: 60_000 })
  t.teardown(() => batcher.close())
  for (let i = 0; i < 9; i++) batcher.write(line(i))
  t.same(sink.writes, [], 'nine lines are below the batch size: nothing written yet')
  batcher.write(line(9))
  t.same(sink.writes, [Array.from({ length: 10 }, (_, i) => line(i)).join('')], 'the tenth fills it: one write of all ten')
  for (let i = 10; i < 25; i++) batcher.write(line(i))
  t.equal(sink.writes.length, 2, 'the next ten make the second write')
  t.equal(sink.writes.join(''), Array.from({ length: 20 }, (_, i) => line(i)).join(''), 'nothing lost, nothing reordered')
  batcher.flushSync()
  t.equal(sink.writes.join(''), Array.from({ length: 25 }, (_, i) => line(i)).join(''), 'flushSync sends the rest')
  t.equal(sink.syncFlushes, 1, 'and asks the writer to finish synchronously')
})

t.test('a line never waits longer than maxWaitMs when few come', async (t) => {
  const sink = new Sink()
  const batcher = new BatchedLines(sink, { maxChars: 1 << 20, maxWaitMs: 20 })
  // The batcher's timer does not hold the process open (exit flushes): this test's wait must.
  const alive = setInterval(() => undefined, 1000)
  t.teardown(() => {
    clearInterval(alive)
    batcher.close()
  })
  const started = performance.now()
  batcher.write(line(1))
  batcher.write(line(2))
  const [written] = (await once(sink, 'written')) as [string]
  t.equal(written, line(1) + line(2), 'both lines, in one write')
  t.ok(performance.now() - started >= 19, 'sent by the timer, not at once')
  batcher.write(line(3))
  const [again] = (await once(sink, 'written')) as [string]
  t.equal(again, line(3), 'the timer is armed again by the next line')
})

t.test('flush sends what is pending and lets the writer call back', async (t) => {
  const sink = new Sink()
  const batcher = new BatchedLines(sink, { maxChars: 1 << 20, maxWaitMs: 60_000 })
  t.teardown(() => batcher.close())
  batcher.write(line(1))
  let called = false
  batcher.flush(() => {
    called = true
  })
  t.same(sink.writes, [line(1)])
  t.equal(sink.flushes, 1)
  t.ok(called, 'the callback ran')
  batcher.flush()
  t.same(sink.writes, [line(1)], 'an empty batch writes nothing')
})

t.test('a writer that was destroyed (stdout closed) is not written to, and nothing throws', async (t) => {
  const sink = new Sink()
  const batcher = new BatchedLines(sink, { maxChars: LINE * 2, maxWaitMs: 60_000 })
  t.teardown(() => batcher.close())
  sink.destroyed = true
  batcher.write(line(1))
  batcher.write(line(2))
  batcher.flushSync()
  t.same(sink.writes, [])
  t.equal(sink.syncFlushes, 0)
})

t.test('close sends what is pending', async (t) => {
  const sink = new Sink()
  const batcher = new BatchedLines(sink, { maxChars: 1 << 20, maxWaitMs: 60_000 })
  batcher.write(line(7))
  batcher.close()
  t.same(sink.writes, [line(7)])
})
