// What tracing costs a sampled request inside the OpenTelemetry SDK alone
// (issue #39): the three spans bearward records for a sampled JWT request
// (server, bearward.token.verify, the upstream client span) with their
// attributes, through the SDK as src/telemetry/tracing.ts configures it
// (ParentBased over TraceIdRatioBased, BatchSpanProcessor with a 1 s delay),
// exported over OTLP/HTTP JSON to a receiver in this process, or to a no-op
// exporter. No HTTP proxying: beside each sampled request the loop makes nine
// unsampled requests' worth of short-lived garbage, so spans held in the batch
// queue meet the scavenges they would meet in bearward.
//
//   node --no-memory-reducer --max-semi-space-size=8 bench/tracing-sdk.mjs [otlp|noop] [--batch N]
import { createServer } from 'node:http'
import { parseArgs } from 'node:util'
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { batch: { type: 'string', default: '512' } } })
const mode = positionals[0] ?? 'otlp'
/** Sampled requests a second (10 % of about 10,000 requests a second), for this many seconds. */
const RATE = 1000
const SECONDS = 6

let exports = 0
const receiver = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    exports += 1
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{}')
  })
})
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve))
const exporter =
  mode === 'noop'
    ? { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {}, forceFlush: async () => {} }
    : new OTLPTraceExporter({ url: `http://127.0.0.1:${receiver.address().port}/v1/traces` })
const provider = new TracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'bearward', 'service.version': '0' }),
  sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(1) }),
  spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000, maxExportBatchSize: Number(values.batch) })],
})
const tracer = provider.getTracer('bearward', '0')

/** The latest garbage, held until the next: each batch dies young but is not optimized away. */
const kept = [null]
/** Nine unsampled requests' worth of garbage that dies young. */
function churn() {
  for (let r = 0; r < 9; r++) {
    const a = new Array(100)
    for (let i = 0; i < 100; i++) a[i] = { i, s: `x${i}`, b: [i, i] }
    kept[0] = a
  }
}

/** The spans of one sampled JWT request, as bearward records them. */
function sampledRequest() {
  const server = tracer.startSpan('GET', { kind: SpanKind.SERVER }, ROOT_CONTEXT)
  server.setAttributes({
    'http.request.method': 'GET',
    'url.scheme': 'http',
    'network.protocol.version': '1.1',
    'client.address': '127.0.0.1',
    'user_agent.original': 'undici',
  })
  const parent = trace.setSpan(ROOT_CONTEXT, server)
  const verify = tracer.startSpan('bearward.token.verify', { kind: SpanKind.INTERNAL, attributes: { 'bearward.route': 'api' } }, parent)
  verify.setAttribute('bearward.token.cache', 'hit')
  verify.setAttribute('bearward.token.issuer', 'self')
  verify.end()
  const upstream = tracer.startSpan(
    'GET',
    {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'server.port': 41234, 'url.path': '/api/items', 'bearward.route': 'api' },
    },
    parent,
  )
  upstream.setAttribute('http.response.status_code', 200)
  upstream.end()
  server.updateName('GET /api')
  server.setAttribute('http.route', '/api')
  server.setAttribute('url.path', '/api/items')
  server.setAttribute('bearward.route', 'api')
  server.setAttribute('bearward.client_id', 'bench-service')
  server.setAttribute('http.response.status_code', 200)
  server.end()
}

/** CPU µs of `perRequest` at RATE a second for SECONDS, in 10 ms slices; and how many ran. */
async function measure(perRequest) {
  let n = 0
  const started = Date.now()
  const before = process.cpuUsage()
  await new Promise((resolve) => {
    const tick = setInterval(() => {
      for (let i = 0; i < RATE / 100; i++) {
        perRequest()
        n += 1
      }
      if (Date.now() - started >= SECONDS * 1000) {
        clearInterval(tick)
        resolve()
      }
    }, 10)
  })
  await provider.forceFlush()
  const used = process.cpuUsage(before)
  return { us: used.user + used.system, n }
}

const traced = await measure(() => {
  churn()
  sampledRequest()
})
const bare = await measure(churn)
const perSampled = traced.us / traced.n - bare.us / bare.n
process.stdout.write(
  `${mode}, batches of ${values.batch}: ${traced.n} sampled requests, ${exports} exports; ${perSampled.toFixed(1)} µs of CPU per sampled request (3 spans), ${(perSampled / 10).toFixed(1)} µs per request at 10 %\n`,
)
kept[0] = null
await provider.shutdown()
receiver.close()
