import t from 'tap'
import { at, describe, inspect } from './helpers.js'

/** `upstream: [..]` and `upstreams`: read at load with positions (docs/traffic.md, Upstream pools). */

const ROUTE = (upstream: string): string => `routes:
  - name: svc
    match: { path: /svc }
    public: true
${upstream}`

t.test('a list of upstreams is a round-robin pool with passive health defaults', async (t) => {
  const { config, problems } = inspect(ROUTE('    upstream: [http://10.0.0.1:3000/api, "http://10.0.0.2:3000/api/"]\n'))
  t.same(problems, [], describe(problems))
  const route = config?.routes[0]
  t.equal(route?.upstream, 'http://10.0.0.1:3000/api', 'the first target is the URL the rest of the route reads')
  t.same(route?.upstreamPool, {
    targets: ['http://10.0.0.1:3000/api', 'http://10.0.0.2:3000/api'],
    balance: 'round_robin',
    health: { path: null, intervalMs: 5000, timeoutMs: 2000, unhealthyAfter: 3, healthyAfter: 2 },
    dnsServers: null,
  })
  t.equal(inspect(ROUTE('    upstream: http://10.0.0.1:3000\n')).config?.routes[0]?.upstreamPool, null, 'one URL: no pool')
})

t.test('upstreams: targets, balance, health and dns as written', async (t) => {
  const { config, problems } = inspect(
    ROUTE(`    upstreams:
      targets: [https://api.internal:8443, https://10.0.0.9:8443]
      balance: least_request
      health: { path: /healthz, interval: 10s, timeout: 500ms, unhealthy_after: 2, healthy_after: 4 }
      dns: { servers: ["10.0.0.53", "10.0.0.54:5353"] }
`),
  )
  t.same(problems, [], describe(problems))
  t.same(config?.routes[0]?.upstreamPool, {
    targets: ['https://api.internal:8443', 'https://10.0.0.9:8443'],
    balance: 'least_request',
    health: { path: '/healthz', intervalMs: 10_000, timeoutMs: 500, unhealthyAfter: 2, healthyAfter: 4 },
    dnsServers: ['10.0.0.53', '10.0.0.54:5353'],
  })
  t.equal(config?.routes[0]?.upstream, 'https://api.internal:8443')
})

t.test('what would make targets differ, or cannot work, is refused at its position', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['    upstream: http://a:1\n    upstreams: { targets: [http://b:1] }\n', 'routes[0].upstreams', /not both/],
    ['    upstream: [http://a:1/api, http://b:1/v2]\n', 'routes[0].upstream[1]', /same scheme and path/],
    ['    upstream: [http://a:1, https://b:1]\n', 'routes[0].upstream[1]', /same scheme and path/],
    ['    upstream: [http://a:1, h2c://b:1]\n', 'routes[0].upstream[1]', /same scheme and path/],
    ['    upstream: [http://a:1, "http://a:1/"]\n', 'routes[0].upstream[1]', /listed twice/],
    ['    upstream: []\n', 'routes[0].upstream', /at least one target/],
    ['    upstream: [ftp://a:1]\n', 'routes[0].upstream[0]', /not supported/],
    ['    upstreams: { balance: random, targets: [http://a:1] }\n', 'routes[0].upstreams.balance', /least_request/],
    ['    upstreams: { targets: [http://a:1], health: { path: healthz } }\n', 'routes[0].upstreams.health.path', /starts with `\/`/],
    ['    upstreams: { targets: [http://a:1], health: { path: /h, interval: 1s, timeout: 2s } }\n', 'routes[0].upstreams.health.timeout', /must not exceed/],
    ['    upstreams: { targets: [http://a:1], health: { healthy_after: 2 } }\n', 'routes[0].upstreams.health.healthy_after', /set `health.path`/],
    ['    upstreams: { targets: [http://a:1], health: { unhealthy_after: 0 } }\n', 'routes[0].upstreams.health.unhealthy_after', /at least 1/],
    ['    upstreams: { targets: [http://a:1], dns: { servers: [] } }\n', 'routes[0].upstreams.dns.servers', /at least one/],
    ['    upstreams: { balance: round_robin }\n', 'routes[0].upstreams.targets', /missing required key/],
    ['', 'routes[0].upstream', /missing required key `upstream` \(or `upstreams`\)/],
  ]
  for (const [yaml, path, message] of cases) {
    const { config, problems } = inspect(ROUTE(yaml))
    t.equal(config, null, `refused: ${yaml.trim()}`)
    const found = at(problems, path)
    t.equal(found.length, 1, `${path}: ${describe(problems)}`)
    t.match(found[0]?.message, message)
  }
})

t.test('upstream_ca and http2 read the pool scheme (shared by every target)', async (t) => {
  const plain = inspect(ROUTE('    upstream: [http://a:1, http://b:1]\n    http2: true\n'))
  t.match(describe(at(plain.problems, 'routes[0].http2')), /h2c:\/\/host:port/)
  const h2c = inspect(ROUTE('    upstream: [h2c://a:1, h2c://b:1]\n'))
  t.same(h2c.problems, [], describe(h2c.problems))
  t.equal(h2c.config?.routes[0]?.upstreamHttp2, true)
})
