/**
 * Rate limits and quotas at the gateway (docs/traffic.md), through a real
 * gateway and upstream on the memory store with a manual clock: who is
 * counted, what the client is told (429, Retry-After, the RateLimit fields
 * read by a parser written from the draft), that a refused request never
 * reaches the upstream, and the attacks of issue #44 (spoofed
 * X-Forwarded-For, path variants, HEAD against GET, MCP batches and name
 * spellings).
 */
import t, { type Test } from 'tap'
import { readRateLimitFields } from '../helpers/ratelimit-fields.js'
import { type Harness, type Reply, startGateway } from './fixture.js'

const SCOPED = `scopes: { "*": [orders:read] }`

function route(upstream: string, limits: string, extra = SCOPED): string {
  return `
  - name: api
    match: { path: /api }
    upstream: ${upstream}
    ${extra}
${limits
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}`
}

async function gateway(
  t: Test,
  limits: string,
  o: { extra?: string; top?: string; upstreamHandler?: Parameters<typeof startGateway>[0]['upstreamHandler'] } = {},
): Promise<Harness> {
  const gw = await startGateway({
    routes: (up) => route(up, limits, o.extra),
    ...(o.top === undefined ? {} : { extra: o.top }),
    ...(o.upstreamHandler === undefined ? {} : { upstreamHandler: o.upstreamHandler }),
  })
  t.teardown(() => gw.close())
  return gw
}

function fields(reply: Reply): ReturnType<typeof readRateLimitFields> {
  return readRateLimitFields(reply.headers)
}

t.test('a client gets `limit` requests, then 429 with Retry-After and the fields; another client is not affected', async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: per-client, key: client, limit: 3, per: 1m }]')
  const web = await gw.mint()
  const answers: Reply[] = []
  for (let i = 0; i < 4; i++) answers.push(await gw.get('/api/orders', web))
  t.same(
    answers.map((a) => a.status),
    [200, 200, 200, 429],
  )
  t.equal(gw.upstream.seen.length, 3, 'the refused request did not reach the upstream')
  for (const [i, a] of answers.slice(0, 3).entries()) {
    const f = fields(a)
    t.same(f.policies, [{ name: 'per-client', q: 3, w: 60 }], `answer ${i + 1}: the policy`)
    t.same(f.states.get('per-client'), { name: 'per-client', r: 2 - i, t: 20 * (i + 1) }, `answer ${i + 1}: remaining and reset`)
  }
  const refused = answers[3] as Reply
  t.equal(refused.headers['retry-after'], '20', 'one interval (60 s / 3)')
  t.same(fields(refused).states.get('per-client'), { name: 'per-client', r: 0, t: 60 })
  t.match(refused.json(), { error: 'too_many_requests' })
  const other = await gw.get('/api/orders', await gw.mint({ claims: { client_id: 'other' } }))
  t.equal(other.status, 200, 'another client has its own count')
  gw.clock.advance(20_000)
  t.equal((await gw.get('/api/orders', web)).status, 200, 'one more after one interval')
  t.equal(gw.metrics.trafficLimitDecisions.get({ route: 'api', limit: 'per-client', result: 'allowed' }), 5)
  t.equal(gw.metrics.trafficLimitDecisions.get({ route: 'api', limit: 'per-client', result: 'limited' }), 1)
})

t.test('burst: `limit` + `burst` back to back', async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: per-client, key: client, limit: 2, per: 1m, burst: 2 }]')
  const web = await gw.mint()
  const statuses = []
  for (let i = 0; i < 5; i++) statuses.push((await gw.get('/api/x', web)).status)
  t.same(statuses, [200, 200, 200, 200, 429])
})

t.test("a person's limit (key: subject) follows them across clients", async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: per-person, key: subject, limit: 2, per: 1m }]')
  const viaWeb = await gw.mint({ claims: { client_id: 'web', sub: 'alice' } })
  const viaCli = await gw.mint({ claims: { client_id: 'cli', sub: 'alice' } })
  t.equal((await gw.get('/api/x', viaWeb)).status, 200)
  t.equal((await gw.get('/api/x', viaCli)).status, 200)
  t.equal((await gw.get('/api/x', viaCli)).status, 429, "alice's third request, through another client")
  t.equal((await gw.get('/api/x', await gw.mint({ claims: { client_id: 'cli', sub: 'bob' } }))).status, 200, 'bob is not alice')
})

t.test('several limits apply: the strictest answers, and both are in the fields', async (t) => {
  const gw = await gateway(
    t,
    `rate_limits:
  - { name: per-client, key: client, limit: 100, per: 1m }
  - { name: per-grant, key: grant, limit: 1, per: 1m }`,
  )
  const token = await gw.mint({ claims: { grant_id: 'g1' } })
  const ok = await gw.get('/api/x', token)
  t.same(
    fields(ok).policies.map((p) => p.name),
    ['per-client', 'per-grant'],
  )
  const refused = await gw.get('/api/x', token)
  t.equal(refused.status, 429)
  t.equal(refused.headers['retry-after'], '60', 'the per-grant limit is the reason')
  t.equal(fields(refused).states.get('per-client')?.r, 99, 'the refused request was not counted by the other limit')
  t.equal((await gw.get('/api/x', await gw.mint({ claims: { grant_id: 'g2' } }))).status, 200, 'another grant of the same client')
})

t.test('a quota counts per UTC calendar day', async (t) => {
  const gw = await gateway(t, 'quotas: [{ name: daily, key: client, limit: 2, per: day }]')
  const web = await gw.mint({ expIn: 3 * 86_400 })
  gw.clock.advance(23 * 3_600_000)
  t.equal((await gw.get('/api/x', web)).status, 200)
  const second = await gw.get('/api/x', web)
  t.same(fields(second).policies, [{ name: 'daily', q: 2, w: 86_400 }])
  t.same(fields(second).states.get('daily'), { name: 'daily', r: 0, t: 3600 }, 'an hour to midnight UTC')
  const refused = await gw.get('/api/x', web)
  t.equal(refused.status, 429)
  t.equal(refused.headers['retry-after'], '3600')
  gw.clock.advance(3_600_000)
  t.equal((await gw.get('/api/x', web)).status, 200, 'a new day')
})

t.test("the upstream's own RateLimit fields are replaced by the gateway's", async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: per-client, key: client, limit: 5, per: 1m }]', {
    upstreamHandler: (_req, res) => {
      res.setHeader('RateLimit-Policy', '"upstream";q=1000;w=1')
      res.setHeader('RateLimit', '"upstream";r=999;t=1')
      res.end('ok')
    },
  })
  const reply = await gw.get('/api/x', await gw.mint())
  t.equal(reply.status, 200)
  t.same(
    fields(reply).policies.map((p) => p.name),
    ['per-client'],
  )
  t.notMatch(String(reply.headers.ratelimit), /upstream/)
})

t.test('HEAD and GET count the same; path variants count under the route they are judged under', async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: per-client, key: client, limit: 4, per: 1m }]')
  const web = await gw.mint()
  const auth = { authorization: `Bearer ${web}` }
  const statuses = [
    (await gw.send('/api/x', { headers: auth })).status,
    (await gw.send('/api/x', { method: 'HEAD', headers: auth })).status,
    (await gw.send('/api/%78', { headers: auth })).status,
    (await gw.send('/api/./x', { headers: auth })).status,
  ]
  t.same(statuses, [200, 200, 200, 200], 'four spellings of one resource')
  const upper = await gw.send('/API/x', { headers: auth })
  t.equal(upper.status, 404, 'another case is not this route (match is case-sensitive): nothing forwarded either')
  t.equal((await gw.send('/api/x', { method: 'HEAD', headers: auth })).status, 429, 'the fifth, whatever its method')
  t.equal(gw.upstream.seen.length, 4)
})

t.test('public route by address: X-Forwarded-For from an untrusted peer changes nothing', async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: by-address, key: address, limit: 2, per: 1m }]', { extra: 'public: true' })
  const statuses = []
  for (let i = 0; i < 20; i++)
    statuses.push((await gw.send('/api/x', { headers: { 'x-forwarded-for': `198.51.100.${i}`, forwarded: `for=203.0.113.${i}` } })).status)
  t.same(statuses.slice(0, 3), [200, 200, 429])
  t.equal(statuses.filter((s) => s === 200).length, 2, 'twenty spoofed addresses, one peer: counted as one')
  t.equal(gw.store.trafficLimits.size, 1, 'one key held')
})

t.test('behind a trusted proxy: the forwarded address is counted, an IPv6 one by its /64', async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: by-address, key: address, limit: 1, per: 1m }]', {
    extra: 'public: true',
    top: 'gateway: { trusted_proxies: [127.0.0.1] }',
  })
  t.equal((await gw.send('/api/x', { headers: { 'x-forwarded-for': '198.51.100.1' } })).status, 200)
  t.equal((await gw.send('/api/x', { headers: { 'x-forwarded-for': '198.51.100.2' } })).status, 200, 'another client address')
  t.equal((await gw.send('/api/x', { headers: { 'x-forwarded-for': '198.51.100.1' } })).status, 429)
  t.equal((await gw.send('/api/x', { headers: { 'x-forwarded-for': '2001:db8:1:2::1' } })).status, 200)
  const rotated = []
  for (let i = 2; i < 12; i++) rotated.push((await gw.send('/api/x', { headers: { 'x-forwarded-for': `2001:db8:1:2:${i.toString(16)}::${i}` } })).status)
  t.same(new Set(rotated), new Set([429]), 'ten addresses of one /64 are one client')
})

t.test('key explosion: random client ids each get a key, and the memory held stays bounded', async (t) => {
  const gw = await gateway(t, 'rate_limits: [{ name: per-client, key: client, limit: 1, per: 1m }]')
  for (let i = 0; i < 50; i++) t.equal((await gw.get('/api/x', await gw.mint({ claims: { client_id: `random-${i}` } }))).status, 200)
  t.equal(gw.store.trafficLimits.size, 50, 'one hashed key per client id')
  t.ok(gw.store.trafficLimits.size <= 100_000, 'below the bound (store test: past it, the oldest key goes)')
})

t.test('store unreachable: a closed route stays closed; an open one follows on_store_failure, logged once', async (t) => {
  const limits = `rate_limits: [{ name: per-client, key: client, limit: 5, per: 1m }]`
  const gw = await startGateway({
    routes: (up) => `
  - name: closed
    match: { path: /closed }
    upstream: ${up}
    ${SCOPED}
    ${limits}
  - name: open-allow
    match: { path: /allow }
    upstream: ${up}
    ${SCOPED}
    store_unavailable: open
    ${limits}
  - name: open-deny
    match: { path: /deny }
    upstream: ${up}
    ${SCOPED}
    store_unavailable: open
    rate_limits: [{ name: per-client, key: client, limit: 5, per: 1m, on_store_failure: deny }]`,
  })
  t.teardown(() => gw.close())
  const web = await gw.mint()
  t.equal((await gw.get('/allow/x', web)).status, 200)
  await gw.store.close()
  const closed = await gw.get('/closed/x', web)
  t.equal(closed.status, 503, 'closed stays closed')
  const allowed = await gw.get('/allow/x', web)
  t.equal(allowed.status, 200, 'open + allow: served')
  t.equal(allowed.headers.ratelimit, undefined, 'with no fields: nothing true could be said')
  t.equal((await gw.get('/allow/x', web)).status, 200)
  t.equal((await gw.get('/deny/x', web)).status, 503, 'open + deny: refused')
  t.equal(gw.metrics.trafficLimitStoreFailures.get({ route: 'open-allow', result: 'allowed' }), 2)
  t.equal(gw.metrics.trafficLimitStoreFailures.get({ route: 'closed', result: 'refused' }), 1)
  t.equal(gw.logs.filter((l) => l.includes('traffic limits: store unreachable')).length, 1, 'one outage, one log line')
})

const MCP_ROUTE = (up: string): string => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": [mcp] }
    mcp:
      tools:
        search: { rate_limit: { limit: 2, per: 1m } }
        other: [mcp]`

function rpc(gw: Harness, token: string, body: unknown): Promise<Reply> {
  return gw.send('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

const call = (id: number, name: string): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })

t.test("MCP: a tool's limit counts only that tool; the refusal is a JSON-RPC error with the fields", async (t) => {
  const gw = await startGateway({ routes: MCP_ROUTE })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp' })
  t.equal((await rpc(gw, token, call(1, 'search'))).status, 200)
  t.equal((await rpc(gw, token, call(2, 'search'))).status, 200)
  for (let i = 0; i < 5; i++) t.equal((await rpc(gw, token, call(10 + i, 'other'))).status, 200, 'another tool is not counted')
  t.equal((await rpc(gw, token, { jsonrpc: '2.0', id: 20, method: 'tools/list' })).status, 200, 'nor other methods')
  const refused = await rpc(gw, token, call(3, 'search'))
  t.equal(refused.status, 429)
  t.same(refused.json(), { jsonrpc: '2.0', id: 3, error: { code: -32000, message: 'Too Many Requests: retry after 30 s' } })
  t.equal(refused.headers['retry-after'], '30')
  t.same(fields(refused).policies, [{ name: 'tool:search', q: 2, w: 60 }])
  const seen = gw.upstream.seen.length
  t.equal((await rpc(gw, token, call(4, 'SEARCH'))).status, 429, 'another case of the name is the same tool')
  t.equal(
    (await rpc(gw, token, '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"\\u0073earch","arguments":{}}}')).status,
    429,
    'a JSON escape is the same tool',
  )
  t.equal((await rpc(gw, token, call(6, 'ｓｅａｒｃｈ'))).status, 429, 'a full-width spelling folds to the same tool')
  t.equal(gw.upstream.seen.length, seen, 'none of them reached the server')
})

t.test('MCP: a JSON-RPC batch costs one per call', async (t) => {
  const gw = await startGateway({ routes: MCP_ROUTE })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp', claims: { client_id: 'batcher' } })
  const batch = await rpc(gw, token, [call(1, 'search'), call(2, 'search'), call(3, 'search')])
  t.equal(batch.status, 429, 'three calls in one request against a limit of two')
  t.equal(batch.json().id, null, 'a batch has no single id')
  t.equal(gw.upstream.seen.length, 0)
  const two = await rpc(gw, token, [call(4, 'search'), call(5, 'other'), call(6, 'search')])
  t.equal(two.status, 200, 'two calls of it fit')
  t.equal(fields(two).states.get('tool:search')?.r, 0)
  t.equal((await rpc(gw, token, call(7, 'search'))).status, 429)
})

t.test('a route without limits has no limit step: no fields, nothing counted, beside a route with one', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: plain
    match: { path: /plain }
    upstream: ${up}
    ${SCOPED}
  - name: api
    match: { path: /api }
    upstream: ${up}
    ${SCOPED}
    rate_limits: [{ name: per-client, key: client, limit: 1, per: 1m }]`,
  })
  t.teardown(() => gw.close())
  const web = await gw.mint()
  for (let i = 0; i < 3; i++) {
    const reply = await gw.get('/plain/x', web)
    t.equal(reply.status, 200)
    t.equal(reply.headers.ratelimit, undefined)
    t.equal(reply.headers['ratelimit-policy'], undefined)
  }
  t.equal(gw.store.trafficLimits.size, 0, 'the store was not asked')
  t.equal((await gw.get('/api/x', web)).status, 200)
  t.equal(gw.store.trafficLimits.size, 1)
})
