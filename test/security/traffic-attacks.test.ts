/**
 * The adversarial pass on issue #44's traffic policy (docs/traffic.md):
 * what a caller with a valid token, or a hostile upstream, can send to get
 * more than its limits allow, to read another's counts, or to keep a
 * concurrency slot. Real gateway and upstream on the memory store, manual
 * clock; every test asserts the refusal and what reached the upstream.
 */
import { type IncomingMessage, request } from 'node:http'
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { rateRule } from '../../src/gateway/limits/plan.js'
import { MemoryScope } from '../../src/store/memory/scope.js'
import { MemoryTrafficLimits } from '../../src/store/traffic-limits/memory.js'
import { readRateLimitFields } from '../helpers/ratelimit-fields.js'
import { type Harness, type Reply, startGateway } from '../gateway/fixture.js'

async function gateway(t: Test, routes: (up: string) => string, upstreamHandler?: Parameters<typeof startGateway>[0]['upstreamHandler']): Promise<Harness> {
  const gw = await startGateway({ routes, ...(upstreamHandler === undefined ? {} : { upstreamHandler }) })
  t.teardown(() => gw.close())
  return gw
}

function rpc(gw: Harness, token: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return gw.send('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

/** POST `body` to /mcp; the status only (a 60,000-call batch's answer is large; its headers are not read here). */
function postStatus(gw: Harness, token: string, body: string): Promise<number> {
  const url = new URL(gw.url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/mcp',
        agent: false,
        maxHeaderSize: 64 * 1024 * 1024,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

const call = (id: number, name: string): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })

/** An MCP route whose tool `search` may be called twice a minute per client. */
const SEARCH_LIMITED = (up: string): string => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": [mcp] }
    mcp:
      tools:
        search: { rate_limit: { limit: 2, per: 1m } }`

t.test('a flood of invented tool names does not forget a client’s quota on another route (memory store)', async (t) => {
  // The memory store holds 100,000 keys in two generations; a batch of invented tool names under a
  // `key: tool` limit is one key per name. Before the fix, two such requests pushed every other key
  // out, and a client whose daily quota was spent had it whole again.
  const gw = await gateway(
    t,
    (up) => `
  - name: api
    match: { path: /api }
    upstream: ${up}
    scopes: { "*": [orders:read] }
    quotas: [{ name: daily, key: client, limit: 2, per: day }]
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": [mcp] }
    rate_limits: [{ name: per-tool, key: tool, limit: 1000, per: 1m }]
    mcp: { max_body: 8mb, tools: { search: [mcp] } }`,
    (req: IncomingMessage, res) => {
      res.writeHead(req.url?.startsWith('/mcp') ? 202 : 200).end()
    },
  )
  const api = await gw.mint({ claims: { client_id: 'mallory' } })
  t.same(
    [(await gw.get('/api/x', api)).status, (await gw.get('/api/x', api)).status, (await gw.get('/api/x', api)).status],
    [200, 200, 429],
    'the quota is spent',
  )
  const mcp = await gw.mint({ scope: 'mcp', claims: { client_id: 'mallory' } })
  const perRequest = 60_000
  for (let r = 0; r < 2; r++) {
    const names = Array.from({ length: perRequest }, (_, i) => `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t${r}-${i}"}}`)
    t.equal(await postStatus(gw, mcp, `[${names.join(',')}]`), 202, `flood ${r + 1}: ${perRequest} invented names, each a whole allowance of its own`)
  }
  t.ok(gw.store.trafficLimits.size <= 110_000, `keys held stay bounded: ${gw.store.trafficLimits.size}`)
  const after = await gw.get('/api/x', api)
  t.equal(after.status, 429, 'the spent quota is still spent')
  t.equal(readRateLimitFields(after.headers).states.get('daily')?.r, 0)
  t.equal(gw.upstream.seen.filter((s) => s.url.startsWith('/api')).length, 2, 'the api upstream saw the quota’s two requests only')
})

t.test('memory store: keys of tool names push out only other tool names, each kind within its bound', async (t) => {
  const limits = new MemoryTrafficLimits(new MemoryScope(new ManualClock()), 4, 4)
  const onePerMin = rateRule(1, 60_000, 0)
  await limits.take([{ key: 'client-a', cost: 1, rule: onePerMin }])
  await limits.take([{ key: 'tool-search', cost: 1, rule: onePerMin, named: true }])
  for (let i = 0; i < 1000; i++) {
    await limits.take([{ key: `invented-${i}`, cost: 1, rule: onePerMin, named: true }])
    if (limits.size > 8) t.fail(`${limits.size} keys held after ${i + 1} invented names`)
  }
  t.equal((await limits.take([{ key: 'client-a', cost: 1, rule: onePerMin }])).allowed, false, 'the client is still counted')
  t.equal(
    (await limits.take([{ key: 'tool-search', cost: 1, rule: onePerMin, named: true }])).allowed,
    true,
    'an idle tool name was forgotten among the names (the gap docs/traffic.md states)',
  )
  t.ok(limits.size <= 8, `bounded: ${limits.size} keys`)
})

t.test('a tools/call that names its tool twice (duplicate member) is refused, not counted, not forwarded', async (t) => {
  const gw = await gateway(t, SEARCH_LIMITED)
  const token = await gw.mint({ scope: 'mcp' })
  for (const body of [
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"other","name":"search","arguments":{}}}',
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","name":"other","arguments":{}}}',
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"Name":"other","name":"search","arguments":{}}}',
    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search","NAME":"other","arguments":{}}}',
  ]) {
    const r = await rpc(gw, token, body)
    t.equal(r.status, 400, body)
  }
  t.equal(gw.upstream.seen.length, 0, 'nothing reached the MCP server')
  t.equal(gw.store.trafficLimits.size, 0, 'nothing was counted')
  t.equal((await rpc(gw, token, call(5, 'search'))).status, 200)
  t.equal((await rpc(gw, token, call(6, 'search'))).status, 200, 'the whole allowance is still there')
})

t.test('an Mcp-Name header naming another tool than params.name is refused before counting', async (t) => {
  const gw = await gateway(t, SEARCH_LIMITED)
  const token = await gw.mint({ scope: 'mcp' })
  const mismatch = await rpc(gw, token, call(1, 'search'), { 'mcp-method': 'tools/call', 'mcp-name': 'other' })
  t.equal(mismatch.status, 400)
  const encoded = await rpc(gw, token, call(2, 'search'), { 'mcp-method': 'tools/call', 'mcp-name': `=?base64?${Buffer.from('other').toString('base64')}?=` })
  t.equal(encoded.status, 400, 'the base64 spelling of another name too')
  t.equal(gw.upstream.seen.length, 0)
  t.equal(gw.store.trafficLimits.size, 0, 'nothing was counted')
  const agreeing = await rpc(gw, token, call(3, 'search'), { 'mcp-method': 'tools/call', 'mcp-name': 'search' })
  t.equal(agreeing.status, 200)
  t.equal(readRateLimitFields(agreeing.headers).states.get('tool:search')?.r, 1)
})

t.test('a tools/call hidden in a batch among other methods, or sent as a notification, is counted', async (t) => {
  const gw = await gateway(t, SEARCH_LIMITED)
  const token = await gw.mint({ scope: 'mcp' })
  const mixed = await rpc(gw, token, [
    { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
    call(2, 'search'),
    { jsonrpc: '2.0', id: 3, method: 'ping' },
  ])
  t.equal(mixed.status, 200)
  t.equal(readRateLimitFields(mixed.headers).states.get('tool:search')?.r, 1, 'the call among other methods used one')
  const seen = gw.upstream.seen.length
  const notification = await rpc(gw, token, [
    { jsonrpc: '2.0', method: 'tools/call', params: { name: 'search', arguments: {} } },
    { jsonrpc: '2.0', method: 'tools/call', params: { name: 'Search', arguments: {} } },
  ])
  t.equal(notification.status, 429, 'two calls as notifications (a server may run them) against one left: refused whole')
  t.equal(gw.upstream.seen.length, seen, 'nothing of the refused batch reached the server')
})

t.test('the fields and the refusal tell a client its own counts only, never another’s', async (t) => {
  const gw = await gateway(
    t,
    (up) => `
  - name: api
    match: { path: /api }
    upstream: ${up}
    scopes: { "*": [orders:read] }
    rate_limits: [{ name: per-client, key: client, limit: 3, per: 1m }]`,
  )
  const a = await gw.mint({ claims: { client_id: 'a' } })
  const b = await gw.mint({ claims: { client_id: 'b' } })
  for (let i = 0; i < 3; i++) await gw.get('/api/x', a)
  const refusedA = await gw.get('/api/x', a)
  t.equal(refusedA.status, 429)
  const fromB = await gw.get('/api/x', b)
  t.same(readRateLimitFields(fromB.headers).states.get('per-client'), { name: 'per-client', r: 2, t: 20 }, 'b sees its own count')
  t.notMatch(refusedA.body, /\bb\b|per-client.*r=/, 'the refusal body names no other client or count')
  t.equal(Object.keys(refusedA.json()).sort().join(','), 'error,error_description', 'the usual error body')
})

t.test('an upstream’s own RateLimit fields, in any case and repeated, and its Retry-After on a 200, do not reach the client as the gateway’s', async (t) => {
  const gw = await gateway(
    t,
    (up) => `
  - name: api
    match: { path: /api }
    upstream: ${up}
    scopes: { "*": [orders:read] }
    rate_limits: [{ name: per-client, key: client, limit: 5, per: 1m }]`,
    (_req: IncomingMessage, res) => {
      res.setHeader('RATELIMIT-POLICY', ['"per-client";q=100000;w=1', '"other";q=1;w=1'])
      res.setHeader('RateLimit', '"per-client";r=99999;t=0')
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    },
  )
  const r = await gw.get('/api/x', await gw.mint())
  t.equal(r.status, 200)
  const f = readRateLimitFields(r.headers)
  t.same(f.policies, [{ name: 'per-client', q: 5, w: 60 }], 'only the gateway’s policy')
  t.same([...f.states.values()], [{ name: 'per-client', r: 4, t: 12 }], 'only the gateway’s state')
})

t.test('a batch naming many tools under a key: tool limit gets one field item per policy', async (t) => {
  const gw = await gateway(
    t,
    (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": [mcp] }
    rate_limits: [{ name: per-tool, key: tool, limit: 5, per: 1m }, { name: per-client, key: client, limit: 100, per: 1m }]
    mcp: { tools: { search: [mcp] } }`,
    (_req: IncomingMessage, res) => {
      res.writeHead(202).end()
    },
  )
  const token = await gw.mint({ scope: 'mcp' })
  const batch = [...Array.from({ length: 200 }, (_, i) => call(i, `tool-${i}`)), call(900, 'search'), call(901, 'search'), call(902, 'search')]
  const r = await rpc(gw, token, batch)
  t.equal(r.status, 202)
  const fields = readRateLimitFields(r.headers)
  t.same(
    fields.policies.map((p) => p.name),
    ['per-tool', 'per-client'],
    'RateLimit-Policy names each policy once, whatever the batch holds',
  )
  t.equal(fields.states.size, 2, 'RateLimit has one item per policy')
  t.equal(fields.states.get('per-tool')?.r, 2, 'the tightest per-tool state stands for all: search was called 3 times of 5')
  t.ok(String(r.headers.ratelimit).length < 200, `the field stays small: ${String(r.headers.ratelimit)}`)
})
