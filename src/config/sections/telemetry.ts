/**
 * `telemetry`: OpenTelemetry trace export (docs/telemetry.md). Trace context
 * is propagated whatever this says; `traces` only adds the exporter.
 */
import { isScalar, type Node } from 'yaml'
import type { TracesConfig } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { keysAt } from '../contract.js'
import { checkHttpUrl } from '../values.js'

const TELEMETRY_KEYS = keysAt('#/properties/telemetry')
const TRACES_KEYS = keysAt('#/properties/telemetry/properties/traces')
const OTLP_KEYS = keysAt('#/properties/telemetry/properties/traces/properties/otlp')

/** A header field name (RFC 9110 5.1 token) and a value with no control character. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

function readRatio(r: Reader, node: Node, path: string): number | undefined {
  const resolved = r.resolve(node)
  const value = isScalar(resolved) ? resolved.value : undefined
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    r.problem(resolved ?? node, path, 'expected a ratio from 0 to 1, e.g. `0.1` to record one new trace in ten')
    return undefined
  }
  return n
}

export function readTraces(r: Reader, node: Node | undefined, path: string): TracesConfig | null {
  const telemetry = r.map(node, path, TELEMETRY_KEYS)
  if (telemetry === undefined) return null
  const traces = r.map(telemetry.get('traces'), telemetry.pathOf('traces'), TRACES_KEYS)
  if (traces === undefined) return null
  if (!traces.has('otlp')) {
    r.problem(
      telemetry.get('traces'),
      traces.pathOf('otlp'),
      'missing required key `otlp`: where to export spans, e.g. `otlp: { endpoint: http://collector:4318 }`',
    )
    return null
  }
  const otlp = r.map(traces.get('otlp'), traces.pathOf('otlp'), OTLP_KEYS)
  const endpoint = otlp?.req('endpoint', r.str({ check: (v) => checkHttpUrl(v) }))
  const headers: Record<string, string> = {}
  const headersNode = otlp?.get('headers')
  for (const e of headersNode === undefined ? [] : (r.entries(headersNode, otlp?.pathOf('headers') ?? path) ?? [])) {
    if (!HEADER_NAME.test(e.key)) {
      r.problem(e.keyNode, e.path, `\`${e.key}\` is not a header name`)
      continue
    }
    const value = r.str({ allowEmpty: true, check: (v) => (HEADER_VALUE.test(v) ? undefined : 'a header value cannot hold control characters') })(
      e.value,
      e.path,
    )
    if (value !== undefined) headers[e.key] = value
  }
  const sample = traces.opt('sample', (n, p) => readRatio(r, n, p), 1)
  if (endpoint === undefined) return null
  return { otlp: { endpoint, headers }, sample }
}
