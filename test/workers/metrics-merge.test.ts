import t from 'tap'
import { Metrics } from '../../src/metrics.js'
import { addableOnly, mergeExpositions, parseExposition, renderExposition } from '../../src/workers/metrics-merge.js'

/** Two workers' real registries, rendered as each worker renders them for its primary. */
function workers(): [Metrics, Metrics] {
  const a = new Metrics()
  const b = new Metrics()
  a.observeResponse('orders', 200, 0.003)
  a.observeResponse('orders', 200, 0.2)
  a.observeResponse('docs', 404, 0.0001)
  b.observeResponse('orders', 200, 0.004)
  b.observeResponse('orders', 401, 0.0004)
  a.tokensIssued.inc({ grant_type: 'client_credentials' })
  b.tokensIssued.inc({ grant_type: 'client_credentials' }, 2)
  a.configInfo.set(100)
  b.configInfo.set(200)
  return [a, b]
}

function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1))
  return undefined
}

t.test('counters are summed, histograms merged bucket by bucket, gauges kept per worker', async (t) => {
  const [a, b] = workers()
  const merged = renderExposition(
    mergeExpositions([
      { exposition: parseExposition(a.render()), worker: '1' },
      { exposition: parseExposition(b.render()), worker: '2' },
    ]),
  )
  t.equal(sample(merged, 'bearward_requests_total{outcome="200",route="orders"}'), 3)
  t.equal(sample(merged, 'bearward_requests_total{outcome="401",route="orders"}'), 1, 'a series one worker has')
  t.equal(sample(merged, 'bearward_requests_total{outcome="404",route="docs"}'), 1)
  t.equal(sample(merged, 'bearward_tokens_issued_total{grant_type="client_credentials"}'), 3)
  const bucket = (le: string): number | undefined => sample(merged, `bearward_request_duration_seconds_bucket{outcome="200",route="orders",le="${le}"}`)
  t.equal(bucket('0.0025'), 0)
  t.equal(bucket('0.005'), 2, '3 ms (worker 1) and 4 ms (worker 2)')
  t.equal(bucket('0.1'), 2)
  t.equal(bucket('0.25'), 3, '200 ms')
  t.equal(bucket('+Inf'), 3)
  t.equal(sample(merged, 'bearward_request_duration_seconds_count{outcome="200",route="orders"}'), 3)
  t.ok(Math.abs((sample(merged, 'bearward_request_duration_seconds_sum{outcome="200",route="orders"}') ?? 0) - 0.207) < 1e-9)
  t.equal(sample(merged, 'bearward_config_last_reload_timestamp_seconds{worker="1"}'), 100)
  t.equal(sample(merged, 'bearward_config_last_reload_timestamp_seconds{worker="2"}'), 200)
  t.equal(merged.match(/^# TYPE bearward_requests_total counter$/gm)?.length, 1, 'one HELP/TYPE per family')
  t.match(merged, /# TYPE bearward_request_duration_seconds histogram\n/)
  // A histogram family stays together: its series follow its TYPE line, before the next family.
  const lines = merged.split('\n')
  const start = lines.indexOf('# TYPE bearward_request_duration_seconds histogram')
  const next = lines.findIndex((l, i) => i > start && l.startsWith('# HELP'))
  t.ok(
    lines.slice(next).every((l) => !l.startsWith('bearward_request_duration_seconds')),
    'no histogram sample after the next family',
  )
})

t.test('what an exited worker leaves keeps the totals from going down; its gauges go', async (t) => {
  const [a, b] = workers()
  const retired = mergeExpositions([{ exposition: addableOnly(parseExposition(a.render())), worker: null }])
  const merged = renderExposition(
    mergeExpositions(
      [
        { exposition: retired, worker: null },
        { exposition: parseExposition(b.render()), worker: '2' },
      ],
      new Set(['bearward_config_reloads_total']),
    ),
  )
  t.equal(sample(merged, 'bearward_requests_total{outcome="200",route="orders"}'), 3)
  t.equal(sample(merged, 'bearward_config_last_reload_timestamp_seconds{worker="1"}'), undefined)
  t.equal(sample(merged, 'bearward_config_last_reload_timestamp_seconds{worker="2"}'), 200)
  t.notMatch(merged, /bearward_config_reloads_total/, 'an omitted family is left out')
})

t.test('label values with spaces, braces and escapes survive', async (t) => {
  const text = '# TYPE x counter\nx{route="a b}c",q="say \\"hi\\""} 2\nx 1\n'
  const merged = renderExposition(
    mergeExpositions([
      { exposition: parseExposition(text), worker: '1' },
      { exposition: parseExposition(text), worker: '2' },
    ]),
  )
  t.equal(sample(merged, 'x{route="a b}c",q="say \\"hi\\""}'), 4)
  t.equal(sample(merged, 'x'), 2)
})
