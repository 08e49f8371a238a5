/**
 * An MCP session belongs to whoever opened it (issue #38.5): a stateful SDK
 * 1.x server takes any request that carries a live `Mcp-Session-Id`, so
 * without the gateway a token of another person (or another client of the
 * same person) could drive a session someone else initialized, and read
 * what the server keeps in it. The gateway binds the session id it sees in
 * the answer to `initialize` to the token's issuer, subject and client, in
 * the store every instance shares, and answers a request with a session id
 * bound to someone else, or to nobody, with the 404 the transport gives an
 * unknown session: the client starts a new session. Run on the memory store
 * and on a real Redis shared by two gateway instances.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import type { Store } from '../../src/store/types.js'
import { startRedis } from '../helpers/redis.js'
import { serveRuntime, type ServedRuntime } from '../helpers/serve-runtime.js'
import { startUpstream } from '../helpers/upstream.js'
import { hashToken } from '../../src/store/hash.js'
import { mint, newKey, PUBLIC_URL, send, startGateway, type Reply } from './fixture.js'

const ACCEPT = 'application/json, text/event-stream'

/** A stateful SDK 1.x server: one transport per session, kept in a map, as the SDK's examples do. */
function statefulServer(): (req: IncomingMessage, res: ServerResponse, body: string) => void {
  const transports = new Map<string, StreamableHTTPServerTransport>()
  return (req, res, body) => {
    const parsed = body === '' ? undefined : (JSON.parse(body) as unknown)
    const sid = req.headers['mcp-session-id']
    const known = typeof sid === 'string' ? transports.get(sid) : undefined
    if (known !== undefined) {
      void known.handleRequest(req, res, parsed)
      return
    }
    if (sid !== undefined || !isInitializeRequest(parsed)) {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }))
      return
    }
    const mcp = new McpServer({ name: 'notes', version: '1.0.0' })
    const notes: string[] = []
    mcp.registerTool('add_note', { description: 'Remember a note in this session' }, async (extra) => {
      notes.push(`note by ${String(extra.requestInfo?.headers['x-auth-subject'])}`)
      return { content: [{ type: 'text', text: 'ok' }] }
    })
    mcp.registerTool('read_notes', { description: 'The notes of this session' }, async (extra) => ({
      content: [{ type: 'text', text: `${notes.join('; ')} (asked by ${String(extra.requestInfo?.headers['x-auth-subject'])})` }],
    }))
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        transports.set(id, transport)
      },
    })
    void mcp.connect(transport).then(() => transport.handleRequest(req, res, parsed))
  }
}

interface Instances {
  readonly one: ServedRuntime
  readonly two: ServedRuntime
  readonly seen: () => number
  token(sub: string, clientId?: string): Promise<string>
}

/** Two gateway instances on one store (`store` called once per instance), in front of one stateful server. */
async function startInstances(t: Test, store: (clock: ManualClock) => Store): Promise<Instances> {
  const upstream = await startUpstream('notes', statefulServer())
  const key = await newKey('ES256', 'self-1')
  const jwk = JSON.stringify({ ...key.privateKey.export({ format: 'jwk' }), kid: key.kid, alg: key.alg })
  const yaml = `
listen: 127.0.0.1:0
public_url: ${PUBLIC_URL}
authorization_server:
  clients: []
  keys:
    - jwk: ${jwk}
routes:
  - name: mcp
    match: { path: /mcp }
    upstream: ${upstream.url}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`
  const clock = new ManualClock(Date.now())
  const one = await serveRuntime(yaml, { clock, store })
  const two = await serveRuntime(yaml, { clock, store })
  t.teardown(async () => {
    await one.close()
    await two.close()
    await upstream.close()
  })
  return {
    one,
    two,
    seen: () => upstream.seen.length,
    token: (sub, clientId = 'web') => mint(clock, { key, scope: 'mcp:tools', claims: { sub, client_id: clientId } }),
  }
}

function post(at: ServedRuntime, token: string, message: Record<string, unknown>, session?: string): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: ACCEPT }
  if (session !== undefined) {
    headers['mcp-session-id'] = session
    headers['mcp-protocol-version'] = '2025-06-18'
  }
  return send(at.url, '/mcp', { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', ...message }) })
}

const INITIALIZE = {
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
}

function tool(name: string, id = 2): Record<string, unknown> {
  return { id, method: 'tools/call', params: { name, arguments: {} } }
}

/** Alice opens a session through instance one; what everyone can then do with its id. */
async function sessionScenario(t: Test, g: Instances): Promise<void> {
  const alice = await g.token('alice')
  const bob = await g.token('bob')
  const aliceOtherClient = await g.token('alice', 'other-app')
  const init = await post(g.one, alice, INITIALIZE)
  t.equal(init.status, 200)
  const session = String(init.headers['mcp-session-id'])
  t.match(session, /^[0-9a-f-]{36}$/, 'the server opened a session')
  t.equal((await post(g.one, alice, { method: 'notifications/initialized' }, session)).status, 202)
  const added = await post(g.two, alice, tool('add_note'), session)
  t.equal(added.status, 200, 'the person who opened the session uses it, through the other instance too')

  const before = g.seen()
  for (const [who, token] of [
    ['another person', bob],
    ['the same person through another client', aliceOtherClient],
  ] as const) {
    for (const at of [g.one, g.two]) {
      const read = await post(at, token, tool('read_notes'), session)
      t.equal(read.status, 404, `${who} cannot use the session`)
      t.same(read.json(), { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null })
      t.notMatch(read.body, 'note by alice')
      const get = await send(at.url, '/mcp', { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': session } })
      t.equal(get.status, 404, `${who} cannot open the session's stream`)
      const del = await send(at.url, '/mcp', { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'mcp-session-id': session } })
      t.equal(del.status, 404, `${who} cannot end the session`)
    }
  }
  // A session id the gateway never saw opened is nobody's.
  t.equal((await post(g.one, alice, tool('read_notes'), randomUUID())).status, 404)
  // Two session ids, or one that is not visible ASCII, are not a session id.
  t.equal((await post(g.one, alice, tool('read_notes'), `${session}, ${session}`)).status, 404)
  t.equal(g.seen(), before, 'nothing of a refused request reached the server')

  const read = await post(g.two, alice, tool('read_notes', 3), session)
  t.equal(read.status, 200)
  t.match(read.body, 'note by alice (asked by alice)', 'the session is intact, and the server is told who calls')
}

t.test('memory store: a session is used only by the token subject and client that opened it', async (t) => {
  let shared: MemoryStore | null = null
  const g = await startInstances(t, (clock) => {
    shared ??= new MemoryStore(clock, { sweepIntervalMs: 0 })
    return shared
  })
  await sessionScenario(t, g)
})

t.test('Redis: a session opened through one instance is bound on every instance', async (t) => {
  const redis = await startRedis()
  const g = await startInstances(t, (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }))
  t.teardown(() => redis.stop())
  await sessionScenario(t, g)
})

t.test('an upstream that issues a session id it already gave someone else, or two ids, gets a 502 and the client sees no id', async (t) => {
  let issue: string[] = ['s-1']
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
    upstreamHandler: (_req, res) => {
      const headers: string[] = ['content-type', 'application/json']
      for (const id of issue) headers.push('mcp-session-id', id)
      res.writeHead(200, headers)
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}')
    },
  })
  t.teardown(() => gw.close())
  const alice = await gw.mint({ scope: 'mcp:tools' })
  const bob = await gw.mint({ scope: 'mcp:tools', claims: { sub: 'bob' } })
  const init = (token: string): Promise<Reply> =>
    gw.send('/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', ...INITIALIZE }),
    })
  const first = await init(alice)
  t.equal(first.status, 200)
  t.equal(first.headers['mcp-session-id'], 's-1')
  const again = await init(bob)
  t.equal(again.status, 502, "alice's session id handed to bob")
  t.equal(again.headers['mcp-session-id'], undefined)
  issue = ['s-2', 's-3']
  const two = await init(alice)
  t.equal(two.status, 502, 'two session ids in one answer')
  t.equal(two.headers['mcp-session-id'], undefined)
  t.equal(await gw.store.mcpSessions.ownerOf('mcp', hashToken('s-2'), 60), null, 'neither was bound')
})

t.test('the store out of reach: a session is neither checked nor bound, the gateway fails closed (503)', async (t) => {
  let shared: MemoryStore | null = null
  const g = await startInstances(t, (clock) => {
    shared ??= new MemoryStore(clock, { sweepIntervalMs: 0 })
    return shared
  })
  const alice = await g.token('alice')
  const session = String((await post(g.one, alice, INITIALIZE)).headers['mcp-session-id'])
  await (shared as MemoryStore | null)?.close()
  const before = g.seen()
  const used = await post(g.one, alice, tool('read_notes'), session)
  t.equal(used.status, 503)
  t.equal(used.json().error, 'temporarily_unavailable')
  t.equal(g.seen(), before, 'nothing reached the server')
  const opened = await post(g.two, alice, INITIALIZE)
  t.equal(opened.status, 503, 'the server opened a session, but it cannot be bound')
  t.equal(opened.headers['mcp-session-id'], undefined, 'and its id is not shown')
})

t.test('an answer held while its session is bound is bounded: over 1 MB it is a 502, and held data is released in order', async (t) => {
  let size = 2 * 1024 * 1024
  /** The upstream's answer to the request in flight has been sent whole (set before its head reaches the gateway). */
  let sent: Promise<unknown> = Promise.resolve()
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
    upstreamHandler: (_req, res) => {
      sent = new Promise((resolve) => res.on('finish', resolve))
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': `s-${size}` })
      res.end(`{"jsonrpc":"2.0","id":1,"result":{"pad":"${'x'.repeat(size)}"}}`)
    },
  })
  t.teardown(() => gw.close())
  // A binding completes only once the upstream has sent its whole answer: what arrives meanwhile is held.
  const sessions = gw.store.mcpSessions
  const bind = sessions.bind.bind(sessions)
  // The first binding never completes: the answer is held until it passes 1 MB.
  let gate: () => Promise<unknown> = () => new Promise(() => undefined)
  sessions.bind = (...args) => gate().then(() => bind(...args))
  const alice = await gw.mint({ scope: 'mcp:tools' })
  const init = (): Promise<Reply> =>
    gw.send('/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', ...INITIALIZE }),
    })
  const big = await init()
  t.equal(big.status, 502)
  t.equal(big.headers['mcp-session-id'], undefined)
  size = 300 * 1024
  gate = () => sent
  const held = await init()
  t.equal(held.status, 200)
  t.equal(held.headers['mcp-session-id'], `s-${size}`)
  t.equal((JSON.parse(held.body) as { result: { pad: string } }).result.pad.length, size, 'the whole answer, in order')
})
