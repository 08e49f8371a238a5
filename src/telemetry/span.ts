/**
 * A recorded span: one small object, its attributes a plain object, its
 * times one `performance.now()` read each. Nothing is serialized when it
 * ends: it is handed to its sink (the exporter's queue) as it is, and turned
 * into OTLP JSON with the rest of its batch at export (otlp-json.ts). The
 * OpenTelemetry SDK's spans cost 44–66 µs per sampled request before any
 * export (docs/performance.md "Tracing on, the arithmetic").
 *
 * @see https://opentelemetry.io/docs/specs/otel/trace/api/#span
 */
import { performance } from 'node:perf_hooks'

/** The span kinds, as OTLP numbers them (`Span.SpanKind`: 0 is unspecified). */
export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind]

export type AttributeValue = string | number | boolean
export type Attributes = Record<string, AttributeValue>

/** Where an ended span goes: the exporter's queue. */
export interface SpanSink {
  add(span: Span): void
}

export class Span {
  /** The name; the server span's is renamed once its route is known. */
  name: string
  readonly kind: SpanKind
  readonly traceId: string
  readonly spanId: string
  /** The parent's span id (a caller's, for a continued trace); null for a trace's root. */
  readonly parentSpanId: string | null
  /** Owned by the span from here on: callers hand it a fresh object. */
  readonly attributes: Attributes
  /** `performance.now()` at start. */
  readonly startedAt: number
  /** `performance.now()` at end; -1 while the span is open. */
  endedAt = -1
  /** Status ERROR (the HTTP conventions' failure); otherwise the status is left unset. */
  failed = false
  readonly #sink: SpanSink

  constructor(sink: SpanSink, name: string, kind: SpanKind, traceId: string, spanId: string, parentSpanId: string | null, attributes: Attributes) {
    this.#sink = sink
    this.name = name
    this.kind = kind
    this.traceId = traceId
    this.spanId = spanId
    this.parentSpanId = parentSpanId
    this.attributes = attributes
    this.startedAt = performance.now()
  }

  /** Set an attribute; an ended span is already queued for export and no longer changes. */
  setAttribute(key: string, value: AttributeValue): void {
    if (this.endedAt < 0) this.attributes[key] = value
  }

  /** Mark the span failed (status ERROR) with `error.type`: a stable code or class name, never a message. */
  fail(errorType: string): void {
    if (this.endedAt >= 0) return
    this.failed = true
    this.attributes['error.type'] = errorType
  }

  /** End the span and queue it for export; a second end is ignored. */
  end(): void {
    if (this.endedAt >= 0) return
    this.endedAt = performance.now()
    this.#sink.add(this)
  }
}
