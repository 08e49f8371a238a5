/**
 * The independent attack on #38's MCP session binding: a session id carried
 * where the binding did not look (the 2024-11-05 transport's query, an
 * `Mcp_Session_Id` spelling a CGI-style server reads as the header, HTTP/2
 * fields), across routes, and a binding that fails once the answer started.
 * Each refusal is checked to have reached no server.
 */
import { request as httpRequest } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import t from 'tap'
import { startGateway } from '../gateway/fixture.js'
import { h2Request, openSession } from '../helpers/http2.js'

/** A 2024-11-05 HTTP+SSE server (the SDK 1.x SSEServerTransport): the session id travels in the POST's query. */
function legacySseServer(): { handler: (req: IncomingMessage, res: ServerResponse, body: string) => void; calls: string[] } {
  const transports = new Map<string, SSEServerTransport>()
  const calls: string[] = []
  const handler = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (req.method === 'GET' && url.pathname === '/mcp/sse') {
      const transport = new SSEServerTransport('/mcp/messages', res)
      transports.set(transport.sessionId, transport)
      const mcp = new McpServer({ name: 'notes', version: '1.0.0' })
      mcp.registerTool('add_note', { description: 'note' }, async (extra) => {
        calls.push(`add_note by ${String(extra.requestInfo?.headers['x-auth-subject'])} in ${transport.sessionId}`)
        return { content: [{ type: 'text', text: 'ok' }] }
      })
      void mcp.connect(transport)
      return
    }
    if (req.method === 'POST' && url.pathname === '/mcp/messages') {
      const known = transports.get(url.searchParams.get('sessionId') ?? '')
      if (known === undefined) {
        res.writeHead(404).end('no session')
        return
      }
      void known.handlePostMessage(req, res, JSON.parse(body))
      return
    }
    res.writeHead(404).end()
  }
  return { handler, calls }
}

/** Open a GET stream and resolve with the first `endpoint` event's data. */
function openSse(base: string, path: string, token: string): Promise<{ endpoint: string; status: number; close: () => void }> {
  const url = new URL(base)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, agent: false },
      (res) => {
        let text = ''
        if (res.statusCode !== 200) {
          resolve({ endpoint: '', status: res.statusCode ?? 0, close: () => req.destroy() })
          res.resume()
          return
        }
        res.on('data', (c: Buffer) => {
          text += c.toString('utf8')
          const m = /event: endpoint\ndata: ([^\n]*)\n/.exec(text)
          if (m !== null) resolve({ endpoint: m[1] ?? '', status: 200, close: () => req.destroy() })
        })
      },
    )
    req.on('error', reject)
    req.end()
  })
}

t.test('legacy HTTP+SSE transport: a session id in the query is bound to whoever opened the stream', async (t) => {
  const server = legacySseServer()
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
    upstreamHandler: server.handler,
  })
  t.teardown(() => gw.close())
  const alice = await gw.mint({ scope: 'mcp:tools' })
  const bob = await gw.mint({ scope: 'mcp:tools', claims: { sub: 'bob' } })
  const stream = await openSse(gw.url, '/mcp/sse', alice)
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  t.match(stream.endpoint, /^\/mcp\/messages\?sessionId=/)
  const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'add_note', arguments: {} } }
  const before = gw.upstream.seen.length
  const hijack = await gw.send(stream.endpoint, {
    method: 'POST',
    headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(call),
  })
  t.equal(hijack.status, 404, "bob cannot post into alice's session")
  const id = new URL(stream.endpoint, 'http://x').searchParams.get('sessionId') ?? ''
  // The parameter in the other spellings servers read (Python's session_id, Express's brackets), and beside a header.
  for (const target of [
    `/mcp/messages?session_id=${id}`,
    `/mcp/messages?SessionID=${id}`,
    `/mcp/messages?sessionId%5B%5D=${id}`,
    `/mcp/messages?x=1&sessionId[0]=${id}`,
  ]) {
    const other = await gw.send(target, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(call),
    })
    t.equal(other.status, 404, target)
  }
  const twice = await gw.send(`${stream.endpoint}&session_id=${id}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
    body: JSON.stringify(call),
  })
  t.equal(twice.status, 404, 'a session id given twice is none, even to its owner')
  const mixed = await gw.send(stream.endpoint, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json', 'mcp-session-id': 'another' },
    body: JSON.stringify(call),
  })
  t.equal(mixed.status, 404, 'a header naming another session beside the query')
  t.equal(gw.upstream.seen.length, before, 'nothing reached the server')
  t.same(server.calls, [])
  const own = await gw.send(stream.endpoint, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(call),
  })
  t.equal(own.status, 202, 'the person who opened the stream posts to it')
  t.same(server.calls, [`add_note by alice in ${id}`])
})

t.test('an Mcp-Session-Id spelt with underscores (Mcp_Session_Id, which CGI-style servers read as the same) is checked too', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
    upstreamHandler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'alice-session' })
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}')
    },
  })
  t.teardown(() => gw.close())
  const alice = await gw.mint({ scope: 'mcp:tools' })
  const bob = await gw.mint({ scope: 'mcp:tools', claims: { sub: 'bob' } })
  const message = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } })
  const opened = await gw.send('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  })
  t.equal(opened.headers['mcp-session-id'], 'alice-session')
  const before = gw.upstream.seen.length
  for (const name of ['Mcp_Session_Id', 'mcp_session-id', 'MCP-SESSION_ID']) {
    const got = await gw.send('/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json', [name]: 'alice-session' },
      body: message,
    })
    t.equal(got.status, 404, `${name}: bob cannot use alice's session`)
  }
  const both = await gw.send('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json', 'mcp-session-id': 'alice-session', mcp_session_id: 'other' },
    body: message,
  })
  t.equal(both.status, 404, 'two spellings at once are two session ids: none')
  t.equal(gw.upstream.seen.length, before, 'nothing reached the server')
  const own = await gw.send('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json', Mcp_Session_Id: 'alice-session' },
    body: message,
  })
  t.equal(own.status, 200, 'its owner may spell it so')
})

t.test('over HTTP/2: a session id in two fields, under an underscore name, or in the query is checked as over HTTP/1.1', async (t) => {
  const gw = await startGateway({
    extra: 'http2: { cleartext: true }',
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
    upstreamHandler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'alice-session' })
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}')
    },
  })
  t.teardown(() => gw.close())
  const session = await openSession(gw.url)
  t.teardown(() => session.destroy())
  const alice = await gw.mint({ scope: 'mcp:tools' })
  const bob = await gw.mint({ scope: 'mcp:tools', claims: { sub: 'bob' } })
  const post = (token: string, headers: Record<string, string | string[]>, path = '/mcp') =>
    h2Request(
      session,
      { ':method': 'POST', ':path': path, authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } }),
    )
  const opened = await post(alice, {})
  t.equal(opened.headers['mcp-session-id'], 'alice-session', 'alice opened a session over h2')
  const before = gw.upstream.seen.length
  t.equal((await post(bob, { 'mcp-session-id': 'alice-session' })).status, 404, 'another person')
  t.equal((await post(bob, { mcp_session_id: 'alice-session' })).status, 404, 'an underscore name')
  t.equal((await post(bob, {}, '/mcp?sessionId=alice-session')).status, 404, 'the legacy query parameter')
  t.equal((await post(alice, { 'mcp-session-id': ['alice-session', 'alice-session'] })).status, 404, 'two fields are no session id')
  t.equal(gw.upstream.seen.length, before, 'nothing reached the server')
  t.equal((await post(alice, { 'mcp-session-id': 'alice-session' })).status, 200, 'its owner uses it')
})

t.test('a legacy stream announcing a session bound to someone else is cut, over HTTP/2 with INTERNAL_ERROR, never ended cleanly', async (t) => {
  const gw = await startGateway({
    extra: 'http2: { cleartext: true }',
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
    // A server that announces one fixed session to every stream.
    upstreamHandler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end('event: endpoint\ndata: /mcp/messages?sessionId=fixed\n\n')
    },
  })
  t.teardown(() => gw.close())
  const session = await openSession(gw.url)
  t.teardown(() => session.destroy())
  const alice = await gw.mint({ scope: 'mcp:tools' })
  const bob = await gw.mint({ scope: 'mcp:tools', claims: { sub: 'bob' } })
  const open = (token: string) => h2Request(session, { ':method': 'GET', ':path': '/mcp/sse', authorization: `Bearer ${token}`, accept: 'text/event-stream' })
  const first = await open(alice)
  t.equal(first.status, 200)
  t.match(first.body, 'sessionId=fixed', 'the first to open it holds it')
  const second = await open(bob)
  t.notMatch(second.body, 'sessionId=fixed', "bob never sees alice's session")
  t.equal(second.rstCode, 2, 'the stream is reset with INTERNAL_ERROR')
  t.notOk(second.ended, 'the client cannot take it for a whole answer')
})

t.test('a session is bound per route: its id opens nothing on another MCP route to the same server, even for its owner', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: admin
    match: { path: /admin-mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:admin"] }
    mcp: {}
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
    upstreamHandler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'admin-session' })
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}')
    },
  })
  t.teardown(() => gw.close())
  const admin = await gw.mint({ scope: 'mcp:admin mcp:tools' })
  const bob = await gw.mint({ scope: 'mcp:tools', claims: { sub: 'bob' } })
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } })
  const post = (path: string, token: string, session?: string) =>
    gw.send(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(session === undefined ? {} : { 'mcp-session-id': session }) },
      body,
    })
  t.equal((await post('/admin-mcp', admin)).headers['mcp-session-id'], 'admin-session', 'opened on the admin route')
  const before = gw.upstream.seen.length
  t.equal((await post('/mcp', bob, 'admin-session')).status, 404, 'another person on the other route')
  t.equal((await post('/mcp', admin, 'admin-session')).status, 404, 'its owner on the other route')
  t.equal(gw.upstream.seen.length, before, 'nothing reached the server')
  t.equal((await post('/admin-mcp', admin, 'admin-session')).status, 200, 'its owner on its route')
})
