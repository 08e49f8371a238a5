/**
 * Log lines gathered in memory and written to a file descriptor in batches,
 * synchronously, on the event loop's thread.
 *
 * Why synchronous: an asynchronous write runs on libuv's thread pool, and
 * a process that exits (an uncaught exception, `process.exit`) while one is
 * queued there writes what it still holds before that batch, or, when the
 * pool is busy (scrypt, DNS), after it: lines out of order
 * (test/e2e/access-log-flush.test.ts). A batch written here is written when
 * this returns, so the `exit` flush only has what is still batched. A 4 KiB
 * write to a pipe costs about 2 µs (0.1 µs a line;
 * docs/performance.md), less than the thread-pool round trip it replaces.
 *
 * Why at most PIPE_BUF bytes a write, cut at line ends: workers share the
 * primary's stdout, and POSIX makes a pipe write atomic only up to PIPE_BUF
 * (4096 on Linux). A larger write that meets a full pipe is written in parts,
 * and another process's write can land between them, in the middle of a line.
 * Only a single line longer than that goes out as its own, larger write.
 *
 * A descriptor someone made non-blocking answers EAGAIN when its reader falls
 * behind: the rest waits in a backlog (bounded; beyond it whole batches are
 * dropped, counted, and the count is written when the reader catches up) and
 * is retried on a timer. A blocking descriptor (the usual stdout) blocks the
 * write instead, as nginx's access log and pino's default destination do.
 */
import { writeSync as fsWriteSync } from 'node:fs'
import type { DestinationStream } from 'pino'

/** Bytes a pipe write may hold and stay atomic (POSIX PIPE_BUF; Linux's value). */
export const PIPE_BUF = 4096

/** `fs.writeSync(fd, data, offset, length)` for one descriptor: how many bytes it took; throws as fs does. */
export type WriteBytes = (data: Buffer, offset: number, length: number) => number

/** How full a batch gets, how long its first line may wait, and what a stalled reader may cost. */
export interface BatchOptions {
  /** Characters (about bytes: log lines are ASCII but for user text) that send a batch at once. */
  readonly maxChars: number
  /** The longest a line waits when fewer come. */
  readonly maxWaitMs: number
  /** Bytes a full non-blocking descriptor may leave waiting before whole batches are dropped. */
  readonly maxBacklogBytes: number
  /** How often a backlog is retried. */
  readonly retryMs: number
  /** The line that reports `count` dropped lines once the backlog has drained. */
  readonly droppedLine: (count: number) => string
}

/** How long the exit flush keeps retrying a full non-blocking descriptor before it gives up. */
const EXIT_PATIENCE_MS = 2000
const EXIT_RETRY_MS = 5

/** A write that failed and cannot succeed later (the reader is gone, the descriptor closed). */
function isFatal(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code
  return code !== 'EAGAIN' && code !== 'EWOULDBLOCK' && code !== 'EINTR'
}

/** The end of the next write from `from`: at most PIPE_BUF bytes, at a line end when one is in reach. */
function chunkEnd(bytes: Buffer, from: number): number {
  if (bytes.length - from <= PIPE_BUF) return bytes.length
  const lastNewline = bytes.lastIndexOf(0x0a, from + PIPE_BUF - 1)
  if (lastNewline >= from) return lastNewline + 1
  // One line longer than PIPE_BUF: it cannot be atomic; it goes out whole, alone.
  const lineEnd = bytes.indexOf(0x0a, from)
  return lineEnd === -1 ? bytes.length : lineEnd + 1
}

function countLines(bytes: Buffer): number {
  let n = 0
  for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, i + 1)) n++
  return n
}

/** Blocks the thread for `ms` (only at exit, where nothing else may run). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/**
 * Every live batcher, flushed at exit by one listener. Weak, so a logger
 * dropped without close() (a test's App) is neither kept alive nor flushed.
 */
const live = new Set<WeakRef<BatchedLines>>()
const forget = new FinalizationRegistry<WeakRef<BatchedLines>>((ref) => live.delete(ref))
let exitHooked = false

function flushAllAtExit(): void {
  for (const ref of live) ref.deref()?.flushSync()
}

export class BatchedLines implements DestinationStream {
  readonly #write: WriteBytes
  readonly #options: BatchOptions
  #lines: string[] = []
  #chars = 0
  #timer: NodeJS.Timeout | null = null
  /** What the descriptor has not taken yet, oldest first; the first may be partly written (up to #backlogOffset). */
  #backlog: Buffer[] = []
  #backlogOffset = 0
  /** The backlog's size in bytes, what is already written of its first buffer included. */
  #backlogBytes = 0
  #retry: NodeJS.Timeout | null = null
  #dropped = 0
  /** The descriptor failed for good (EPIPE, EBADF): nothing more is written. */
  #broken = false
  #whenDrained: Array<() => void> = []
  readonly #ref = new WeakRef(this)

  constructor(write: WriteBytes, options: BatchOptions) {
    this.#write = write
    this.#options = options
    // Whatever is batched goes out when the process exits through Node
    // (process.exit, the end of the event loop, an uncaught exception).
    live.add(this.#ref)
    forget.register(this, this.#ref, this.#ref)
    if (!exitHooked) {
      exitHooked = true
      process.on('exit', flushAllAtExit)
    }
  }

  /** A batcher writing to descriptor `fd` (1: stdout). */
  static toFd(fd: number, options: BatchOptions): BatchedLines {
    return new BatchedLines((data, offset, length) => fsWriteSync(fd, data, offset, length), options)
  }

  write(line: string): void {
    this.#lines.push(line)
    this.#chars += line.length
    if (this.#chars >= this.#options.maxChars) this.#send()
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null
        this.#send()
      }, this.#options.maxWaitMs)
      // A pending batch must not keep a process alive: exit flushes it.
      this.#timer.unref()
    }
  }

  /** The batch so far to the descriptor, behind whatever backlog waits. */
  #send(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer)
      this.#timer = null
    }
    if (this.#lines.length === 0) return
    const bytes = Buffer.from(this.#lines.join(''), 'utf8')
    this.#lines = []
    this.#chars = 0
    if (this.#broken) return
    this.#enqueue(bytes)
    if (!this.#drain()) this.#armRetry()
  }

  /** Writes `bytes` from `offset` until done or the descriptor is full; where it stopped. */
  #writeFrom(bytes: Buffer, offset: number): number {
    let at = offset
    while (at < bytes.length && !this.#broken) {
      try {
        at += this.#write(bytes, at, chunkEnd(bytes, at) - at)
      } catch (err) {
        if (!isFatal(err)) return at
        this.#broken = true
        this.#backlog = []
        this.#backlogBytes = 0
      }
    }
    return bytes.length
  }

  /** Behind whatever waits; dropped (and counted) past the bound, unless nothing waits at all. */
  #enqueue(bytes: Buffer): void {
    if (this.#backlog.length > 0 && this.#backlogBytes + bytes.length > this.#options.maxBacklogBytes) {
      this.#dropped += countLines(bytes)
      return
    }
    this.#backlog.push(bytes)
    this.#backlogBytes += bytes.length
  }

  #armRetry(): void {
    if (this.#retry !== null) return
    this.#retry = setTimeout(() => {
      this.#retry = null
      if (!this.#drain()) this.#armRetry()
    }, this.#options.retryMs)
    this.#retry.unref()
  }

  /** Writes the backlog, then the dropped-lines note; true once nothing waits. */
  #drain(): boolean {
    while (!this.#broken) {
      const head = this.#backlog[0]
      if (head === undefined) {
        if (this.#dropped === 0) break
        // Everything kept is out: say what was not, as the last line of the backlog.
        const note = Buffer.from(this.#options.droppedLine(this.#dropped), 'utf8')
        this.#backlog.push(note)
        this.#backlogBytes += note.length
        this.#dropped = 0
        continue
      }
      const written = this.#writeFrom(head, this.#backlogOffset)
      if (this.#broken) break
      if (written < head.length) {
        this.#backlogOffset = written
        return false
      }
      this.#backlog.shift()
      this.#backlogBytes -= head.length
      this.#backlogOffset = 0
    }
    for (const done of this.#whenDrained.splice(0)) done()
    return true
  }

  /** Lines dropped because the backlog was full and not yet reported (for tests and metrics). */
  get dropped(): number {
    return this.#dropped
  }

  /** pino's `logger.flush(cb)`: everything batched is written; `cb` once a full descriptor has taken it too. */
  flush(cb?: (err?: Error) => void): void {
    this.#send()
    if (cb !== undefined) this.#whenDrained.push(cb)
    if (!this.#drain()) this.#armRetry()
  }

  /** Everything batched is written before this returns, waiting out a full descriptor for a while (at exit). */
  flushSync(): void {
    this.#send()
    const deadline = performance.now() + EXIT_PATIENCE_MS
    while (!this.#drain() && performance.now() < deadline) sleepSync(EXIT_RETRY_MS)
  }

  /**
   * Stop batching: what is pending is written, and once a full descriptor has
   * taken it all, exit no longer flushes this batcher (until then it does).
   */
  close(): void {
    this.flush(() => {
      live.delete(this.#ref)
      forget.unregister(this.#ref)
    })
  }
}
