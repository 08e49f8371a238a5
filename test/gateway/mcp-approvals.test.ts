/**
 * Approval of sensitive MCP tool calls at the gateway (issue #41, docs/approvals.md): a tools/call
 * of a tool whose rule says `approval: required` reaches the upstream only once the token's person
 * approved that very call (tool, canonical arguments, route, person, client, grant). The client is
 * sent to the approval page in the shape its revision defines; the decision is made here through the
 * store (the page has its own tests), so each rule is checked against what reaches the upstream.
 */
import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import type { ApprovalRecord } from '../../src/store/types.js'
import { PUBLIC_URL, startGateway, type Harness, type Reply } from './fixture.js'

const MODERN = '2026-07-28'
const URL_CAPS = { elicitation: { url: {} } }

/** An upstream MCP server: initialize opens a session; a tools/call answers with what it received. */
function upstream(_req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, body: string): void {
  const msg = JSON.parse(body) as { id: number | string; method: string; params?: unknown }
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  let result: unknown = { content: [{ type: 'text', text: body }] }
  if (msg.method === 'initialize') {
    headers['mcp-session-id'] = randomUUID()
    result = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'up', version: '1' } }
  }
  res.writeHead(200, headers)
  res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }))
}

async function gateway(t: Test, approvals = '{}'): Promise<Harness> {
  const gw = await startGateway({
    upstreamHandler: upstream,
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp:
      tools:
        delete_order: { scopes: ["orders:write"], approval: required }
        get_order: ["orders:read"]
      approvals: ${approvals}
`,
  })
  t.teardown(() => gw.close())
  return gw
}

function modernCall(args: unknown, id: number | string = 'r1', caps: object = URL_CAPS, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name: 'delete_order',
      arguments: args,
      ...extra,
      _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': caps },
    },
  })
}

const MODERN_HEADERS = { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'delete_order' }

async function post(gw: Harness, token: string, body: string, headers: Record<string, string> = MODERN_HEADERS): Promise<Reply> {
  return gw.send('/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers },
    body,
  })
}

/** The approval id a held call's answer names (its page URL's `id`). */
function approvalIdOf(reply: Reply): string {
  const m = /approve\?id=([A-Za-z0-9_-]{22})/.exec(reply.body)
  if (m === null) throw new Error(`no approval URL in ${reply.body}`)
  return m[1] as string
}

async function decide(gw: Harness, id: string, decision: 'approved' | 'denied', sub = 'alice'): Promise<ApprovalRecord | null> {
  const now = Math.floor(gw.clock.now() / 1000)
  return gw.store.approvals.decide(id, sub, decision, 'mfa', now + 300, now)
}

const calls = (gw: Harness): number => gw.upstream.seen.filter((s) => s.body.includes('"tools/call"')).length

t.test('2026-07-28: input_required, then the approved retry reaches the upstream once (reuse once)', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  const held = await post(gw, token, modernCall({ id: 7 }))
  t.equal(held.status, 200)
  const result = held.json().result as Record<string, unknown>
  t.equal(result.resultType, 'input_required')
  const inputs = result.inputRequests as Record<string, { method: string; params: { mode: string; url: string; message: string } }>
  const request = Object.values(inputs)[0]
  t.equal(request?.method, 'elicitation/create')
  t.equal(request?.params.mode, 'url')
  t.match(request?.params.url, new RegExp(`^${PUBLIC_URL}/approve\\?id=`))
  t.match(request?.params.message, /delete_order/)
  t.type(result.requestState, 'string')
  t.equal(calls(gw), 0, 'nothing reached the upstream')
  const id = approvalIdOf(held)
  t.equal(approvalIdOf(await post(gw, token, modernCall({ id: 7 }))), id, 'a retry before the decision gets the same approval')
  t.equal((await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 10)).length, 1)

  await decide(gw, id, 'approved')
  const retry = modernCall({ id: 7 }, 2, URL_CAPS, { inputResponses: { bearward_approval: { action: 'accept' } }, requestState: result.requestState })
  const passed = await post(gw, token, retry)
  t.equal(passed.status, 200)
  t.equal(calls(gw), 1, 'the approved call reached the upstream')
  const forwarded = JSON.parse(gw.upstream.seen.at(-1)?.body ?? '{}') as { params: Record<string, unknown> }
  t.notOk('requestState' in forwarded.params, 'the gateway’s requestState is not forwarded')
  t.notOk('inputResponses' in forwarded.params, 'nor its inputResponses')
  t.same(forwarded.params.arguments, { id: 7 })

  const again = await post(gw, token, retry)
  t.equal((again.json().result as Record<string, unknown>).resultType, 'input_required', 'reuse once: a second call needs a new approval')
  t.not(approvalIdOf(again), id)
  t.equal(calls(gw), 1)
})

t.test('the approval is bound to the canonical arguments, not their spelling', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  const id = approvalIdOf(await post(gw, token, modernCall({ id: 1, note: 'a', n: 1 })))
  const respelled = modernCall({ n: 1.0, note: '\u0061', id: 1 }).replace('"n":1', '"n":1.0').replace('"id":1', '"id":1e0')
  t.equal(approvalIdOf(await post(gw, token, respelled)), id, 'key order, number forms and escapes do not matter')
  const changed = await post(gw, token, modernCall({ id: 2, note: 'a', n: 1 }))
  t.not(approvalIdOf(changed), id, 'another value needs another approval')
  await decide(gw, id, 'approved')
  await post(gw, token, modernCall({ id: 2, note: 'a', n: 1 }))
  t.equal(calls(gw), 0, 'the approval of other arguments passes nothing')
  await post(gw, token, respelled)
  t.equal(calls(gw), 1, 'the same call in another spelling passes')
})

t.test('arguments without one canonical reading are refused, nothing opened or forwarded', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write' })
  const big = modernCall({ id: 1 }).replace('"id":1', '"id":9007199254740993')
  t.equal((await post(gw, token, big)).status, 400, 'an integer beyond 2^53')
  const lone = modernCall({ id: 1 }).replace('"id":1', '"id":"\\ud800"')
  t.equal((await post(gw, token, lone)).status, 400, 'a lone surrogate')
  const dup = modernCall({ id: 1 }).replace('"id":1', '"id":1,"id":2')
  t.equal((await post(gw, token, dup)).status, 400, 'a repeated member')
  t.same(await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 10), [])
  t.equal(calls(gw), 0)
})

t.test('the token must carry the tool’s scopes first: no approval is opened without them', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools' })
  const res = await post(gw, token, modernCall({ id: 1 }))
  t.equal(res.status, 403)
  t.match(res.headers['www-authenticate'], /orders:write/)
  t.same(await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 10), [])
})

t.test('another grant, another client or another person needs its own approval', async (t) => {
  const gw = await gateway(t)
  const mine = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  const id = approvalIdOf(await post(gw, mine, modernCall({ id: 1 })))
  await decide(gw, id, 'approved')
  for (const claims of [{ grant_id: 'g2' }, { grant_id: 'g1', client_id: 'other' }, { grant_id: 'g1', sub: 'bob' }]) {
    const other = await gw.mint({ scope: 'mcp:tools orders:write', claims })
    const res = await post(gw, other, modernCall({ id: 1 }))
    t.not(approvalIdOf(res), id, JSON.stringify(claims))
  }
  t.equal(calls(gw), 0)
  t.equal(await decide(gw, approvalIdOf(await post(gw, mine, modernCall({ id: 9 }))), 'approved', 'bob'), null, 'bob cannot decide alice’s')
})

t.test('a denial is told on the retry; a revoked grant cancels its approvals and its tokens stop', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  const held = await post(gw, token, modernCall({ id: 1 }))
  await decide(gw, approvalIdOf(held), 'denied')
  const state = (held.json().result as Record<string, unknown>).requestState
  const retry = await post(gw, token, modernCall({ id: 1 }, 2, URL_CAPS, { inputResponses: { bearward_approval: { action: 'accept' } }, requestState: state }))
  const result = retry.json().result as { isError: boolean; content: Array<{ text: string }> }
  t.equal(result.isError, true)
  t.match(result.content[0]?.text, /denied/)
  t.equal(calls(gw), 0)

  const approved = approvalIdOf(await post(gw, token, modernCall({ id: 3 })))
  await decide(gw, approved, 'approved')
  const now = Math.floor(gw.clock.now() / 1000)
  t.equal(await gw.store.approvals.cancelGrant('g1', now), 1)
  t.equal((await gw.store.approvals.get(approved, now))?.status, 'cancelled')
  const after = await post(gw, token, modernCall({ id: 3 }))
  t.equal((after.json().result as Record<string, unknown>).resultType, 'input_required', 'a cancelled approval passes nothing')
  t.equal(calls(gw), 0)
})

t.test('2025-11-25 with URL elicitation declared in initialize: the -32042 error', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write' })
  const init = await post(
    gw,
    token,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: URL_CAPS, clientInfo: { name: 'c', version: '1' } },
    }),
    {},
  )
  const session = init.headers['mcp-session-id'] as string
  t.type(session, 'string')
  const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }
  const call = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'delete_order', arguments: { id: 1 } } })
  const held = await post(gw, token, call, headers)
  t.equal(held.status, 200)
  const body = held.json()
  t.equal(body.id, 5)
  const error = body.error as { code: number; data: { elicitations: Array<Record<string, string>> } }
  t.equal(error.code, -32042)
  t.equal(error.data.elicitations.length, 1)
  t.match(error.data.elicitations[0], { mode: 'url', elicitationId: approvalIdOf(held), url: `${PUBLIC_URL}/approve?id=${approvalIdOf(held)}` })
  await decide(gw, approvalIdOf(held), 'approved')
  t.equal((await post(gw, token, call, headers)).status, 200)
  t.equal(calls(gw), 1, 'the retried call went through')
  const forwarded = gw.upstream.seen.at(-1)?.body
  t.equal(forwarded, call, 'forwarded byte for byte')
})

t.test('a client that declared no URL elicitation gets a tool error naming the page', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write' })
  const res = await post(gw, token, modernCall({ id: 1 }, 1, {}))
  const result = res.json().result as { isError: boolean; content: Array<{ type: string; text: string }> }
  t.equal(result.isError, true)
  t.match(result.content[0]?.text, /approve\?id=/)
  const legacy = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_order', arguments: { id: 1 } } })
  t.equal(((await post(gw, token, legacy, {})).json().result as { isError?: boolean } | undefined)?.isError, true, 'and without a session')
  t.equal(calls(gw), 0)
})

t.test('a batch or a notification with an approval-required call is refused whole', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write orders:read' })
  const batch = JSON.stringify([
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_order', arguments: {} } },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_order', arguments: { id: 1 } } },
  ])
  t.equal((await post(gw, token, batch, { 'mcp-protocol-version': '2025-03-26' })).status, 400)
  const note = JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'delete_order', arguments: { id: 1 } } })
  t.equal((await post(gw, token, note, {})).status, 400)
  t.equal(gw.upstream.seen.length, 0, 'nothing reached the upstream')
  t.same(await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 10), [])
})

t.test('reuse ttl: every identical call passes until the approval ends', async (t) => {
  const gw = await gateway(t, '{ reuse: ttl, ttl: 1m }')
  const token = await gw.mint({ scope: 'mcp:tools orders:write', expIn: 3600 })
  const id = approvalIdOf(await post(gw, token, modernCall({ id: 1 })))
  await decide(gw, id, 'approved')
  await post(gw, token, modernCall({ id: 1 }))
  await post(gw, token, modernCall({ id: 1 }))
  t.equal(calls(gw), 2)
  gw.clock.advance(301_000)
  t.equal(((await post(gw, token, modernCall({ id: 1 }))).json().result as Record<string, unknown>).resultType, 'input_required')
  t.equal(calls(gw), 2, 'not after it ended')
})

t.test('notify: a signed event per new pending approval, retried after a failure, never the token', async (t) => {
  const { createServer } = await import('node:http')
  const { notificationSignature } = await import('../../src/as/approvals/notify.js')
  const got: Array<{ headers: import('node:http').IncomingHttpHeaders; body: string; status: number }> = []
  let fail = 1
  const receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8')
    })
    req.on('end', () => {
      const status = fail-- > 0 ? 503 : 204
      got.push({ headers: req.headers, body, status })
      res.writeHead(status)
      res.end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  t.teardown(() => receiver.close())
  const address = receiver.address() as import('node:net').AddressInfo
  const secret = 'a-notification-secret-of-32-chars!!'
  const gw = await gateway(t, `{ notify: { url: "http://127.0.0.1:${address.port}/hook", secret: "${secret}" } }`)
  const token = await gw.mint({ scope: 'mcp:tools orders:write' })
  const held = await post(gw, token, modernCall({ id: 1 }))
  await post(gw, token, modernCall({ id: 1 }))
  const { eventually } = await import('../helpers/http.js')
  await eventually(() => got.length >= 1)
  t.equal(got[0]?.status, 503, 'the first attempt failed')
  gw.clock.advance(2000)
  t.ok(await eventually(() => got.length >= 2), 'retried after the backoff')
  t.equal(got[1]?.status, 204)
  t.equal(got[1]?.body, got[0]?.body, 'the same event again')
  const first = got[0]
  if (first === undefined) throw new Error('nothing delivered')
  const event = JSON.parse(first.body) as Record<string, unknown>
  t.match(event, { type: 'approval.requested', id: approvalIdOf(held), kind: 'mcp_tool', sub: 'alice', client_id: 'web', tool: 'delete_order' })
  t.equal(event.url, `${PUBLIC_URL}/approve?id=${approvalIdOf(held)}`)
  t.notMatch(first.body, token, 'never the token')
  t.notOk('arguments' in event, 'nor the arguments')
  const sig = String(first.headers['bearward-signature'])
  const ts = Number(/^t=(\d+),/.exec(sig)?.[1])
  t.equal(sig, notificationSignature(secret, ts, first.body), 'HMAC-SHA256 over timestamp and body')
  t.equal(new Set(got.map((g) => JSON.parse(g.body).id)).size, 1, 'one event per approval, the retry of the same pending one opens none')
})

t.test('headers that disagree with the body cannot carry an approval-required call past the gate', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write orders:read' })
  const res = await post(gw, token, modernCall({ id: 1 }), { ...MODERN_HEADERS, 'mcp-name': 'get_order' })
  t.equal(res.status, 400)
  t.equal((res.json().error as { code: number }).code, -32020, 'HeaderMismatch')
  t.equal(gw.upstream.seen.length, 0)
  t.same(await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 10), [], 'nothing opened')
})
