/**
 * Ended spans, batched and POSTed to an OTLP/HTTP traces endpoint as JSON,
 * as the OpenTelemetry SDK's BatchSpanProcessor and OTLP exporter did for
 * bearward: a batch leaves a second after its first span, or at once when
 * 512 are waiting; one export at a time; at most 2048 spans wait, and a span
 * beyond that is dropped and counted, so a slow or absent collector never
 * holds a request up or grows the heap. An export that meets 429, 502, 503,
 * 504 or a network error is retried with backoff (Retry-After when the
 * collector sends one) a few times within its 10 s; then its spans are lost,
 * and counted.
 *
 * @see https://opentelemetry.io/docs/specs/otlp/#otlphttp-throttling
 * @see https://opentelemetry.io/docs/specs/otel/trace/sdk/#batching-processor
 */
import { Agent, request } from 'undici'
import { exportBody, exportPrefix } from './otlp-json.js'
import type { Span, SpanSink } from './span.js'

/** Where and how to export; the numbers default to the SDK's (the delay to bearward's 1 s). */
export interface SpanExportOptions {
  /** The OTLP/HTTP traces URL. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
  readonly version: string
  /** How long the first span of a batch waits for others. */
  readonly delayMs?: number
  readonly maxBatch?: number
  readonly maxQueue?: number
  /** One export's time, its retries included. */
  readonly timeoutMs?: number
  readonly maxRetries?: number
  /** The first retry's wait, growing 1.5 × a retry up to `maxBackoffMs`, ± 20 %. */
  readonly backoffMs?: number
  readonly maxBackoffMs?: number
  /** Told of spans as their fate is known (the `bearward_trace_spans_total` metric). */
  readonly onSpans?: (outcome: keyof SpanExportCounts, spans: number) => void
}

/** What became of the spans handed to the exporter, for tests and the operator. */
export interface SpanExportCounts {
  /** Accepted by the collector. */
  readonly exported: number
  /** Not queued: the queue was full. */
  readonly dropped: number
  /** Queued, but their export failed (refused, or out of retries or time). */
  readonly failed: number
}

const RETRYABLE = new Set([429, 502, 503, 504])

/** What Tracing records into: a queue that exports, and flushes at close. */
export interface SpanExporter extends SpanSink {
  readonly counts: SpanExportCounts
  close(): Promise<void>
}

/** An attempt's outcome: done (accepted, or refused for good), or worth retrying, after the wait the collector asked for if any. */
type Attempt = { readonly done: true; readonly ok: boolean } | { readonly done: false; readonly retryAfterMs: number | null }

export class OtlpSpanExporter implements SpanExporter {
  readonly #url: string
  readonly #headers: Record<string, string>
  readonly #prefix: string
  readonly #delayMs: number
  readonly #maxBatch: number
  readonly #maxQueue: number
  readonly #timeoutMs: number
  readonly #maxRetries: number
  readonly #backoffMs: number
  readonly #maxBackoffMs: number
  readonly #onSpans: (outcome: keyof SpanExportCounts, spans: number) => void
  readonly #agent = new Agent({ connections: 2 })
  #queue: Span[] = []
  #timer: NodeJS.Timeout | null = null
  #exporting: Promise<void> | null = null
  #closing: Promise<void> | null = null
  #exported = 0
  #dropped = 0
  #failed = 0

  constructor(options: SpanExportOptions) {
    this.#url = options.url
    // The configured headers, and the content type whatever they say.
    this.#headers = { ...options.headers, 'content-type': 'application/json' }
    this.#prefix = exportPrefix(options.serviceName, options.version)
    this.#delayMs = options.delayMs ?? 1000
    this.#maxQueue = options.maxQueue ?? 2048
    this.#maxBatch = Math.min(options.maxBatch ?? 512, this.#maxQueue)
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#maxRetries = options.maxRetries ?? 5
    this.#backoffMs = options.backoffMs ?? 1000
    this.#maxBackoffMs = options.maxBackoffMs ?? 5000
    this.#onSpans = options.onSpans ?? (() => undefined)
  }

  get counts(): SpanExportCounts {
    return { exported: this.#exported, dropped: this.#dropped, failed: this.#failed }
  }

  /** Queue an ended span (Span.end); never blocks, never throws. After close() spans are ignored. */
  add(span: Span): void {
    if (this.#closing !== null) return
    if (this.#queue.length >= this.#maxQueue) {
      this.#dropped++
      this.#onSpans('dropped', 1)
      return
    }
    this.#queue.push(span)
    if (this.#exporting !== null) return
    if (this.#queue.length >= this.#maxBatch) this.#exportNext()
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => this.#exportNext(), this.#delayMs)
      // A batch waiting is no reason to keep the process alive; close() flushes it.
      this.#timer.unref()
    }
  }

  /** Export what is queued, batch by batch, then stop: later spans are ignored (at shutdown). */
  close(): Promise<void> {
    this.#closing ??= this.#flush().then(() => this.#agent.close())
    return this.#closing
  }

  async #flush(): Promise<void> {
    this.#clearTimer()
    await this.#exporting
    while (this.#queue.length > 0) await this.#send(this.#take())
  }

  #clearTimer(): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
  }

  /** Up to a batch from the head of the queue. */
  #take(): Span[] {
    if (this.#queue.length <= this.#maxBatch) {
      const all = this.#queue
      this.#queue = []
      return all
    }
    return this.#queue.splice(0, this.#maxBatch)
  }

  /** Start exporting one batch; when it is done, the next one is due at once if full, else after the delay. */
  #exportNext(): void {
    this.#clearTimer()
    if (this.#exporting !== null || this.#queue.length === 0) return
    this.#exporting = this.#send(this.#take()).then(() => {
      this.#exporting = null
      if (this.#closing !== null || this.#queue.length === 0) return
      if (this.#queue.length >= this.#maxBatch) this.#exportNext()
      else {
        this.#timer = setTimeout(() => this.#exportNext(), this.#delayMs)
        this.#timer.unref()
      }
    })
  }

  /** One batch, with its retries, within the export timeout; settles, never rejects. */
  async #send(spans: Span[]): Promise<void> {
    const body = exportBody(this.#prefix, spans)
    const deadline = Date.now() + this.#timeoutMs
    let backoff = this.#backoffMs
    for (let retries = 0; ; retries++) {
      const attempt = await this.#post(body, deadline - Date.now())
      if (attempt.done) return attempt.ok ? this.#count('exported', spans.length) : this.#count('failed', spans.length)
      const wait = attempt.retryAfterMs ?? Math.min(backoff * (0.8 + Math.random() * 0.4), this.#maxBackoffMs)
      backoff *= 1.5
      if (retries >= this.#maxRetries || wait >= deadline - Date.now()) return this.#count('failed', spans.length)
      await new Promise((resolve) => setTimeout(resolve, wait))
    }
  }

  #count(outcome: 'exported' | 'failed', spans: number): void {
    if (outcome === 'exported') this.#exported += spans
    else this.#failed += spans
    this.#onSpans(outcome, spans)
  }

  async #post(body: Buffer, timeoutMs: number): Promise<Attempt> {
    try {
      const res = await request(this.#url, {
        method: 'POST',
        headers: this.#headers,
        body,
        dispatcher: this.#agent,
        signal: AbortSignal.timeout(Math.max(timeoutMs, 1)),
      })
      await res.body.dump()
      if (res.statusCode >= 200 && res.statusCode < 300) return { done: true, ok: true }
      if (!RETRYABLE.has(res.statusCode)) return { done: true, ok: false }
      return { done: false, retryAfterMs: retryAfterMs(res.headers['retry-after']) }
    } catch {
      // A network error or the timeout: retried while time is left (the timeout leaves none).
      return { done: false, retryAfterMs: null }
    }
  }
}

/** Retry-After as seconds or an HTTP date; null when absent or unreadable. */
function retryAfterMs(header: string | string[] | undefined): number | null {
  if (typeof header !== 'string') return null
  if (/^\d+$/.test(header)) return Number(header) * 1000
  const at = Date.parse(header)
  return Number.isNaN(at) ? null : Math.max(at - Date.now(), 0)
}
