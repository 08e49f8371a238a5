/**
 * An outside attacker's pass over the MCP approval gate (issue #41, docs/approvals.md): an agent
 * holding a person's token tries to have an `approval: required` tool run without the person's
 * approval of that very call. The class hunted: the gateway judges one reading of a request while
 * the upstream acts on another. Every test checks what reaches the upstream.
 */
import { createHash, randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import t, { type Test } from 'tap'
import { startGateway, type Harness, type Reply } from '../gateway/fixture.js'

const MODERN = '2026-07-28'
const URL_CAPS = { elicitation: { url: {} } }
const MODERN_HEADERS = { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'delete_order' }

/** An upstream MCP server that answers every call with the body it received. */
function upstream(_req: IncomingMessage, res: import('node:http').ServerResponse, body: string): void {
  const msg = JSON.parse(body) as { id: number | string }
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: body }] } }))
}

async function gateway(t: Test, approvals = '{}', extraRoute: (up: string) => string = () => ''): Promise<Harness> {
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
${extraRoute(up)}`,
  })
  t.teardown(() => gw.close())
  return gw
}

/** A 2026-07-28 tools/call body of delete_order with these arguments, as text (so that number spellings survive). */
function callText(argumentsText: string, id: number | string = 'r1', extra = ''): string {
  const meta = JSON.stringify({ 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': URL_CAPS })
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":"delete_order","arguments":${argumentsText}${extra},"_meta":${meta}}}`
}

async function post(gw: Harness, token: string, body: string, path = '/mcp'): Promise<Reply> {
  return gw.send(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...MODERN_HEADERS },
    body,
  })
}

function approvalIdOf(reply: Reply): string {
  const m = /approve\?id=([A-Za-z0-9_-]{22})/.exec(reply.body)
  if (m === null) throw new Error(`no approval URL in ${reply.body}`)
  return m[1] as string
}

async function approve(gw: Harness, id: string, sub = 'alice'): Promise<void> {
  const now = Math.floor(gw.clock.now() / 1000)
  const decided = await gw.store.approvals.decide(id, sub, 'approved', 'mfa', now + 300, now)
  if (decided === null) throw new Error(`approval ${id} could not be decided`)
}

const toolCalls = (gw: Harness): string[] => gw.upstream.seen.filter((s) => s.body.includes('"tools/call"')).map((s) => s.body)

/** RFC 6455 1.3. */
function acceptKey(key: string): string {
  return createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64')
}

/** One masked client text frame (RFC 6455 5.2). */
function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8')
  const mask = randomBytes(4)
  const head = payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 255])
  const body = Buffer.from(payload)
  for (let i = 0; i < body.length; i++) body[i] = (body[i] as number) ^ (mask[i % 4] as number)
  return Buffer.concat([head, mask, body])
}

t.test('a WebSocket upgrade on an MCP route is refused: no unjudged channel to the upstream', async (t) => {
  const gw = await gateway(t)
  // The upstream also speaks JSON-RPC over WebSocket on its MCP path (as some MCP servers do): it records every upgrade and frame.
  const upgrades: string[] = []
  const frames: string[] = []
  const tunnels: Duplex[] = []
  let frameSeen: () => void = () => {}
  const firstFrame = new Promise<void>((resolve) => {
    frameSeen = resolve
  })
  gw.upstream.server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    upgrades.push(req.url ?? '')
    tunnels.push(socket)
    socket.on('error', () => {})
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${acceptKey(String(req.headers['sec-websocket-key']))}\r\n\r\n`,
    )
    socket.on('data', (d: Buffer) => {
      frames.push(d.toString('latin1'))
      frameSeen()
    })
  })
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  const url = new URL(gw.url)
  const socket = connect(Number(url.port), url.hostname)
  t.teardown(() => socket.destroy())
  const head = await new Promise<string>((resolve, reject) => {
    let got = ''
    socket.on('error', reject)
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1')
      if (got.includes('\r\n\r\n')) resolve(got)
    })
    socket.on('close', () => resolve(got))
    socket.write(
      `GET /mcp HTTP/1.1\r\nhost: gw.test\r\nauthorization: Bearer ${token}\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
    )
  })
  if (head.startsWith('HTTP/1.1 101')) {
    // What the attacker would do next: the approval-required call, never judged.
    socket.write(maskedTextFrame(callText('{"id":7}')))
    await firstFrame
  }
  socket.destroy()
  for (const s of tunnels) s.destroy()
  t.match(head, /^HTTP\/1\.1 400 /, 'the upgrade is refused')
  t.equal(upgrades.length, 0, 'no upgrade reached the upstream')
  t.equal(frames.length, 0, 'no frame reached the upstream')
})

t.test('a number spelt with more digits than the approved value is refused: the upstream would read the digits', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  // The person approves paying 100.
  const held = await post(gw, token, callText('{"amount":100}'))
  await approve(gw, approvalIdOf(held))
  const approvalsBefore = (await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 50)).length
  // JSON.parse reads each as the double 100, 0.1 or 0: a decimal parser upstream reads the digits sent.
  for (const args of ['{"amount":100.000000000000001}', '{"amount":0.10000000000000001}', '{"amount":1e-400}']) {
    const reply = await post(gw, token, callText(args))
    t.equal(reply.status, 400, `${args}: refused`)
    t.equal((reply.json() as { error?: string }).error, 'invalid_request')
  }
  t.same(toolCalls(gw), [], 'nothing reached the upstream')
  t.equal((await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 50)).length, approvalsBefore, 'no approval opened')
  // The approved value in another exact spelling still passes, once.
  t.equal((await post(gw, token, callText('{"amount":100.0}'))).status, 200)
  t.equal(toolCalls(gw).length, 1, 'the approved call passed in an exact spelling')
  t.match(toolCalls(gw)[0], /"amount":100\.0[,}]/, 'as sent')
})

t.test('an approval passes nothing on another route, nor for the tool spelt in another case or width', async (t) => {
  const gw = await gateway(
    t,
    '{ reuse: ttl }',
    (up) => `  - name: mcp2
    match: { path: /mcp2 }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp:
      tools:
        delete_order: { scopes: ["orders:write"], approval: required }
      approvals: { reuse: ttl }
`,
  )
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  const held = await post(gw, token, callText('{"id":7}'))
  const id = approvalIdOf(held)
  await approve(gw, id)
  const other = await post(gw, token, callText('{"id":7}'), '/mcp2')
  t.equal((other.json().result as { resultType?: string }).resultType, 'input_required', 'the same call on another route is held')
  t.not(approvalIdOf(other), id, 'with an approval of its own')
  for (const spelling of ['DELETE_ORDER', 'Delete_Order', '\uff44elete_order']) {
    const body = callText('{"id":7}').replace('"name":"delete_order"', `"name":"${spelling}"`)
    const name = JSON.parse(`"${spelling}"`) as string
    const reply = await gw.send('/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        ...MODERN_HEADERS,
        'mcp-name': /^[\x20-\x7e]*$/.test(name) ? name : `=?base64?${Buffer.from(name, 'utf8').toString('base64')}?=`,
      },
      body,
    })
    t.equal(reply.status, 200, `${spelling}: answered`)
    t.equal((reply.json().result as { resultType?: string }).resultType, 'input_required', `${spelling}: held for its own approval`)
  }
  t.same(toolCalls(gw), [], 'nothing reached the upstream')
  t.equal((await post(gw, token, callText('{"id":7}'))).status, 200)
  t.equal(toolCalls(gw).length, 1, 'the approved call itself passes on its route')
})

t.test('smuggled members around an approval-required call are refused whole, nothing opened or forwarded', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  await approve(gw, approvalIdOf(await post(gw, token, callText('{"id":7}'))))
  const before = (await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 50)).length
  const cases: Array<[string, string, Record<string, string>]> = [
    // A key repeated in an escaped spelling: JSON.parse keeps the last, a lenient server may keep the first.
    ['an escaped duplicate argument', callText('{"id":7,"i\\u0064":8}'), {}],
    ['a __proto__ argument', callText('{"id":7,"__proto__":{"id":8}}'), {}],
    ['a name member in another case', callText('{"id":7}', 'r1', ',"Name":"delete_order"'), {}],
    ['Mcp-Name naming a harmless tool', callText('{"id":7}'), { 'mcp-name': 'get_order' }],
    ['a second params member', callText('{"id":7}').replace('"method":"tools/call",', '"method":"tools/call","params":{"name":"get_order"},'), {}],
  ]
  for (const [what, body, headers] of cases) {
    const reply = await gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...MODERN_HEADERS, ...headers },
      body,
    })
    t.equal(reply.status, 400, `${what}: 400`)
  }
  t.same(toolCalls(gw), [], 'nothing reached the upstream, though the call with id 7 was approved')
  t.equal((await gw.store.approvals.listForPerson('alice', Math.floor(gw.clock.now() / 1000), 50)).length, before, 'no approval opened')
})

t.test('a content-coded MCP body is refused: the upstream would decode other bytes than the gateway judged', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write orders:read', claims: { grant_id: 'g1' } })
  // A harmless call as the gateway reads it; an upstream that inflates `deflate` (as Express's body-parser does) would read the decoded bytes.
  const harmless = callText('{"id":7}').replace('"name":"delete_order"', '"name":"get_order"')
  for (const coding of ['deflate', 'gzip', 'br', 'identity, gzip']) {
    const reply = await gw.send('/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-encoding': coding,
        authorization: `Bearer ${token}`,
        ...MODERN_HEADERS,
        'mcp-name': 'get_order',
      },
      body: harmless,
    })
    t.equal(reply.status, 400, `Content-Encoding: ${coding}: 400`)
  }
  t.equal(gw.upstream.seen.length, 0, 'nothing reached the upstream')
  const plain = await gw.send('/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'content-encoding': 'identity',
      authorization: `Bearer ${token}`,
      ...MODERN_HEADERS,
      'mcp-name': 'get_order',
    },
    body: harmless,
  })
  t.equal(plain.status, 200, 'identity is no coding')
  t.equal(gw.upstream.seen.length, 1)
})

t.test('twenty concurrent retries of a once-approved call: exactly one reaches the upstream', async (t) => {
  const gw = await gateway(t)
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  await approve(gw, approvalIdOf(await post(gw, token, callText('{"id":7}'))))
  const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => post(gw, token, callText('{"id":7}', `race-${i}`))))
  t.same(
    replies.map((r) => r.status),
    Array(20).fill(200),
    'every retry is answered',
  )
  const passed = replies.filter((r) => (r.json().result as { resultType?: string }).resultType !== 'input_required')
  t.equal(passed.length, 1, 'one retry used the approval')
  t.equal(toolCalls(gw).length, 1, 'exactly one call reached the upstream')
  const held = new Set(replies.filter((r) => (r.json().result as { resultType?: string }).resultType === 'input_required').map(approvalIdOf))
  t.equal(held.size, 1, 'the others share one new pending approval')
})

t.test('a once-approved call a rate limit refuses keeps its approval for the retry', async (t) => {
  const gw = await startGateway({
    upstreamHandler: upstream,
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp:
      tools:
        delete_order: { scopes: ["orders:write"], approval: required, rate_limit: { limit: 1, per: 1m } }
      approvals: {}`,
  })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp:tools orders:write', claims: { grant_id: 'g1' } })
  const statusOf = async (id: string) => (await gw.store.approvals.get(id, Math.floor(gw.clock.now() / 1000)))?.status
  // The first call is counted and waits for alice; she approves it.
  const id = approvalIdOf(await post(gw, token, callText('{"id":9}')))
  await approve(gw, id)
  // The retry in the same minute is over the tool's limit: 429, and the approval is not spent on it.
  const limited = await post(gw, token, callText('{"id":9}'))
  t.equal(limited.status, 429, limited.body)
  t.ok(limited.headers['retry-after'], 'with Retry-After')
  t.same(toolCalls(gw), [], 'nothing reached the upstream')
  t.equal(await statusOf(id), 'approved', 'the approval still waits to be used')
  // A minute later the retry passes with it, once.
  gw.clock.advance(60_000)
  const passed = await post(gw, token, callText('{"id":9}'))
  t.equal(passed.status, 200, passed.body)
  t.equal(toolCalls(gw).length, 1, 'the approved call reached the upstream')
  t.equal(await statusOf(id), 'used')
})
