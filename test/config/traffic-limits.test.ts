/**
 * Config of traffic limits (docs/traffic.md): `rate_limits`, `quotas`, a
 * tool's `rate_limit` beside its scopes, and a client's `rate_limits`
 * overrides; what each refuses, with its path.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const routes = (route: string, extraRoutes = ''): string => `
authorization_server:
  scopes: { "orders:read": Read orders }
  clients:
    - client_id: paying
      type: confidential
      secret_hash: "${HASH}"
      grant_types: [client_credentials]
      scopes: [orders:read]
      rate_limits: { per-client: { limit: 1000 } }
routes:
  - name: api
    match: { path: /api }
    upstream: http://127.0.0.1:3000
${route
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
${extraRoutes}`

t.test('rate_limits and quotas are read with their defaults', async (t) => {
  const c = inspect(
    routes(`
rate_limits:
  - { name: per-client, key: client, limit: 100, per: 1m, burst: 20 }
  - { name: per-person, key: subject, limit: 10, per: 10s, on_store_failure: deny }
quotas:
  - { name: daily, key: client, limit: 10000, per: day }
`),
  )
  t.same(c.problems, [], describe(c.problems))
  t.same(c.config?.routes[0]?.limits, {
    rateLimits: [
      { name: 'per-client', key: 'client', limit: 100, perMs: 60_000, burst: 20, onStoreFailure: 'allow', tool: null },
      { name: 'per-person', key: 'subject', limit: 10, perMs: 10_000, burst: 0, onStoreFailure: 'deny', tool: null },
    ],
    quotas: [{ name: 'daily', key: 'client', limit: 10000, per: 'day', onStoreFailure: 'allow' }],
  })
  t.same(c.config?.authorizationServer?.clients[0]?.rateLimits, { 'per-client': 1000 }, "the paying client's override")
})

t.test('a route without limits has none (null): it pays nothing', async (t) => {
  const c = inspect(routes('scopes: { "*": [orders:read] }').replace(/ {6}rate_limits:.*\n/, ''))
  t.same(c.problems, [], describe(c.problems))
  t.equal(c.config?.routes[0]?.limits, null)
})

t.test('refusals: duplicate names, limit < 1, per not a duration, unknown key, tool key off MCP', async (t) => {
  const c = inspect(
    routes(`
rate_limits:
  - { name: per-client, key: client, limit: 0, per: 1m }
  - { name: per-client, key: client, limit: 5, per: soon }
  - { name: b, key: tool, limit: 5, per: 1m }
  - { name: c, key: ip, limit: 5, per: 1m }
  - { name: d, key: client, limit: 5, per: 100ms }
quotas:
  - { name: per-client, key: client, limit: 5, per: week }
`),
  )
  t.match(at(c.problems, 'routes[0].rate_limits[0].limit'), [{ message: /at least 1|>= 1|minimum/i }])
  t.match(at(c.problems, 'routes[0].rate_limits[1].per'), [{}])
  t.match(at(c.problems, 'routes[0].rate_limits[1]'), [{ message: /already defined on this route/ }])
  t.match(at(c.problems, 'routes[0].rate_limits[2].key'), [{ message: /only an MCP route/ }])
  t.match(at(c.problems, 'routes[0].rate_limits[3].key'), [{ message: /not a limit key/ }])
  t.match(at(c.problems, 'routes[0].rate_limits[4].per'), [{}])
  t.match(at(c.problems, 'routes[0].quotas[0].per'), [{ message: /not a quota period.*`day`, `month`/ }])
  t.match(at(c.problems, 'routes[0].quotas[0]'), [{ message: /already defined on this route/ }], 'unique among rate limits and quotas together')
  t.equal(c.config, null)
})

t.test('a public route counts by address only', async (t) => {
  const c = inspect(
    routes(`
public: true
rate_limits:
  - { name: per-client, key: client, limit: 5, per: 1m }
  - { name: by-address, key: address, limit: 5, per: 1m }
`),
  )
  t.match(at(c.problems, 'routes[0].rate_limits[0].key'), [{ message: /public route checks no token.*key: address/ }])
  t.equal(at(c.problems, 'routes[0].rate_limits[1].key').length, 0)
})

t.test("a tool's rule takes rate_limit beside its scopes, or alone; named tool:<name>, keyed by client", async (t) => {
  const c = inspect(
    routes(`
rate_limits: [{ name: per-client, key: client, limit: 100, per: 1m }]
mcp:
  tools:
    search: { scopes: [orders:read], rate_limit: { limit: 10, per: 1m } }
    export: { rate_limit: { limit: 2, per: 1h, burst: 1, key: subject } }
    plain: [orders:read]
`),
  )
  t.same(c.problems, [], describe(c.problems))
  const limits = c.config?.routes[0]?.limits
  t.same(limits?.rateLimits.slice(1), [
    { name: 'tool:search', key: 'client', limit: 10, perMs: 60_000, burst: 0, onStoreFailure: 'allow', tool: 'search' },
    { name: 'tool:export', key: 'subject', limit: 2, perMs: 3_600_000, burst: 1, onStoreFailure: 'allow', tool: 'export' },
  ])
  t.same(c.config?.routes[0]?.mcp?.tools, { search: ['orders:read'], plain: ['orders:read'] }, 'the scopes are read as before')
  const bad = inspect(
    routes(`
rate_limits: [{ name: per-client, key: client, limit: 100, per: 1m }]
mcp:
  tools:
    search: { scopes: [orders:read], rate_limit: { limit: 0, per: 1m, every: 2 } }
`),
  )
  t.match(at(bad.problems, 'routes[0].mcp.tools.search.rate_limit.limit'), [{}])
  t.match(at(bad.problems, 'routes[0].mcp.tools.search.rate_limit.every'), [{ message: /unknown key/ }])
  t.equal(bad.problems.filter((p) => p.path === 'routes[0].mcp.tools.search.rate_limit.every').length, 1, 'reported once')
  const onPrompt = inspect(
    routes(`
rate_limits: [{ name: per-client, key: client, limit: 100, per: 1m }]
mcp:
  prompts:
    p: { scopes: [orders:read], rate_limit: { limit: 1, per: 1m } }
`),
  )
  t.match(at(onPrompt.problems, 'routes[0].mcp.prompts.p.rate_limit'), [{ message: /unknown key/ }], 'only tools have rate limits')
})

t.test("a client's override must name a limit of some route (refused: a typo would leave a paying tier unserved)", async (t) => {
  const c = inspect(
    routes(`
rate_limits: [{ name: per-clinet, key: client, limit: 100, per: 1m }]
`),
  )
  t.match(at(c.problems, 'authorization_server.clients[paying].rate_limits.per-client'), [
    { message: /no route has a rate limit or quota named `per-client`.*`per-clinet`/ },
  ])
})
