/**
 * Log lines gathered in memory and handed to the stdout writer in batches.
 *
 * pino's destination (sonic-boom) can buffer by itself (`minLength`), but it
 * measures its pending buffer's UTF-8 length on every write, which flattens
 * and scans everything buffered so far: about 2 µs per access line at 8 KiB
 * (docs/performance.md). Here a line costs an array push and a length sum;
 * the batch is joined once and the writer sees one write per batch, so it
 * keeps doing what it does well (the asynchronous write, EAGAIN on a full
 * pipe, the synchronous flush at exit).
 */
import type { DestinationStream } from 'pino'

/** What the batches go to: a sonic-boom stream, or anything with the same calls. */
export interface LineSink {
  write(data: string): unknown
  flush?(cb?: (err?: Error) => void): void
  flushSync?(): void
  readonly destroyed?: boolean
}

/** How full a batch gets and how long its first line may wait. */
export interface BatchLimits {
  /** Characters (about bytes: log lines are ASCII but for escaped user text) that send a batch at once. */
  readonly maxChars: number
  /** The longest a line waits when fewer come. */
  readonly maxWaitMs: number
}

/**
 * Every live batcher, flushed at exit by one listener. Weak, so a logger
 * dropped without close() (a test's App) is neither kept alive nor flushed.
 */
const live = new Set<WeakRef<BatchedLines>>()
const forget = new FinalizationRegistry<WeakRef<BatchedLines>>((ref) => live.delete(ref))
let exitHooked = false

function flushAllAtExit(): void {
  for (const ref of live) {
    try {
      ref.deref()?.flushSync()
    } catch {
      // stdout is gone (a closed pipe): nothing more can be written anywhere.
    }
  }
}

export class BatchedLines implements DestinationStream {
  readonly #sink: LineSink
  readonly #limits: BatchLimits
  #lines: string[] = []
  #chars = 0
  #timer: NodeJS.Timeout | null = null
  readonly #ref = new WeakRef(this)

  constructor(sink: LineSink, limits: BatchLimits) {
    this.#sink = sink
    this.#limits = limits
    // Whatever is batched goes out when the process exits through Node
    // (process.exit, the end of the event loop, an uncaught exception).
    live.add(this.#ref)
    forget.register(this, this.#ref, this.#ref)
    if (!exitHooked) {
      exitHooked = true
      process.on('exit', flushAllAtExit)
    }
  }

  write(line: string): void {
    this.#lines.push(line)
    this.#chars += line.length
    if (this.#chars >= this.#limits.maxChars) this.#send()
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null
        this.#send()
      }, this.#limits.maxWaitMs)
      // A pending batch must not keep a process alive: exit flushes it.
      this.#timer.unref()
    }
  }

  /** The batch so far to the sink, which writes it asynchronously. */
  #send(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer)
      this.#timer = null
    }
    if (this.#lines.length === 0) return
    const batch = this.#lines.join('')
    this.#lines = []
    this.#chars = 0
    if (this.#sink.destroyed === true) return
    this.#sink.write(batch)
  }

  /** pino's `logger.flush(cb)`: everything batched goes to the sink, which flushes it. */
  flush(cb?: (err?: Error) => void): void {
    this.#send()
    if (this.#sink.flush !== undefined) this.#sink.flush(cb)
    else cb?.()
  }

  /** Everything batched is written before this returns (at exit). */
  flushSync(): void {
    this.#send()
    if (this.#sink.destroyed !== true) this.#sink.flushSync?.()
  }

  /** Stop batching: what is pending is sent, and exit no longer flushes this batcher. */
  close(): void {
    this.#send()
    live.delete(this.#ref)
    forget.unregister(this.#ref)
  }
}
