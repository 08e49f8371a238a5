import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { IncomingHttpHeaders } from 'node:http'
import t, { type Test } from 'tap'
import { OtlpSpanExporter, type SpanExportOptions } from '../../src/telemetry/span-exporter.js'
import { Span, SpanKind } from '../../src/telemetry/span.js'
import { TraceIds } from '../../src/telemetry/trace-context.js'
import { exportSettings, Tracing } from '../../src/telemetry/tracing.js'
import { closeServer, eventually, listen } from '../helpers/http.js'

/**
 * bearward's own span export (src/telemetry/span-exporter.ts) against a real
 * OTLP/HTTP sink on port 0: the JSON a collector reads back, batching, the
 * queue bound, retries, the timeout and the flush at close().
 */

interface OtlpValue {
  stringValue?: string
  intValue?: string
  doubleValue?: number
  boolValue?: boolean
}
interface OtlpAttribute {
  key: string
  value: OtlpValue
}
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes: OtlpAttribute[]
  status: { code?: number }
}
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: OtlpAttribute[] }
    scopeSpans: Array<{ scope: { name: string; version: string }; spans: OtlpSpan[] }>
  }>
}

interface Received {
  readonly url: string | undefined
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** A sink that records each POST and answers it with `answer` (which may hold the response back). */
async function startSink(
  t: Test,
  answer: (res: ServerResponse, n: number, req: IncomingMessage) => void = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
): Promise<{ url: string; received: Received[]; spans(): OtlpSpan[] }> {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      answer(res, received.length, req)
    })
  })
  const { url } = await listen(server)
  t.teardown(() => closeServer(server))
  return {
    url: `${url}/v1/traces`,
    received,
    spans: () => received.flatMap((r) => (JSON.parse(r.body) as OtlpExport).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans))),
  }
}

function exporterFor(t: Test, url: string, options: Partial<SpanExportOptions> = {}): OtlpSpanExporter {
  const exporter = new OtlpSpanExporter({ url, headers: {}, serviceName: 'bearward-test', version: '9.9.9', ...options })
  t.teardown(() => exporter.close())
  return exporter
}

const ids = new TraceIds()

/** `n` ended spans of one trace, each handed to `exporter` as it ends. */
function endSpans(exporter: OtlpSpanExporter, n: number): void {
  const traceId = ids.traceId()
  for (let i = 0; i < n; i++) new Span(exporter, `span ${i}`, SpanKind.INTERNAL, traceId, ids.spanId(), null, { i }).end()
}

function batchSizes(received: Received[]): number[] {
  return received.map((r) => (JSON.parse(r.body) as OtlpExport).resourceSpans[0]?.scopeSpans[0]?.spans.length ?? 0)
}

function attr(span: OtlpSpan | undefined, key: string): OtlpValue | undefined {
  return span?.attributes.find((a) => a.key === key)?.value
}

t.test('a collector reads back OTLP JSON: resource, scope, ids, kinds, times, attributes, status', async (t) => {
  const sink = await startSink(t)
  const tracing = await Tracing.create({ url: sink.url, headers: { 'x-api-key': 'collector-key' }, sample: 1, serviceName: 'edge', tuning: {} }, '1.2.3')
  const before = BigInt(Date.now()) * 1_000_000n
  const req = {
    headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'user-agent': 'agent "quoted" \\ ü' },
    method: 'GET',
    httpVersion: '1.1',
    socket: { remoteAddress: '127.0.0.1' },
  } as unknown as IncomingMessage
  const trace = tracing.start(req)
  const server = trace.span
  t.not(server, null, 'sampled by the caller')
  const child = tracing.child('GET', SpanKind.CLIENT, { 'server.port': 8443, ratio: 0.25, cached: true, 'url.path': '/a' }, server)
  child?.end()
  await tracing.traced('bearward.token.verify', SpanKind.INTERNAL, {}, () => Promise.reject(new TypeError('holds a value')), server).catch(() => undefined)
  tracing.finish(trace, 'GET', '/orders/7', '/orders', 'orders', 503, 'svc')
  await tracing.close()
  const after = BigInt(Date.now()) * 1_000_000n

  t.equal(sink.received.length, 1, 'one export for the three spans')
  const got = sink.received[0]
  t.equal(got?.url, '/v1/traces')
  t.equal(got?.headers['content-type'], 'application/json')
  t.equal(got?.headers['x-api-key'], 'collector-key', 'the configured headers')
  const body = JSON.parse(got?.body ?? '{}') as OtlpExport
  const resource = body.resourceSpans[0]?.resource.attributes
  t.same(resource, [
    { key: 'service.name', value: { stringValue: 'edge' } },
    { key: 'service.version', value: { stringValue: '1.2.3' } },
  ])
  t.same(body.resourceSpans[0]?.scopeSpans[0]?.scope, { name: 'bearward', version: '1.2.3' })

  const spans = sink.spans()
  const serverSpan = spans.find((s) => s.kind === 2)
  t.equal(serverSpan?.name, 'GET /orders')
  t.equal(serverSpan?.traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
  t.equal(serverSpan?.parentSpanId, '00f067aa0ba902b7', "the caller's span is the parent")
  t.equal(serverSpan?.spanId, trace.spanId)
  t.same(serverSpan?.status, { code: 2 }, 'a 5xx server span is an error')
  t.same(attr(serverSpan, 'error.type'), { stringValue: '503' })
  t.same(attr(serverSpan, 'http.response.status_code'), { intValue: '503' }, 'integers as decimal strings')
  t.same(attr(serverSpan, 'user_agent.original'), { stringValue: 'agent "quoted" \\ ü' }, 'strings escaped')
  t.same(attr(serverSpan, 'bearward.client_id'), { stringValue: 'svc' })

  const clientSpan = spans.find((s) => s.kind === 3)
  t.equal(clientSpan?.parentSpanId, serverSpan?.spanId)
  t.equal(clientSpan?.traceId, serverSpan?.traceId)
  t.match(clientSpan?.spanId, /^[0-9a-f]{16}$/)
  t.same(attr(clientSpan, 'server.port'), { intValue: '8443' })
  t.same(attr(clientSpan, 'ratio'), { doubleValue: 0.25 })
  t.same(attr(clientSpan, 'cached'), { boolValue: true })
  t.same(clientSpan?.status, { code: 0 }, 'status unset')

  const verify = spans.find((s) => s.kind === 1)
  t.equal(verify?.name, 'bearward.token.verify')
  t.same(verify?.status, { code: 2 })
  t.same(attr(verify, 'error.type'), { stringValue: 'TypeError' }, 'the class, not the message')
  t.notOk(got?.body.includes('holds a value'))

  for (const span of spans) {
    t.match(span.startTimeUnixNano, /^\d{19}$/, 'nanoseconds as a decimal string')
    const start = BigInt(span.startTimeUnixNano)
    const end = BigInt(span.endTimeUnixNano)
    t.ok(start >= before - 2_000_000n && end <= after + 2_000_000n, `${span.name}: within the test's wall-clock time`)
    t.ok(start <= end, `${span.name}: starts before it ends`)
  }
})

t.test('spans are batched: a batch waits for the delay, a full one of 512 leaves at once', async (t) => {
  const sink = await startSink(t)
  const exporter = exporterFor(t, sink.url, { delayMs: 100 })
  endSpans(exporter, 3)
  t.equal(sink.received.length, 0, 'nothing is sent as a span ends')
  t.ok(await eventually(() => sink.received.length === 1))
  t.same(batchSizes(sink.received), [3], 'the three spans in one export')

  const slow = await startSink(t)
  // A long delay: only a full batch is sent before close().
  const batched = exporterFor(t, slow.url, { delayMs: 60_000 })
  endSpans(batched, 1100)
  t.ok(await eventually(() => slow.received.length === 2), 'two full batches, one after the other')
  t.same(batchSizes(slow.received), [512, 512])
  await batched.close()
  t.same(batchSizes(slow.received), [512, 512, 76], 'the rest at close')
  t.same(batched.counts, { exported: 1100, dropped: 0, failed: 0 })
})

t.test('OTEL_BSP_MAX_EXPORT_BATCH_SIZE and OTEL_BSP_MAX_QUEUE_SIZE reach the exporter Tracing builds', async (t) => {
  const sink = await startSink(t)
  const settings = exportSettings(null, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: sink.url, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2', OTEL_BSP_MAX_QUEUE_SIZE: '3' })
  const tracing = await Tracing.create(settings, '1')
  const req = { headers: {}, method: 'GET', httpVersion: '1.1', socket: {} } as unknown as IncomingMessage
  // Two spans fill a batch, which leaves at once; three wait behind it; the sixth and seventh find the queue full.
  for (let i = 0; i < 7; i++) {
    const trace = tracing.start(req)
    tracing.finish(trace, 'GET', '/a', null, 'a', 200, null)
  }
  await tracing.close()
  t.same(tracing.counts, { exported: 5, dropped: 2, failed: 0 }, 'a queue of three: two spans ended while the first batch was out are dropped')
  t.same(batchSizes(sink.received), [2, 2, 1], 'batches of at most two')
})

t.test('past 2048 waiting spans, spans are dropped and counted, and ending a span never waits', async (t) => {
  let release = (): void => undefined
  const sink = await startSink(t, (res, n) => {
    if (n === 1) release = () => res.writeHead(200).end('{}')
    else res.writeHead(200).end('{}')
  })
  const told = { exported: 0, dropped: 0, failed: 0 }
  const exporter = exporterFor(t, sink.url, { onSpans: (outcome, n) => (told[outcome] += n) })
  endSpans(exporter, 512)
  t.ok(await eventually(() => sink.received.length === 1), 'a full batch is being exported, and the collector does not answer yet')
  endSpans(exporter, 2048 + 10)
  t.same(exporter.counts, { exported: 0, dropped: 10, failed: 0 }, 'the queue holds 2048; ten are dropped')
  release()
  await exporter.close()
  t.same(exporter.counts, { exported: 2560, dropped: 10, failed: 0 })
  t.same(told, exporter.counts, 'the metric is told the same')
  t.same(batchSizes(sink.received), [512, 512, 512, 512, 512])
})

t.test('503 is retried, and the retry that succeeds exports the batch', async (t) => {
  const sink = await startSink(t, (res, n) => (n === 1 ? res.writeHead(503).end() : res.writeHead(200).end('{}')))
  const exporter = exporterFor(t, sink.url, { delayMs: 1, backoffMs: 10 })
  endSpans(exporter, 4)
  t.ok(await eventually(() => exporter.counts.exported === 4))
  t.equal(sink.received.length, 2, 'refused once, then accepted')
  t.equal(sink.received[1]?.body, sink.received[0]?.body, 'the same batch again')
  t.same(exporter.counts, { exported: 4, dropped: 0, failed: 0 })
})

t.test("a 429's Retry-After is waited for; a 400 is not retried", async (t) => {
  const sink = await startSink(t, (res, n) => (n === 1 ? res.writeHead(429, { 'retry-after': '0' }).end() : res.writeHead(400).end()))
  const exporter = exporterFor(t, sink.url, { delayMs: 1, backoffMs: 60_000 })
  endSpans(exporter, 2)
  t.ok(await eventually(() => exporter.counts.failed === 2), 'Retry-After: 0 rather than the minute-long backoff')
  t.equal(sink.received.length, 2, 'the 400 ends it')
})

t.test('a collector asking to be retried after a day is not waited for: the batch fails at once and the next one goes out', async (t) => {
  const sink = await startSink(t, (res, n) => (n === 1 ? res.writeHead(503, { 'retry-after': '86400' }).end() : res.writeHead(200).end('{}')))
  const exporter = exporterFor(t, sink.url, { delayMs: 1, timeoutMs: 2_000 })
  endSpans(exporter, 2)
  t.ok(await eventually(() => exporter.counts.failed === 2), 'a wait beyond the export time fails the batch rather than holding the queue')
  t.equal(sink.received.length, 1, 'no retry was made')
  endSpans(exporter, 3)
  t.ok(await eventually(() => exporter.counts.exported === 3), 'the exporter is not stalled')
})

t.test('retries are bounded: a collector that keeps answering 503 gets a few, then the spans count as failed', async (t) => {
  const sink = await startSink(t, (res) => res.writeHead(503).end())
  const exporter = exporterFor(t, sink.url, { delayMs: 1, backoffMs: 5 })
  endSpans(exporter, 3)
  t.ok(await eventually(() => exporter.counts.failed === 3))
  t.equal(sink.received.length, 6, 'the first attempt and five retries')
})

t.test('a network error is retried', async (t) => {
  const sink = await startSink(t, (res, n, req) => (n === 1 ? req.socket.destroy() : res.writeHead(200).end('{}')))
  const exporter = exporterFor(t, sink.url, { delayMs: 1, backoffMs: 10 })
  endSpans(exporter, 1)
  t.ok(await eventually(() => exporter.counts.exported === 1))
  t.equal(sink.received.length, 2)
})

t.test('an export the collector never answers times out, and close() does not hang on it', async (t) => {
  const aborted: boolean[] = []
  const sink = await startSink(t, (_res, _n, req) => req.socket.on('close', () => aborted.push(true)))
  let failed = 0
  const exporter = exporterFor(t, sink.url, { delayMs: 1, timeoutMs: 300, backoffMs: 10, onSpans: (outcome, n) => (failed += outcome === 'failed' ? n : 0) })
  endSpans(exporter, 2)
  t.ok(await eventually(() => sink.received.length === 1))
  await exporter.close()
  t.same(exporter.counts, { exported: 0, dropped: 0, failed: 2 }, 'the batch is given up after its timeout')
  t.equal(failed, 2, 'and counted as failed for the metric')
  t.ok(await eventually(() => aborted.length > 0), 'the request was abandoned')
})

t.test('close() exports what is queued at once, and spans ended after it are ignored', async (t) => {
  const sink = await startSink(t)
  const exporter = exporterFor(t, sink.url, { delayMs: 60_000 })
  endSpans(exporter, 7)
  await exporter.close()
  t.same(batchSizes(sink.received), [7], 'flushed without waiting for the delay')
  endSpans(exporter, 1)
  t.same(exporter.counts, { exported: 7, dropped: 0, failed: 0 })
  t.equal(sink.received.length, 1)
})
