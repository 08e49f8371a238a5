import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ROOT_CONTEXT, SamplingDecision } from '@opentelemetry/api'
import { TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace'
import t, { type Test } from 'tap'
import { RatioSampler } from '../../src/telemetry/ratio-sampler.js'
import { TraceIds } from '../../src/telemetry/trace-context.js'
import { Tracing } from '../../src/telemetry/tracing.js'
import { closeServer } from '../helpers/http.js'

/**
 * Tracing.start decides the sampling with bearward's own sampler: its
 * decisions must be the OpenTelemetry SDK's, ParentBased over
 * TraceIdRatioBased, so bearward keeps the traces other services sampling by
 * ratio keep; and a sampled new trace must keep the trace id decided on.
 */

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'

/** A request as Tracing.start reads it: headers, method, protocol version, peer. */
function request(headers: Record<string, string> = {}): IncomingMessage {
  return { headers, method: 'GET', httpVersion: '1.1', socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage
}

async function tracingAt(sample: number, t: Test): Promise<Tracing> {
  // A receiver that takes every export, so closing (which flushes the recorded spans) does not wait on retries.
  const receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const { port } = receiver.address() as AddressInfo
  const tracing = await Tracing.create({ url: `http://127.0.0.1:${port}/v1/traces`, headers: {}, sample, serviceName: 'bearward-test', tuning: {} })
  t.teardown(async () => {
    await tracing.close()
    await closeServer(receiver)
  })
  return tracing
}

t.test('a new trace is sampled exactly when the SDK sampler samples its trace id, and keeps that id', async (t) => {
  const tracing = await tracingAt(0.5, t)
  const reference = new TraceIdRatioBasedSampler(0.5)
  let sampled = 0
  let mismatches = 0
  for (let i = 0; i < 400; i++) {
    const trace = tracing.start(request())
    const expected = reference.shouldSample(ROOT_CONTEXT, trace.traceId).decision === SamplingDecision.RECORD_AND_SAMPLED
    if ((trace.span !== null) !== expected) mismatches++
    t.equal(trace.flags, expected ? 1 : 0)
    if (trace.span !== null) {
      sampled++
      t.equal(trace.span.traceId, trace.traceId, 'the recorded span carries the trace id sampled on')
      t.equal(trace.span.spanId, trace.spanId)
      tracing.finish(trace, 'GET', '/x', null, 'r', 200, null)
    }
  }
  t.equal(mismatches, 0, "every decision is the SDK sampler's")
  // Binomial(400, 0.5): 200 ± 10. Had the SDK drawn a trace id of its own, only a quarter would be recorded.
  t.ok(sampled > 150 && sampled < 250, `about half sampled (${sampled} of 400)`)
})

t.test("a caller's sampled flag is followed either way, whatever the ratio", async (t) => {
  const never = await tracingAt(0, t)
  const followed = never.start(request({ traceparent: `00-${TRACE}-${PARENT}-01` }))
  t.not(followed.span, null, 'sampled by the caller: recorded at ratio 0')
  t.equal(followed.traceId, TRACE)
  t.equal(followed.parentSpanId, PARENT)
  t.equal(followed.flags, 1)
  never.finish(followed, 'GET', '/x', null, 'r', 200, null)

  const always = await tracingAt(1, t)
  const declined = always.start(request({ traceparent: `00-${TRACE}-${PARENT}-00` }))
  t.equal(declined.span, null, 'not sampled by the caller: not recorded at ratio 1')
  t.equal(declined.traceId, TRACE)
  t.equal(declined.parentSpanId, PARENT)
  t.equal(declined.flags, 0)
  t.not(declined.spanId, PARENT, 'our own span id all the same')
  const fresh = always.start(request())
  t.not(fresh.span, null, 'a new trace at ratio 1 is recorded')
  always.finish(fresh, 'GET', '/x', null, 'r', 200, null)
})

t.test("the ratio sampler decides as the SDK's TraceIdRatioBased sampler, at every ratio", async (t) => {
  const ids = new TraceIds()
  const traceIds = ['ffffffffffffffffffffffffffffffff', '00000000000000000000000000000001', 'ABCDEF0123456789abcdef0123456789'.toLowerCase()]
  for (let i = 0; i < 2000; i++) traceIds.push(ids.traceId())
  for (const ratio of [0, 1e-9, 0.01, 0.1, 0.25, 0.5, 0.999, 1, -1, 2, Number.NaN]) {
    const ours = new RatioSampler(ratio)
    const sdk = new TraceIdRatioBasedSampler(ratio)
    const differing = traceIds.filter((id) => ours.sampled(id) !== (sdk.shouldSample(ROOT_CONTEXT, id).decision === SamplingDecision.RECORD_AND_SAMPLED))
    t.same(differing, [], `ratio ${ratio}: the same decision for every trace id`)
  }
})
