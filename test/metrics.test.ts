import t from 'tap'
import { Metrics } from '../src/metrics.js'

t.test('Prometheus text: counters, cumulative histogram buckets, escaped labels', async (t) => {
  const m = new Metrics()
  m.observeRequest('orders', '200', 0.002)
  m.observeRequest('orders', '200', 0.3)
  m.observeRequest('a"b\\c', '401', 20)
  m.tokensIssued.inc({ grant: 'client_credentials' })
  m.reloads.inc({ result: 'ok' })
  const text = m.render()
  t.match(text, /# TYPE bearward_requests_total counter/)
  t.match(text, /bearward_requests_total\{outcome="200",route="orders"\} 2/)
  t.match(text, /bearward_request_duration_seconds_bucket\{outcome="200",route="orders",le="0.0025"\} 1/)
  t.match(text, /bearward_request_duration_seconds_bucket\{outcome="200",route="orders",le="0.5"\} 2/, 'buckets are cumulative')
  t.match(text, /bearward_request_duration_seconds_bucket\{outcome="200",route="orders",le="\+Inf"\} 2/)
  t.match(text, /bearward_request_duration_seconds_count\{outcome="200",route="orders"\} 2/)
  t.match(text, /bearward_request_duration_seconds_bucket\{outcome="401",route="a\\"b\\\\c",le="10"\} 0/, 'quotes and backslashes escaped')
  t.match(text, /bearward_tokens_issued_total\{grant="client_credentials"\} 1/)
  t.equal(m.requests.get({ route: 'orders', outcome: '200' }), 2, 'the fast path and the labelled API count the same series')
  t.ok(text.endsWith('\n'))
})
