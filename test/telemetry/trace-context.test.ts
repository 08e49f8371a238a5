import t from 'tap'
import { formatTraceparent, TraceIds, traceOf, tracestateOf } from '../../src/telemetry/trace-context.js'

/** W3C Trace Context: what continues a trace, what starts a new one. */

const ids = new TraceIds()
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'

t.test('a valid traceparent is continued with a new span id of ours', async (t) => {
  const trace = traceOf(`00-${TRACE}-${PARENT}-01`, ids, false)
  t.equal(trace.traceId, TRACE)
  t.equal(trace.parentSpanId, PARENT)
  t.match(trace.spanId, /^[0-9a-f]{16}$/)
  t.not(trace.spanId, PARENT)
  t.equal(trace.flags, 1, 'sampled flag kept')
  t.equal(formatTraceparent(trace), `00-${TRACE}-${trace.spanId}-01`, 'the upstream is told our span is the parent')
  t.equal(traceOf(`00-${TRACE}-${PARENT}-00`, ids, true).flags, 0, "the caller's not-sampled decision is kept")
  t.equal(traceOf(`00-${TRACE}-${PARENT}-03`, ids, false).flags, 1, 'unknown flag bits are dropped, sampled kept')
})

t.test('a future version is read as version 00 where it parses; its extra fields are allowed', async (t) => {
  t.equal(traceOf(`01-${TRACE}-${PARENT}-01-extra`, ids, false).traceId, TRACE)
  t.equal(traceOf(`cc-${TRACE}-${PARENT}-01`, ids, false).traceId, TRACE)
})

t.test('anything else starts a new trace', async (t) => {
  const invalid: Array<string | string[] | undefined> = [
    undefined,
    '',
    'garbage',
    `00-${TRACE}-${PARENT}-01-extra`, // version 00 has nothing after the flags
    `ff-${TRACE}-${PARENT}-01`, // version ff is invalid
    `00-${'0'.repeat(32)}-${PARENT}-01`, // all-zero trace id
    `00-${TRACE}-${'0'.repeat(16)}-01`, // all-zero parent id
    `00-${TRACE.toUpperCase()}-${PARENT}-01`, // upper-case hex
    `00-${TRACE}-${PARENT}-1`, // short flags
    ` 00-${TRACE}-${PARENT}-01`,
    [`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`], // repeated header
  ]
  for (const header of invalid) {
    const trace = traceOf(header, ids, false)
    t.not(trace.traceId, TRACE, `new trace for ${JSON.stringify(header)}`)
    t.match(trace.traceId, /^[0-9a-f]{32}$/)
    t.equal(trace.parentSpanId, null)
    t.equal(trace.flags, 0)
  }
  t.equal(traceOf(undefined, ids, true).flags, 1, 'a new trace is sampled when the sampler says so')
})

t.test('ids are random and never repeat across the pool refill', async (t) => {
  const seen = new Set<string>()
  for (let i = 0; i < 2000; i++) seen.add(ids.traceId())
  t.equal(seen.size, 2000)
})

t.test('tracestate is passed on when it is plain text, joined when repeated', async (t) => {
  t.equal(tracestateOf('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'), 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7')
  t.equal(tracestateOf(['a=1', 'b=2']), 'a=1,b=2')
  t.equal(tracestateOf('bad\u0001value'), null)
  t.equal(tracestateOf('x'.repeat(9000)), null)
  t.equal(tracestateOf(undefined), null)
})
