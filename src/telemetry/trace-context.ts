/**
 * W3C Trace Context: the `traceparent` a request arrives with, and the one
 * bearward sends upstream. A request that brings a valid `traceparent`
 * continues its trace; any other (none, a malformed one, an all-zero id)
 * starts a new one. The upstream always receives a `traceparent` naming
 * bearward's own span as its parent, whether or not spans are exported, so a
 * trace is never broken at the gateway.
 *
 * @see https://www.w3.org/TR/trace-context/#traceparent-header
 */
import { randomFillSync } from 'node:crypto'

/** Version 00: `00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>`, lower-case hex only. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)
/** `tracestate` is passed on only when it is plain list text of a sane size (W3C: at most 32 members of 256 characters). */
const TRACESTATE = /^[\x20-\x7e]{1,8192}$/

/** The trace a request belongs to, and bearward's span in it. */
export interface TraceParent {
  readonly traceId: string
  /** The caller's span (the parent of ours), or null when the trace starts here. */
  readonly parentSpanId: string | null
  /** bearward's span for this request: the parent the upstream is told of. */
  readonly spanId: string
  /** The trace flags: bit 0 is "sampled". */
  readonly flags: number
}

/**
 * Random ids from a pooled buffer: one CSPRNG call per 256 ids instead of
 * one per request. W3C asks for random trace ids (a counter would collide
 * across processes and leak request counts).
 */
export class TraceIds {
  readonly #pool = Buffer.allocUnsafe(24 * 256)
  #offset = this.#pool.length

  #bytes(n: number): string {
    if (this.#offset + n > this.#pool.length) {
      randomFillSync(this.#pool)
      this.#offset = 0
    }
    const hex = this.#pool.toString('hex', this.#offset, this.#offset + n)
    this.#offset += n
    return hex
  }

  traceId(): string {
    const id = this.#bytes(16)
    return id === ZERO_TRACE ? this.traceId() : id
  }

  spanId(): string {
    const id = this.#bytes(8)
    return id === ZERO_SPAN ? this.spanId() : id
  }
}

/**
 * The trace of a request with header `traceparent` (a repeated header is
 * invalid: a new trace). Versions above 00 are read as 00 where they parse,
 * as the W3C asks of a parser that meets a future version; version ff is invalid.
 *
 * @param sampleNew whether a trace started here is sampled
 */
export function traceOf(header: string | string[] | undefined, ids: TraceIds, sampleNew: boolean): TraceParent {
  if (typeof header === 'string') {
    const m = TRACEPARENT.exec(header)
    if (m !== null) {
      const [, version, traceId, parentSpanId, flags, rest] = m as unknown as [string, string, string, string, string, string]
      const versionOk = version !== 'ff' && (version !== '00' || rest === '')
      if (versionOk && traceId !== ZERO_TRACE && parentSpanId !== ZERO_SPAN) {
        return { traceId, parentSpanId, spanId: ids.spanId(), flags: Number.parseInt(flags, 16) & 0x01 }
      }
    }
  }
  return { traceId: ids.traceId(), parentSpanId: null, spanId: ids.spanId(), flags: sampleNew ? 1 : 0 }
}

/** The `traceparent` to send on, naming `spanId` (ours, or our client span's) as the parent. */
export function formatTraceparent(trace: TraceParent, spanId: string = trace.spanId): string {
  return `00-${trace.traceId}-${spanId}-${trace.flags === 1 ? '01' : '00'}`
}

/** A `tracestate` fit to pass on unchanged, or null to drop it (repeated lines are joined, as the W3C allows). */
export function tracestateOf(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header.join(',') : header
  return value !== undefined && TRACESTATE.test(value) ? value : null
}
