/**
 * Traces: every request gets a trace context (continued from the client's
 * `traceparent`, or new), which the access log names and the upstream
 * receives. With an exporter configured (`telemetry.traces.otlp`, or the
 * standard `OTEL_EXPORTER_OTLP_*` variables) spans are also recorded through
 * the OpenTelemetry SDK and sent over OTLP/HTTP: the request (server span),
 * and as its children token verification, introspection, JWKS fetches,
 * store calls and the upstream exchange.
 *
 * The gateway passes a request's span explicitly along its route's plan
 * (`child(..., parent)`): on Node 20 an AsyncLocalStorage, once entered,
 * turns on async hooks for every promise of the process, about 15 µs a
 * proxied request (docs/performance.md). The authorization server's
 * endpoints, whose store calls are deep in their modules, still find their
 * request's span through an AsyncLocalStorage owned by this object (`within`),
 * switched off again whenever no traced endpoint request is in flight. With
 * no exporter, none of that runs: a request costs one header parse and two
 * random ids. With one, the sampling decision is made before the SDK is
 * called, so an unsampled request costs the same and the sampler's check.
 *
 * No span attribute holds a token, a secret or a query string (queries can
 * carry `access_token`); paths and header-free attributes only.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/http/http-spans/
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { IncomingMessage } from 'node:http'
import { ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api'
import type { IdGenerator, Sampler, TracerProvider } from '@opentelemetry/sdk-trace'
import type { TracesConfig } from '../config/validated-config.js'
import { formatTraceparent, traceOf, TraceIds, tracestateOf, type TraceParent } from './trace-context.js'

export { SpanKind, type Span } from '@opentelemetry/api'

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
  if (config !== null) {
    return { url: tracesUrl(config.otlp.endpoint), headers: config.otlp.headers, sample: config.sample, serviceName }
  }
  if (env.OTEL_TRACES_EXPORTER !== undefined && env.OTEL_TRACES_EXPORTER !== 'otlp') return null
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : tracesUrl(env.OTEL_EXPORTER_OTLP_ENDPOINT))
  if (url === undefined) return null
  const headers = { ...parseHeaderList(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaderList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) }
  return { url, headers, sample: Number.isFinite(envSample) && envSample >= 0 && envSample <= 1 ? envSample : 1, serviceName }
}

/** Process-wide: built once at start (changing `telemetry` takes a restart). */
export class Tracing {
  readonly #ids: TraceIds
  readonly #provider: TracerProvider | null
  readonly #tracer: Tracer | null
  readonly #current = new AsyncLocalStorage<Span>()
  /** The traced requests that entered #current and have not finished: when none is left, it is disabled. */
  readonly #inside = new Set<RequestTrace>()

  /**
   * How a new trace is sampled, and the trace ids the SDK starts root spans
   * with, when `create` built the provider: the decision is then made before
   * the SDK is called. null: every request goes through the SDK's sampler.
   */
  readonly #sampling: NewTraceSampling | null

  /** Tracing that records spans through `provider`; null: trace context only, nothing recorded. */
  constructor(provider: TracerProvider | null, version = '0', sampling: NewTraceSampling | null = null) {
    this.#provider = provider
    this.#tracer = provider === null ? null : provider.getTracer('bearward', version)
    this.#sampling = sampling
    // One id source: the SDK's root spans take the trace ids sampled here.
    this.#ids = sampling?.ids.source ?? new TraceIds()
  }

  /**
   * Tracing for `settings` (null: no exporter). The OpenTelemetry SDK is
   * imported only when spans are exported: a process that exports none
   * does not pay for loading it.
   */
  static async create(settings: ExportSettings | null, version = '0'): Promise<Tracing> {
    if (settings === null) return new Tracing(null, version)
    const [{ OTLPTraceExporter }, { resourceFromAttributes }, sdk] = await Promise.all([
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace'),
    ])
    const exporter = new OTLPTraceExporter({ url: settings.url, headers: { ...settings.headers } })
    const root = new sdk.TraceIdRatioBasedSampler(settings.sample)
    const ids = new ChosenTraceIds(new TraceIds())
    const provider = new sdk.TracerProvider({
      resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
      sampler: new sdk.ParentBasedSampler({ root }),
      idGenerator: ids,
      spanProcessors: [new sdk.BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
    })
    return new Tracing(provider, version, { root, ids })
  }

  /** Whether spans are recorded and exported. */
  get exporting(): boolean {
    return this.#tracer !== null
  }

  /**
   * The trace of one arriving request, and its server span when exporting.
   * The span's name is the method until the route is known (see `finish`).
   */
  start(req: IncomingMessage): RequestTrace {
    const tracestate = tracestateOf(req.headers.tracestate)
    const tracer = this.#tracer
    if (tracer === null) {
      // Fields copied one by one: V8 clones a spread object here on its slow path, which made this
      // the costliest step of a request with tracing off (docs/performance.md).
      const t = traceOf(req.headers.traceparent, this.#ids, false)
      return { traceId: t.traceId, parentSpanId: t.parentSpanId, spanId: t.spanId, flags: t.flags, tracestate, span: null }
    }
    const incoming = traceOf(req.headers.traceparent, this.#ids, false)
    const sampling = this.#sampling
    if (sampling !== null) {
      // The sampler's decision, made here (ParentBased: a caller's flag, else the ratio over the trace
      // id), so the unsampled majority never enters the SDK; a sampled new trace keeps this trace id.
      const sampled =
        incoming.parentSpanId !== null
          ? incoming.flags === 1
          : sampling.root.shouldSample(ROOT_CONTEXT, incoming.traceId, '', SpanKind.SERVER, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED
      if (!sampled) return { traceId: incoming.traceId, parentSpanId: incoming.parentSpanId, spanId: incoming.spanId, flags: 0, tracestate, span: null }
      if (incoming.parentSpanId === null) sampling.ids.next = incoming.traceId
    }
    const parent =
      incoming.parentSpanId === null
        ? ROOT_CONTEXT
        : trace.setSpanContext(ROOT_CONTEXT, { traceId: incoming.traceId, spanId: incoming.parentSpanId, traceFlags: incoming.flags, isRemote: true })
    const method = req.method ?? 'GET'
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER }, parent)
    if (sampling !== null) sampling.ids.next = null
    const recording = span.isRecording()
    // Attributes for a recorded span only: most requests are not sampled, and the sampler reads none of them.
    if (recording) span.setAttributes(serverAttributes(req, method))
    const sc = span.spanContext()
    return {
      traceId: sc.traceId,
      parentSpanId: incoming.parentSpanId,
      spanId: sc.spanId,
      flags: sc.traceFlags & 1,
      tracestate,
      span: recording ? span : null,
    }
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
      span.updateName(`${method} ${httpRoute}`)
      span.setAttribute('http.route', httpRoute)
    }
    span.setAttribute('url.path', path)
    span.setAttribute('bearward.route', routeLabel)
    if (clientId !== null) span.setAttribute('bearward.client_id', clientId)
    if (status === null) {
      span.setAttribute('error.type', 'aborted')
      span.setStatus({ code: SpanStatusCode.ERROR })
    } else {
      span.setAttribute('http.response.status_code', status)
      // HTTP semconv: a server span is an error for 5xx only.
      if (status >= 500) {
        span.setAttribute('error.type', String(status))
        span.setStatus({ code: SpanStatusCode.ERROR })
      }
    }
    span.end()
  }

  /**
   * A child of `parent`, or when it is undefined of the current endpoint
   * request's span (`within`); null when nothing is recorded (no exporter,
   * not sampled, no parent).
   */
  child(name: string, kind: SpanKind, attributes: Attributes, parent?: Span | null): Span | null {
    const tracer = this.#tracer
    if (tracer === null) return null
    const of = parent === undefined ? this.#current.getStore() : parent
    if (of === undefined || of === null) return null
    return tracer.startSpan(name, { kind, attributes }, trace.setSpan(ROOT_CONTEXT, of))
  }

  /** Trace `work` as a child span (of `parent`, see `child`) that ends when it settles (see `withinSpan`). */
  traced<T>(name: string, kind: SpanKind, attributes: Attributes, work: () => Promise<T>, parent?: Span | null): Promise<T> {
    const span = this.child(name, kind, attributes, parent)
    return span === null ? work() : withinSpan(span, work)
  }

  /** The `traceparent` for the upstream: the trace, and as parent our client span when one is recorded, else our server span. */
  traceparent(trace: RequestTrace, clientSpan: Span | null = null): string {
    return formatTraceparent(trace, clientSpan === null ? trace.spanId : clientSpan.spanContext().spanId)
  }

  /** Export what is buffered and stop (at shutdown). */
  async close(): Promise<void> {
    await this.#provider?.shutdown().catch(() => undefined)
  }
}

/** How `Tracing.start` samples a new trace before the SDK is called: the SDK's own root sampler, and its id source. */
interface NewTraceSampling {
  /** The ratio sampler under ParentBased (TraceIdRatioBased: deterministic in the trace id). */
  readonly root: Sampler
  readonly ids: ChosenTraceIds
}

/**
 * The SDK's id source: a root span starts with the trace id `Tracing.start`
 * sampled (`next`, taken once), so the SDK's sampler, asked again, sees the
 * same id and decides the same; anything else gets fresh random ids.
 */
class ChosenTraceIds implements IdGenerator {
  next: string | null = null
  readonly source: TraceIds

  constructor(source: TraceIds) {
    this.source = source
  }

  generateTraceId(): string {
    const id = this.next ?? this.source.traceId()
    this.next = null
    return id
  }

  generateSpanId(): string {
    return this.source.spanId()
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
  span.setStatus({ code: SpanStatusCode.ERROR })
  // The class name only: an error's message can hold values.
  span.setAttribute('error.type', err instanceof Error ? err.constructor.name : 'error')
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
