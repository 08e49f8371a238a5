import t from 'tap'
import { formatDurationMs, parseDurationMs } from '../../src/config/duration.js'
import { parseSizeBytes } from '../../src/config/size.js'
import { at, inspect } from './helpers.js'

t.test('durations: one unit, or a plain integer of seconds', async (t) => {
  const cases: Array<[string | number, number]> = [
    ['500ms', 500],
    ['30s', 30_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['30d', 2_592_000_000],
    ['0s', 0],
    ['45', 45_000],
    [90, 90_000],
    [' 5m ', 300_000],
  ]
  for (const [input, ms] of cases) t.same(parseDurationMs(input), { ok: true, value: ms }, JSON.stringify(input))
  for (const bad of ['1.5s', '10 minutes', '1h30m', '-5s', 's', '', '5w', '5S', 1.5, -1]) {
    const result = parseDurationMs(bad)
    t.equal(result.ok, false, JSON.stringify(bad))
  }
  t.match(parseDurationMs('10 minutes'), { ok: false, reason: /`10 minutes` is not a duration; write a number and one unit/ })
  t.match(parseDurationMs('99999999999999999d'), { ok: false, reason: 'the duration is too large' })
})

t.test('formatDurationMs picks the largest exact unit', async (t) => {
  t.equal(formatDurationMs(600_000), '10m')
  t.equal(formatDurationMs(90_000), '90s')
  t.equal(formatDurationMs(86_400_000), '1d')
  t.equal(formatDurationMs(1500), '1500ms')
})

t.test('sizes: binary multiples or a number of bytes', async (t) => {
  const cases: Array<[string | number, number]> = [
    ['512kb', 512 * 1024],
    ['10mb', 10 * 1024 * 1024],
    ['1gb', 1024 ** 3],
    ['10MB', 10 * 1024 * 1024],
    ['2MiB', 2 * 1024 * 1024],
    ['100b', 100],
    ['100', 100],
    [4096, 4096],
  ]
  for (const [input, bytes] of cases) t.same(parseSizeBytes(input), { ok: true, value: bytes }, JSON.stringify(input))
  for (const bad of ['10 megs', 'mb', '1.5mb', '-1', '1tb', 1.5, -3]) t.equal(parseSizeBytes(bad).ok, false, JSON.stringify(bad))
})

t.test('seconds fields refuse fractions of a second; ms fields keep milliseconds', async (t) => {
  const { problems } = inspect('gateway:\n  clock_skew: 1500ms\n')
  t.match(at(problems, 'gateway.clock_skew'), [{ line: 2, col: 15, message: 'must be a whole number of seconds, got `1500ms`' }])
  const ok = inspect('gateway:\n  clock_skew: 2000ms\nshutdown_timeout: 1500ms\n')
  t.equal(ok.config?.gateway.clockSkewSec, 2)
  t.equal(ok.config?.shutdownTimeoutMs, 1500)
})

t.test('durations and sizes in a config', async (t) => {
  const yaml = `
authorization_server:
  access_token: { ttl: 15m }
  refresh_token: { ttl: 7d }
  code_ttl: 30
  device: { ttl: 600, interval: 5s }
routes:
  - name: up
    match: { path: /up }
    upstream: http://127.0.0.1:3000
    timeouts: { connect: 250ms, headers: 2, idle: 1m }
    max_body: 512kb
  - name: big
    match: { path: /big }
    upstream: http://127.0.0.1:3000
    max_body: 1048576
`
  const { config, problems } = inspect(yaml)
  t.same(problems, [])
  t.equal(config?.authorizationServer?.accessToken.ttlSec, 900)
  t.equal(config?.authorizationServer?.refreshToken.ttlSec, 7 * 86400)
  t.equal(config?.authorizationServer?.codeTtlSec, 30)
  t.same(config?.authorizationServer?.device, { ttlSec: 600, intervalSec: 5 })
  t.same(config?.routes[0]?.timeouts, { connectMs: 250, headersMs: 2000, idleMs: 60_000 })
  t.equal(config?.routes[0]?.maxBodyBytes, 512 * 1024)
  t.equal(config?.routes[1]?.maxBodyBytes, 1_048_576)
})

t.test('out-of-range durations', async (t) => {
  const { problems } = inspect(`
authorization_server:
  code_ttl: 11m
  access_token: { ttl: 0s }
  device: { ttl: 10s, interval: 10s }
  rate_limit: { login_delay_max: 2h, known_browser_ttl: 0s, login_address_max_failures: 0, client_auth_address_max_failures: 0, ipv6_prefix: 129 }
gateway:
  clock_skew: 61s
routes:
  - name: r
    match: { path: /r }
    upstream: http://127.0.0.1:3000
    timeouts: { connect: 0ms }
`)
  t.match(at(problems, 'authorization_server.code_ttl'), [{ message: 'must be at most 10m, got `11m`' }])
  t.match(at(problems, 'authorization_server.access_token.ttl'), [{ message: 'must be at least 1s, got `0s`' }])
  t.match(at(problems, 'authorization_server.device.interval'), [{ message: /must be shorter than the device code ttl/ }])
  t.match(at(problems, 'gateway.clock_skew'), [{ message: 'must be at most 1m, got `61s`' }])
  t.match(
    at(problems, 'authorization_server.rate_limit.login_delay_max'),
    [{ message: 'must be at most 1h, got `2h`' }],
    'a wait longer than an hour is a lockout',
  )
  t.match(at(problems, 'authorization_server.rate_limit.known_browser_ttl'), [{ message: 'must be at least 1s, got `0s`' }])
  t.match(at(problems, 'authorization_server.rate_limit.login_address_max_failures'), [{ message: /at least 1/ }])
  t.match(at(problems, 'authorization_server.rate_limit.client_auth_address_max_failures'), [{ message: /at least 1/ }])
  t.match(at(problems, 'authorization_server.rate_limit.ipv6_prefix'), [{ message: /at most 128/ }], 'a prefix longer than an address')
  t.match(at(problems, 'routes[0].timeouts.connect'), [{ message: 'must be at least 1ms, got `0ms`' }])
})

t.test('type errors in duration and size fields', async (t) => {
  const { problems } = inspect(`
authorization_server:
  code_ttl: [1]
routes:
  - name: r
    match: { path: /r }
    upstream: http://127.0.0.1:3000
    max_body: true
`)
  t.match(at(problems, 'authorization_server.code_ttl'), [{ message: 'expected a duration like `30s`, got a list' }])
  t.match(at(problems, 'routes[0].max_body'), [{ message: /expected a size like `512kb` or `10mb`, got `true`/ }])
})
