/**
 * A batch of spans as an OTLP/HTTP JSON export request, built as one string
 * at export time: ids as hex, times as decimal strings of nanoseconds, the
 * kind as its enum number, attributes as `{key, value: {stringValue |
 * intValue | doubleValue | boolValue}}` (a 64-bit `intValue` as a decimal
 * string, as the protobuf JSON mapping writes it).
 *
 * @see https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding
 */
import { performance } from 'node:perf_hooks'
import type { AttributeValue, Attributes, Span } from './span.js'

/** The part of every export before its spans: the resource (service name and version) and the scope. */
export function exportPrefix(serviceName: string, version: string): string {
  const resource = `{"attributes":[${attribute('service.name', serviceName)},${attribute('service.version', version)}]}`
  return `{"resourceSpans":[{"resource":${resource},"scopeSpans":[{"scope":{"name":"bearward","version":${JSON.stringify(version)}},"spans":[`
}

const EXPORT_SUFFIX = ']}]}]}'

/**
 * `prefix` (exportPrefix), the spans, and the closing brackets, as UTF-8.
 * Each span's JSON is written into the buffer as it is built: one string of
 * a whole batch, concatenated piece by piece, is a rope thousands deep, and
 * flattening it to send cost more than building it.
 */
export function exportBody(prefix: string, spans: readonly Span[]): Buffer {
  const clock = unixClock()
  let buffer = Buffer.allocUnsafe(prefix.length * 3 + spans.length * 1024 + 64)
  let offset = buffer.write(prefix, 0)
  for (let i = 0; i < spans.length; i++) {
    const json = i === 0 ? spanJson(spans[i] as Span, clock) : `,${spanJson(spans[i] as Span, clock)}`
    // UTF-8 takes at most three bytes for each UTF-16 unit.
    if (offset + json.length * 3 + EXPORT_SUFFIX.length > buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(buffer.length * 2, offset + json.length * 3 + EXPORT_SUFFIX.length))
      buffer.copy(grown, 0, 0, offset)
      buffer = grown
    }
    offset += buffer.write(json, offset)
  }
  offset += buffer.write(EXPORT_SUFFIX, offset)
  return buffer.subarray(0, offset)
}

/**
 * `performance.now()` values as Unix time: whole milliseconds and the
 * fraction kept apart, since nanoseconds since 1970 exceed a double's exact
 * integers. Anchored at each export (the monotonic clock and the wall clock
 * drift apart over days): a batch is seconds old, so its spans' times stay
 * within a millisecond of the wall clock and exact relative to each other.
 */
interface UnixClock {
  readonly wholeMs: number
  readonly fractionMs: number
}

function unixClock(): UnixClock {
  let origin = performance.timeOrigin
  const now = performance.now()
  const drift = Date.now() - (origin + now)
  if (drift >= 1 || drift <= -1) origin += drift
  const wholeMs = Math.floor(origin)
  return { wholeMs, fractionMs: origin - wholeMs }
}

function unixNano(clock: UnixClock, at: number): string {
  const t = clock.fractionMs + at
  let ms = Math.floor(t)
  let ns = Math.round((t - ms) * 1e6)
  if (ns === 1e6) {
    ms += 1
    ns = 0
  }
  return `${clock.wholeMs + ms}${String(ns).padStart(6, '0')}`
}

function spanJson(span: Span, clock: UnixClock): string {
  // Ids come from trace-context.ts (generated, or matched as lower-case hex): nothing to escape.
  let s = `{"traceId":"${span.traceId}","spanId":"${span.spanId}",`
  if (span.parentSpanId !== null) s += `"parentSpanId":"${span.parentSpanId}",`
  s += `"name":${JSON.stringify(span.name)},"kind":${span.kind},"startTimeUnixNano":"${unixNano(clock, span.startedAt)}","endTimeUnixNano":"${unixNano(clock, span.endedAt)}","attributes":[`
  s += attributesJson(span.attributes)
  return `${s}],"status":{"code":${span.failed ? 2 : 0}}}`
}

/**
 * `{"key":<key>,"value":` for each attribute key met: the keys are the few
 * that bearward's code names, so each is escaped once. Bounded all the same.
 */
const keyPrefixes = new Map<string, string>()

function keyPrefix(key: string): string {
  let prefix = keyPrefixes.get(key)
  if (prefix === undefined) {
    prefix = `{"key":${JSON.stringify(key)},"value":`
    if (keyPrefixes.size < 256) keyPrefixes.set(key, prefix)
  }
  return prefix
}

function attributesJson(attributes: Attributes): string {
  let s = ''
  for (const key in attributes) {
    if (s !== '') s += ','
    s += `${keyPrefix(key)}${anyValue(attributes[key] as AttributeValue)}}`
  }
  return s
}

function attribute(key: string, value: AttributeValue): string {
  return `{"key":${JSON.stringify(key)},"value":${anyValue(value)}}`
}

function anyValue(value: AttributeValue): string {
  if (typeof value === 'string') return `{"stringValue":${JSON.stringify(value)}}`
  if (typeof value === 'boolean') return `{"boolValue":${value}}`
  if (Number.isSafeInteger(value)) return `{"intValue":"${value}"}`
  // The protobuf JSON mapping writes the non-finite doubles as strings.
  return Number.isFinite(value) ? `{"doubleValue":${value}}` : `{"doubleValue":"${value}"}`
}
