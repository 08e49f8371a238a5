import t from 'tap'
import { exportSettings, exportTuning } from '../../src/telemetry/tracing.js'
import { at, describe, inspect } from './helpers.js'

/** `telemetry.traces`: read at load with positions; the OTEL_* environment when it is absent. */

t.test('telemetry.traces is read with its defaults', async (t) => {
  const { config, problems } = inspect('telemetry:\n  traces:\n    otlp: { endpoint: "http://collector:4318", headers: { x-api-key: k } }\n')
  t.same(problems, [], describe(problems))
  t.same(config?.traces, { otlp: { endpoint: 'http://collector:4318', headers: { 'x-api-key': 'k' } }, sample: 1 })
  t.equal(inspect('store: memory\n').config?.traces, null, 'absent: null')
})

t.test('bad values are refused at their position', async (t) => {
  const cases: Array<[string, string, RegExp, number]> = [
    ['telemetry:\n  traces:\n    otlp: { endpoint: ftp://x }\n', 'telemetry.traces.otlp.endpoint', /not supported here/, 3],
    ['telemetry:\n  traces:\n    otlp: { endpoint: "http://c:4318" }\n    sample: 2\n', 'telemetry.traces.sample', /ratio from 0 to 1/, 4],
    ['telemetry:\n  traces:\n    otlp: { endpoint: "http://c:4318" }\n    sample: lots\n', 'telemetry.traces.sample', /ratio from 0 to 1/, 4],
    ['telemetry:\n  traces:\n    sample: 0.5\n', 'telemetry.traces.otlp', /missing required key `otlp`/, 3],
    [
      'telemetry:\n  traces:\n    otlp: { endpoint: "http://c:4318", headers: { "bad name": v } }\n',
      'telemetry.traces.otlp.headers["bad name"]',
      /not a header name/,
      3,
    ],
    ['telemetry:\n  tracez: {}\n', 'telemetry.tracez', /unknown key/, 2],
  ]
  for (const [yaml, path, message, line] of cases) {
    const { config, problems } = inspect(yaml)
    t.equal(config, null, `refused: ${path}`)
    const found = at(problems, path)
    t.equal(found.length, 1, describe(problems))
    t.match(found[0]?.message, message)
    t.equal(found[0]?.line, line)
  }
})

t.test('without a telemetry section, the standard OTEL_* variables decide', async (t) => {
  t.equal(exportSettings(null, {}), null, 'nothing asked: no export')
  t.same(
    exportSettings(null, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%20b,x=1', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
    {
      url: 'http://c:4318/v1/traces',
      headers: { 'api-key': 'a b', x: '1' },
      sample: 0.25,
      serviceName: 'bearward',
      tuning: {},
    },
  )
  t.equal(
    exportSettings(null, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' })?.url,
    'http://c:4318/custom',
    'the traces endpoint is a full URL',
  )
  t.equal(exportSettings(null, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }), null, 'exporter none')
  t.equal(exportSettings(null, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }), null, 'SDK disabled')
  t.equal(
    exportSettings(null, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER_ARG: '7' })?.sample,
    1,
    'an out-of-range ratio falls back to 1',
  )
  const configured = exportSettings(
    { otlp: { endpoint: 'http://cfg:4318', headers: {} }, sample: 0.1 },
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318', OTEL_SERVICE_NAME: 'edge' },
  )
  t.same(configured, { url: 'http://cfg:4318/v1/traces', headers: {}, sample: 0.1, serviceName: 'edge', tuning: {} }, 'the config wins over the environment')
})

t.test('the export timeout and batch sizes follow the variables the OpenTelemetry SDK read, with the config or without', async (t) => {
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
    OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
    OTEL_BSP_MAX_QUEUE_SIZE: '4096',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '128',
  }
  t.same(exportSettings(null, env)?.tuning, { timeoutMs: 2500, maxQueue: 4096, maxBatch: 128 }, 'from the variables')
  t.same(
    exportSettings({ otlp: { endpoint: 'http://cfg:4318', headers: {} }, sample: 0.1 }, env)?.tuning,
    { timeoutMs: 2500, maxQueue: 4096, maxBatch: 128 },
    'with a telemetry section too',
  )
  t.same(
    exportTuning({ OTEL_EXPORTER_OTLP_TIMEOUT: '2500', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '700' }),
    { timeoutMs: 700 },
    'the traces variable wins over the general one',
  )
  t.same(
    exportTuning({ OTEL_EXPORTER_OTLP_TIMEOUT: '-1', OTEL_BSP_MAX_QUEUE_SIZE: 'lots', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '0' }),
    {},
    'unreadable, negative or zero values keep the defaults',
  )
})
