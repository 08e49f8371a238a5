/**
 * Traces: every request gets a trace context (continued from the client's
 * `traceparent`, or new), which the access log names and the upstream
 * receives. With an exporter configured (`telemetry.traces.otlp`, or the
 * standard `OTEL_EXPORTER_OTLP_*` variables) spans are also recorded and
 * sent over OTLP/HTTP as JSON: the request (server span), and as its
 * children token verification, introspection, JWKS fetches, store calls and
 * the upstream exchange. Recording and export are bearward's own (span.ts,
 * span-exporter.ts), not the OpenTelemetry SDK's: the SDK cost a sampled
 * request 84–111 µs, more than a tenth of a request's CPU at 10 % sampling
 * (docs/performance.md "Tracing on, the arithmetic").
 *
 * The gateway passes a request's span explicitly along its route's plan
 * (`child(..., parent)`): on Node 20 an AsyncLocalStorage, once entered,
 * turns on async hooks for every promise of the process, about 15 µs a
 * proxied request (docs/performance.md). The authorization server's
 * endpoints, whose store calls are deep in their modules, still find their
 * request's span through an AsyncLocalStorage owned by this object (`within`),
 * switched off again whenever no traced endpoint request is in flight. With
 * no exporter, none of that runs: a request costs one header parse and two
 * random ids. With one, an unsampled request costs the same and the
 * sampler's check (ParentBased over TraceIdRatioBased, as the SDK decides).
 *
 * No span attribute holds a token, a secret or a query string (queries can
 * carry `access_token`); paths and header-free attributes only.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/http/http-spans/
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { IncomingMessage } from 'node:http'
import type { TracesConfig } from '../config/validated-config.js'
import { RatioSampler } from './ratio-sampler.js'
import { Span, SpanKind, type Attributes } from './span.js'
import { OtlpSpanExporter, type SpanExportCounts, type SpanExportOptions, type SpanExporter } from './span-exporter.js'
import { formatTraceparent, traceOf, TraceIds, tracestateOf, type TraceParent } from './trace-context.js'

export { Span, SpanKind, type Attributes } from './span.js'

/** One request's place in its trace. */
export interface RequestTrace extends TraceParent {
  /** The client's `tracestate`, passed on unchanged; null when absent or unfit. */
  readonly tracestate: string | null
  /** The recorded server span, or null when nothing is exported (or this trace is not sampled). */
  readonly span: Span | null
}

/** What the exporter is pointed at, resolved from the config or the environment. */
export interface ExportSettings {
  /** The OTLP/HTTP traces URL (`<endpoint>/v1/traces`). */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The ratio of new traces sampled (a caller's sampled flag is followed). */
  readonly sample: number
  readonly serviceName: string
  /** The batching and timeout the standard variables set; absent ones keep the exporter's defaults. */
  readonly tuning: ExportTuning
}

/** What `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` and `OTEL_BSP_*` set (see {@link exportTuning}). */
export type ExportTuning = Pick<SpanExportOptions, 'timeoutMs' | 'maxQueue' | 'maxBatch'>

/** A variable holding a whole number above 0, else undefined (an unreadable value keeps the default, as the SDKs do). */
function positiveInteger(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) return undefined
  const n = Number(text)
  return n > 0 && Number.isSafeInteger(n) ? n : undefined
}

/**
 * The export's timeout and batch sizes from the standard variables, which
 * the OpenTelemetry SDK read by itself when bearward exported through it:
 * `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` (else `OTEL_EXPORTER_OTLP_TIMEOUT`),
 * `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, all read
 * whether `telemetry.traces` or the variables name the endpoint.
 * `OTEL_BSP_SCHEDULE_DELAY` stays 1 s, as bearward always set it.
 */
export function exportTuning(env: NodeJS.ProcessEnv): ExportTuning {
  const tuning: { timeoutMs?: number; maxQueue?: number; maxBatch?: number } = {}
  const timeoutMs = positiveInteger(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT) ?? positiveInteger(env.OTEL_EXPORTER_OTLP_TIMEOUT)
  if (timeoutMs !== undefined) tuning.timeoutMs = timeoutMs
  const maxQueue = positiveInteger(env.OTEL_BSP_MAX_QUEUE_SIZE)
  if (maxQueue !== undefined) tuning.maxQueue = maxQueue
  const maxBatch = positiveInteger(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE)
  if (maxBatch !== undefined) tuning.maxBatch = maxBatch
  return tuning
}

/** `OTEL_EXPORTER_OTLP_HEADERS`: `k=v,k2=v2`, values URL-encoded. */
function parseHeaderList(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of (text ?? '').split(',')) {
    const eq = part.indexOf('=')
    if (eq <= 0) continue
    out[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim())
  }
  return out
}

function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`
}

/**
 * The exporter settings: the config's `telemetry.traces` first, else the
 * OpenTelemetry environment variables; null when neither asks for export
 * (or `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`).
 *
 * @see https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
 */
export function exportSettings(config: TracesConfig | null, env: NodeJS.ProcessEnv): ExportSettings | null {
  if (env.OTEL_SDK_DISABLED === 'true') return null
  const serviceName = env.OTEL_SERVICE_NAME ?? 'bearward'
  const envSample = env.OTEL_TRACES_SAMPLER_ARG === undefined ? Number.NaN : Number(env.OTEL_TRACES_SAMPLER_ARG)
  const tuning = exportTuning(env)
  if (config !== null) {
    return { url: tracesUrl(config.otlp.endpoint), headers: config.otlp.headers, sample: config.sample, serviceName, tuning }
  }
  if (env.OTEL_TRACES_EXPORTER !== undefined && env.OTEL_TRACES_EXPORTER !== 'otlp') return null
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : tracesUrl(env.OTEL_EXPORTER_OTLP_ENDPOINT))
  if (url === undefined) return null
  const headers = { ...parseHeaderList(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaderList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) }
  return { url, headers, sample: Number.isFinite(envSample) && envSample >= 0 && envSample <= 1 ? envSample : 1, serviceName, tuning }
}

/** Process-wide: built once at start (changing `telemetry` takes a restart). */
export class Tracing {
  readonly #ids = new TraceIds()
  /** Where ended spans go; null: nothing is recorded. */
  readonly #exporter: SpanExporter | null
  /** The ratio of new traces sampled (a caller's sampled flag is followed). */
  readonly #sampler: RatioSampler
  readonly #current = new AsyncLocalStorage<Span>()
  /** The traced requests that entered #current and have not finished: when none is left, it is disabled. */
  readonly #inside = new Set<RequestTrace>()

  /** Tracing that records spans into `exporter`, sampling new traces at `sample`; null: trace context only, nothing recorded. */
  constructor(exporter: SpanExporter | null, sample = 1) {
    this.#exporter = exporter
    this.#sampler = new RatioSampler(sample)
  }

  /**
   * Tracing for `settings` (null: no exporter), exporting over OTLP/HTTP
   * JSON. `options` changes the batching, timeout and retry numbers (tests).
   */
  static async create(
    settings: ExportSettings | null,
    version = '0',
    options: Omit<SpanExportOptions, 'url' | 'headers' | 'serviceName' | 'version'> = {},
  ): Promise<Tracing> {
    if (settings === null) return new Tracing(null)
    const exporter = new OtlpSpanExporter({
      ...settings.tuning,
      ...options,
      url: settings.url,
      headers: settings.headers,
      serviceName: settings.serviceName,
      version,
    })
    return new Tracing(exporter, settings.sample)
  }

  /** Whether spans are recorded and exported. */
  get exporting(): boolean {
    return this.#exporter !== null
  }

  /** What became of the recorded spans: exported, dropped (queue full), failed; null when nothing is exported. */
  get counts(): SpanExportCounts | null {
    return this.#exporter === null ? null : this.#exporter.counts
  }

  /**
   * The trace of one arriving request, and its server span when exporting
   * and sampled. The span's name is the method until the route is known (see `finish`).
   */
  start(req: IncomingMessage): RequestTrace {
    const tracestate = tracestateOf(req.headers.tracestate)
    // Fields copied one by one: V8 clones a spread object here on its slow path, which made this
    // the costliest step of a request with tracing off (docs/performance.md).
    const t = traceOf(req.headers.traceparent, this.#ids, false)
    const exporter = this.#exporter
    // ParentBased: a caller's sampled flag decides; a trace that starts here is sampled by its id's ratio.
    // Without an exporter nothing is recorded, and the caller's flag is passed on as it came.
    const sampled = exporter !== null && (t.parentSpanId !== null ? t.flags === 1 : this.#sampler.sampled(t.traceId))
    if (!sampled) return { traceId: t.traceId, parentSpanId: t.parentSpanId, spanId: t.spanId, flags: t.flags, tracestate, span: null }
    const method = req.method ?? 'GET'
    // Attributes for a recorded span only: most requests are not sampled, and the sampler reads none of them.
    const span = new Span(exporter, method, SpanKind.SERVER, t.traceId, t.spanId, t.parentSpanId, serverAttributes(req, method))
    return { traceId: t.traceId, parentSpanId: t.parentSpanId, spanId: t.spanId, flags: 1, tracestate, span }
  }

  /**
   * Run `fn` with `trace`'s span as the current one, so child spans started
   * without an explicit parent find it, until `finish(trace)`. For the
   * authorization server's endpoints; the gateway passes its spans along.
   */
  within<T>(trace: RequestTrace, fn: () => T): T {
    if (trace.span === null) return fn()
    this.#inside.add(trace)
    return this.#current.run(trace.span, fn)
  }

  /**
   * End a request's server span: `{method} {route}`, the status, and what
   * the request was (route name, client id), never a token or a query.
   */
  finish(
    trace: RequestTrace,
    method: string,
    path: string,
    httpRoute: string | null,
    routeLabel: string,
    status: number | null,
    clientId: string | null,
  ): void {
    const span = trace.span
    if (span === null) return
    // The last traced endpoint request is over: async hooks off again (see the file's comment).
    if (this.#inside.delete(trace) && this.#inside.size === 0) this.#current.disable()
    if (httpRoute !== null) {
      span.name = `${method} ${httpRoute}`
      span.setAttribute('http.route', httpRoute)
    }
    span.setAttribute('url.path', path)
    span.setAttribute('bearward.route', routeLabel)
    if (clientId !== null) span.setAttribute('bearward.client_id', clientId)
    if (status === null) span.fail('aborted')
    else {
      span.setAttribute('http.response.status_code', status)
      // HTTP semconv: a server span is an error for 5xx only.
      if (status >= 500) span.fail(String(status))
    }
    span.end()
  }

  /**
   * A child of `parent`, or when it is undefined of the current endpoint
   * request's span (`within`); null when nothing is recorded (no exporter,
   * not sampled, no parent). `attributes` becomes the span's own: pass a fresh object.
   */
  child(name: string, kind: SpanKind, attributes: Attributes, parent?: Span | null): Span | null {
    const exporter = this.#exporter
    if (exporter === null) return null
    const of = parent === undefined ? this.#current.getStore() : parent
    if (of === undefined || of === null) return null
    // ParentBased: the child of a recorded (sampled) span is recorded.
    return new Span(exporter, name, kind, of.traceId, this.#ids.spanId(), of.spanId, attributes)
  }

  /** Trace `work` as a child span (of `parent`, see `child`) that ends when it settles (see `withinSpan`). */
  traced<T>(name: string, kind: SpanKind, attributes: Attributes, work: () => Promise<T>, parent?: Span | null): Promise<T> {
    const span = this.child(name, kind, attributes, parent)
    return span === null ? work() : withinSpan(span, work)
  }

  /** The `traceparent` for the upstream: the trace, and as parent our client span when one is recorded, else our server span. */
  traceparent(trace: RequestTrace, clientSpan: Span | null = null): string {
    return formatTraceparent(trace, clientSpan === null ? trace.spanId : clientSpan.spanId)
  }

  /** Export what is queued and stop (at shutdown). */
  async close(): Promise<void> {
    await this.#exporter?.close()
  }
}

/** A server span's request attributes (HTTP server span conventions); never a header but the User-Agent. */
function serverAttributes(req: IncomingMessage, method: string): Attributes {
  const attributes: Attributes = {
    'http.request.method': method,
    'url.scheme': (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http',
    'network.protocol.version': req.httpVersion,
  }
  if (req.socket.remoteAddress !== undefined) attributes['client.address'] = req.socket.remoteAddress
  const userAgent = req.headers['user-agent']
  if (typeof userAgent === 'string') attributes['user_agent.original'] = userAgent
  return attributes
}

function failed(span: Span, err: unknown): void {
  // The class name only: an error's message can hold values.
  span.fail(err instanceof Error ? err.constructor.name : 'error')
  span.end()
}

/** Run `work` and end `span` when it settles, synchronously or as a promise; an error marks the span and is rethrown. */
export function withinSpan<T>(span: Span, work: () => T): T {
  let result: T
  try {
    result = work()
  } catch (err) {
    failed(span, err)
    throw err
  }
  if (!(result instanceof Promise)) {
    span.end()
    return result
  }
  return result.then(
    (value: unknown) => {
      span.end()
      return value
    },
    (err: unknown) => {
      failed(span, err)
      throw err
    },
  ) as T
}
