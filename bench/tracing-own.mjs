// What tracing costs a sampled request, bearward's own recorder and OTLP
// exporter (src/telemetry/span.ts, span-exporter.ts) beside the OpenTelemetry
// SDK as bearward configured it before (issue #39), in the same process and
// one loop: the three spans of a sampled JWT
// request (server, bearward.token.verify, the upstream client span) with
// their attributes, exported over OTLP/HTTP JSON to a receiver in this
// process (otlp) or held for a second and dropped (noop). Beside each sampled
// request the loop makes nine unsampled requests' worth of short-lived
// garbage, so queued spans meet the scavenges they would meet in bearward.
// The three loops (bare, then sdk and own, which goes first alternating) run
// for --rounds rounds after a warm-up round; each figure is the median over
// rounds of (loop − bare) µs of CPU.
//
//   npm run build && node --no-memory-reducer --max-semi-space-size=8 bench/tracing-own.mjs [otlp|noop] [--rounds N]
import { fork } from 'node:child_process'
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { ROOT_CONTEXT, SpanKind as SdkKind, trace } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace'
import { Tracing, SpanKind } from '../dist/telemetry/tracing.js'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '3' } } })
const mode = positionals[0] ?? 'otlp'
const ROUNDS = Number(values.rounds)
/** Sampled requests a second (10 % of about 10,000 requests a second), for this many seconds a loop and round. */
const RATE = 1000
const SECONDS = 3

if (positionals[0] === 'receiver') {
  // The collector, in its own process: its CPU is not the exporter's.
  let exports = 0
  let bytes = 0
  const receiver = createServer((req, res) => {
    req.on('data', (c) => {
      bytes += c.length
    })
    req.on('end', () => {
      exports += 1
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    })
  })
  process.on('message', () => process.send({ exports, bytes }))
  receiver.listen(0, '127.0.0.1', () => process.send({ port: receiver.address().port }))
} else await main()

async function main() {
  const collector = fork(fileURLToPath(import.meta.url), ['receiver'])
  const { port } = await new Promise((resolve) => collector.once('message', resolve))
  const url = `http://127.0.0.1:${port}/v1/traces`

  // The SDK, as src/telemetry/tracing.ts configured it before its own recorder.
  const sdkExporter =
    mode === 'noop' ? { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {}, forceFlush: async () => {} } : new OTLPTraceExporter({ url })
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'bearward', 'service.version': '0' }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(1) }),
    spanProcessors: [new BatchSpanProcessor({ exporter: sdkExporter, scheduledDelayMillis: 1000 })],
  })
  const tracer = provider.getTracer('bearward', '0')

  /** noop for the own recorder: spans held as the queue would hold them (up to a second, or 512), then let go. */
  function holdingSink() {
    let held = []
    const timer = setInterval(() => {
      held = []
    }, 1000)
    return {
      add(span) {
        held.push(span)
        if (held.length >= 512) held = []
      },
      counts: { exported: 0, dropped: 0, failed: 0 },
      async close() {
        clearInterval(timer)
      },
    }
  }
  const own = mode === 'noop' ? new Tracing(holdingSink(), 1) : await Tracing.create({ url, headers: {}, sample: 1, serviceName: 'bearward' }, '0')

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

  /** The spans of one sampled JWT request through the SDK, as bearward recorded them. */
  function sdkRequest() {
    const server = tracer.startSpan('GET', { kind: SdkKind.SERVER }, ROOT_CONTEXT)
    server.setAttributes({
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'network.protocol.version': '1.1',
      'client.address': '127.0.0.1',
      'user_agent.original': 'undici',
    })
    const parent = trace.setSpan(ROOT_CONTEXT, server)
    const verify = tracer.startSpan('bearward.token.verify', { kind: SdkKind.INTERNAL, attributes: { 'bearward.route': 'api' } }, parent)
    verify.setAttribute('bearward.token.cache', 'hit')
    verify.setAttribute('bearward.token.issuer', 'self')
    verify.end()
    const upstream = tracer.startSpan(
      'GET',
      {
        kind: SdkKind.CLIENT,
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

  /** A request as Tracing.start reads it (no traceparent: a new trace, sampled at ratio 1). */
  const req = { headers: { 'user-agent': 'undici' }, method: 'GET', httpVersion: '1.1', socket: { remoteAddress: '127.0.0.1' } }

  /** The same request through bearward's recorder, by the calls the gateway makes. */
  let ownRequests = 0
  function ownRequest() {
    ownRequests += 1
    const t = own.start(req)
    const verify = own.child('bearward.token.verify', SpanKind.INTERNAL, { 'bearward.route': 'api' }, t.span)
    verify.setAttribute('bearward.token.cache', 'hit')
    verify.setAttribute('bearward.token.issuer', 'self')
    verify.end()
    const upstream = own.child(
      'GET',
      SpanKind.CLIENT,
      { 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'server.port': 41234, 'url.path': '/api/items', 'bearward.route': 'api' },
      t.span,
    )
    own.traceparent(t, upstream)
    upstream.setAttribute('http.response.status_code', 200)
    upstream.end()
    own.finish(t, 'GET', '/api/items', '/api', 'api', 200, 'bench-service')
  }

  /** CPU µs per call of `perRequest` at RATE a second for SECONDS, in 10 ms slices, flushed at the end by `flush`. */
  async function measure(perRequest, flush) {
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
    await flush()
    const used = process.cpuUsage(before)
    return (used.user + used.system) / n
  }

  /** Wait until every span the own recorder ended has left its queue (it has no forceFlush: its 1 s timer sends them). */
  async function ownSettled() {
    for (;;) {
      const c = own.counts
      if (c.exported + c.dropped + c.failed >= 3 * ownRequests) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  const rows = { sdk: [], own: [] }
  const sdkLoop = () =>
    measure(
      () => {
        churn()
        sdkRequest()
      },
      () => provider.forceFlush(),
    )
  const ownLoop = () =>
    measure(
      () => {
        churn()
        ownRequest()
      },
      mode === 'noop' ? async () => {} : ownSettled,
    )
  // Round 0 warms up (JIT, undici's first connection) and is not counted; then the two take turns going first.
  for (let round = 0; round <= ROUNDS; round++) {
    const bare = await measure(churn, async () => {})
    const first = round % 2 === 0 ? 'sdk' : 'own'
    const a = await (first === 'sdk' ? sdkLoop() : ownLoop())
    const b = await (first === 'sdk' ? ownLoop() : sdkLoop())
    if (round === 0) continue
    rows.sdk.push((first === 'sdk' ? a : b) - bare)
    rows.own.push((first === 'sdk' ? b : a) - bare)
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const fmt = (xs) => `${median(xs).toFixed(1)} µs (rounds ${xs.map((x) => x.toFixed(1)).join(', ')})`
  collector.send('counts')
  const received = await new Promise((resolve) => collector.once('message', resolve))
  process.stdout.write(
    `${mode}, ${ROUNDS} rounds of ${SECONDS} s at ${RATE} sampled requests/s, CPU per sampled request (3 spans) over the bare loop:\n` +
      `  OpenTelemetry SDK  ${fmt(rows.sdk)}; ${(median(rows.sdk) / 10).toFixed(1)} µs per request at 10 %\n` +
      `  bearward's own     ${fmt(rows.own)}; ${(median(rows.own) / 10).toFixed(1)} µs per request at 10 %\n` +
      `  own ÷ SDK          ${(median(rows.own) / median(rows.sdk)).toFixed(2)}\n` +
      (mode === 'noop'
        ? ''
        : `  ${received.exports} exports, ${(received.bytes / 1024).toFixed(0)} KiB received; own exporter: ${JSON.stringify(own.counts)}\n`),
  )
  kept[0] = null
  await provider.shutdown()
  await own.close()
  collector.kill()
}
