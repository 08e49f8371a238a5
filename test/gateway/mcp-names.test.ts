/**
 * Per-name MCP rules judged as the server reads the name (issue #38.3). Both
 * SDKs look a resource up by `new URL(uri).toString()`, so `ORDERS://secret`,
 * `" orders://secret"` and `"orders:\n//secret"` are `orders://secret` to
 * them: each such spelling, and every other a server may read as a protected
 * resource, tool or prompt, is refused or judged as the name it becomes, and
 * nothing of it reaches the server. Real SDK 1.x and 2.x servers behind the
 * gateway.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { McpServer as McpServer1, ResourceTemplate as ResourceTemplate1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { createMcpHandler, McpServer as McpServer2, ResourceTemplate as ResourceTemplate2 } from '@modelcontextprotocol/server'
import t, { type Test } from 'tap'
import { z } from 'zod'
import { serveMcpHandler } from '../helpers/mcp-sdk2.js'
import { startGateway, type Harness, type Reply } from './fixture.js'

const SECRET = 'TOP SECRET ORDER'
const MODERN = '2026-07-28'
const VERSION_META = 'io.modelcontextprotocol/protocolVersion'

const ROUTE_MCP = `
    mcp:
      resources: { "orders://secret": ["orders:read"], "https://files.example/secret": ["orders:read"] }
      tools: { delete_order: ["orders:write"] }
      prompts: { secret_prompt: ["orders:read"] }
`

function routes(upstream: string): string {
  return `
  - name: mcp
    match: { path: /mcp }
    upstream: ${upstream}
    scopes: { "*": ["mcp:tools"] }${ROUTE_MCP}`
}

/** SDK 1.x: a fresh stateless server per request, JSON answers. */
function sdk1(req: IncomingMessage, res: ServerResponse, body: string): void {
  const mcp = new McpServer1({ name: 'orders', version: '1.0.0' })
  mcp.registerResource('secret', 'orders://secret', {}, async (uri) => ({ contents: [{ uri: uri.href, text: SECRET }] }))
  mcp.registerResource('files', 'https://files.example/secret', {}, async (uri) => ({ contents: [{ uri: uri.href, text: SECRET }] }))
  mcp.registerResource('order', new ResourceTemplate1('orders://{id}', { list: undefined }), {}, async (uri, { id }) => ({
    contents: [{ uri: uri.href, text: `order ${decodeURIComponent(String(id))}` }],
  }))
  mcp.registerTool('delete_order', { inputSchema: { id: z.string() } }, async ({ id }) => ({ content: [{ type: 'text', text: `deleted ${id}` }] }))
  mcp.registerPrompt('secret_prompt', {}, async () => ({ messages: [{ role: 'user', content: { type: 'text', text: SECRET } }] }))
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  res.on('close', () => {
    void transport.close()
    void mcp.close()
  })
  mcp
    .connect(transport)
    .then(() => transport.handleRequest(req, res, JSON.parse(body) as unknown))
    .catch(() => res.destroy())
}

/** SDK 2.x: the same server through createMcpHandler (2026-07-28, stateless). */
function sdk2(): McpServer2 {
  const mcp = new McpServer2({ name: 'orders', version: '2.0.0' }, { capabilities: { tools: {}, resources: {}, prompts: {} } })
  mcp.registerResource('secret', 'orders://secret', {}, async (uri) => ({ contents: [{ uri: uri.href, text: SECRET }] }))
  mcp.registerResource('files', 'https://files.example/secret', {}, async (uri) => ({ contents: [{ uri: uri.href, text: SECRET }] }))
  mcp.registerResource('order', new ResourceTemplate2('orders://{id}', { list: undefined }), {}, async (uri, { id }) => ({
    contents: [{ uri: uri.href, text: `order ${decodeURIComponent(String(id))}` }],
  }))
  mcp.registerTool('delete_order', { inputSchema: z.object({ id: z.string() }) }, async ({ id }) => ({ content: [{ type: 'text', text: `deleted ${id}` }] }))
  mcp.registerPrompt('secret_prompt', {}, async () => ({ messages: [{ role: 'user', content: { type: 'text', text: SECRET } }] }))
  return mcp
}

type Era = 'sdk1' | 'sdk2'

/** One JSON-RPC request in the era's shape (2026-07-28: the envelope and the standard headers, Mcp-Name base64). */
function call(gw: Harness, era: Era, token: string, method: string, params: Record<string, unknown>, name: string): Promise<Reply> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  }
  let p = params
  if (era === 'sdk2') {
    headers['mcp-protocol-version'] = MODERN
    headers['mcp-method'] = method
    headers['mcp-name'] = `=?base64?${Buffer.from(name, 'utf8').toString('base64')}?=`
    p = {
      ...params,
      _meta: { [VERSION_META]: MODERN, 'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} },
    }
  }
  return gw.send('/mcp', { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: p }) })
}

/** Spellings both SDKs read as `orders://secret` (or its https sibling) by parsing, or that RFC 3986 makes equal to it: refused as they are (400). */
const REFUSED_URIS = [
  'ORDERS://secret',
  'Orders://secret',
  ' orders://secret',
  'orders://secret ',
  '\torders://secret',
  'orders:\n//secret',
  'orders://sec\tret',
  'orders://secret\u0000',
  '\u001forders://secret',
  'orders://%73ecret',
  'orders://secre%74',
  'orders://secret%2f',
  'orders://x/../secret',
  'orders:secret/../x',
  'orders://secret\\',
  'HTTPS://FILES.EXAMPLE/secret',
  'https://files.example:443/secret',
  'https://files.example/%73ecret',
  'https://files.example/x/../secret',
  'https:\\\\files.example\\secret',
  'https://ｆｉｌｅｓ.example/secret',
]

/** Canonical spellings whose bare form (host case, userinfo, port, query, fragment, trailing dot) is the protected one: they need its scope (403). */
const JUDGED_URIS = [
  'orders://SECRET',
  'orders://user@secret',
  'orders://secret:8080',
  'orders://secret.',
  'orders://secret?x=1',
  'orders://secret#top',
  'https://files.example./secret',
  'https://files.example/secret?download=1',
]

const REFUSED_NAMES = [
  ' delete_order',
  'delete_order ',
  'delete_order\u200b',
  'delete\u00adorder',
  'delete_order\u0000',
  'delete_order\n',
  '\ufeffdelete_order',
  'delete_order\u00a0',
  'delete_order\u202e',
]
const JUDGED_NAMES = ['DELETE_ORDER', 'Delete_Order', 'ｄｅｌｅｔｅ_ｏｒｄｅｒ']

async function eachEra(t: Test, fn: (t: Test, gw: Harness, era: Era, seen: () => number) => Promise<void>): Promise<void> {
  await t.test('SDK 1.x server', async (t) => {
    const gw = await startGateway({ routes, upstreamHandler: sdk1 })
    t.teardown(() => gw.close())
    await fn(t, gw, 'sdk1', () => gw.upstream.seen.length)
  })
  await t.test('SDK 2.x server', async (t) => {
    const handler = createMcpHandler(sdk2)
    const server = await serveMcpHandler(handler)
    const gw = await startGateway({ routes: () => routes(server.url) })
    t.teardown(async () => {
      await gw.close()
      await server.close()
    })
    await fn(t, gw, 'sdk2', () => server.seen.length)
  })
}

t.test('a resource URI spelt another way is refused, and nothing reaches the server', (t) =>
  eachEra(t, async (t, gw, era, seen) => {
    const weak = await gw.mint({ scope: 'mcp:tools' })
    const strong = await gw.mint({ scope: 'mcp:tools orders:read' })
    // The server does serve the secret under the canonical spelling, to a token with the scope.
    const allowed = await call(gw, era, strong, 'resources/read', { uri: 'orders://secret' }, 'orders://secret')
    t.equal(allowed.status, 200)
    t.match(allowed.body, SECRET)
    t.equal((await call(gw, era, weak, 'resources/read', { uri: 'orders://secret' }, 'orders://secret')).status, 403)
    const before = seen()
    for (const uri of REFUSED_URIS) {
      const res = await call(gw, era, weak, 'resources/read', { uri }, uri)
      t.equal(res.status, 400, `${JSON.stringify(uri)} is refused`)
      t.equal(res.json().error, 'invalid_request')
      t.notMatch(res.body, SECRET)
    }
    for (const uri of JUDGED_URIS) {
      const res = await call(gw, era, weak, 'resources/read', { uri }, uri)
      t.equal(res.status, 403, `${JSON.stringify(uri)} needs orders:read`)
      t.match(String(res.headers['www-authenticate']), 'scope="mcp:tools orders:read"')
    }
    t.equal(seen(), before, 'nothing of a refused read reached the server')
    // A subscription is judged the same way.
    t.equal((await call(gw, era, weak, 'resources/subscribe', { uri: 'ORDERS://secret' }, 'ORDERS://secret')).status, 400)
    // Other resources are still read with the route's scope alone.
    const other = await call(gw, era, weak, 'resources/read', { uri: 'orders://42' }, 'orders://42')
    t.equal(other.status, 200)
    t.match(other.body, 'order 42')
  }),
)

t.test('a tool or prompt name spelt another way is refused or judged as the name it folds to', (t) =>
  eachEra(t, async (t, gw, era, seen) => {
    const weak = await gw.mint({ scope: 'mcp:tools' })
    const before = seen()
    for (const name of REFUSED_NAMES) {
      const res = await call(gw, era, weak, 'tools/call', { name, arguments: { id: '7' } }, name)
      t.equal(res.status, 400, `tool ${JSON.stringify(name)} is refused`)
      t.equal(res.json().error, 'invalid_request')
      const prompt = name.replace('delete_order', 'secret_prompt')
      t.equal((await call(gw, era, weak, 'prompts/get', { name: prompt }, prompt)).status, 400, `prompt ${JSON.stringify(prompt)} is refused`)
    }
    for (const name of JUDGED_NAMES) {
      const res = await call(gw, era, weak, 'tools/call', { name, arguments: { id: '7' } }, name)
      t.equal(res.status, 403, `tool ${JSON.stringify(name)} needs orders:write`)
      t.match(String(res.headers['www-authenticate']), 'scope="mcp:tools orders:write"')
    }
    t.equal((await call(gw, era, weak, 'prompts/get', { name: 'SECRET_PROMPT' }, 'SECRET_PROMPT')).status, 403)
    t.equal(seen(), before, 'nothing of a refused call reached the server')
  }),
)

t.test('an Mcp-Name whose base64 starts with a byte order mark does not match the name without it', async (t) => {
  const handler = createMcpHandler(sdk2)
  const server = await serveMcpHandler(handler)
  const gw = await startGateway({ routes: () => routes(server.url) })
  t.teardown(async () => {
    await gw.close()
    await server.close()
  })
  const strong = await gw.mint({ scope: 'mcp:tools orders:write' })
  const before = server.seen.length
  // The header names `\ufeffdelete_order`, the body `delete_order`: a router reading the header sees another tool.
  const res = await call(gw, 'sdk2', strong, 'tools/call', { name: 'delete_order', arguments: { id: '7' } }, '\ufeffdelete_order')
  t.equal(res.status, 400)
  t.match(res.json(), { error: { code: -32020 } })
  t.equal(server.seen.length, before, 'nothing reached the server')
})

t.test('a batch (2025-03-26) with one URI spelt another way is refused whole', async (t) => {
  const gw = await startGateway({ routes, upstreamHandler: sdk1 })
  t.teardown(() => gw.close())
  const weak = await gw.mint({ scope: 'mcp:tools' })
  const before = gw.upstream.seen.length
  const batch = [
    { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'orders://42' } },
    { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: 'ORDERS://secret' } },
  ]
  const headers = { authorization: `Bearer ${weak}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const res = await gw.send('/mcp', { method: 'POST', headers, body: JSON.stringify(batch) })
  t.equal(res.status, 400)
  t.equal(res.json().error, 'invalid_request')
  // A notification (no id) of a read is judged as well: a server may serve it and only drop the answer.
  const note = await gw.send('/mcp', {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'resources/read', params: { uri: 'orders://SECRET' } }),
  })
  t.equal(note.status, 403)
  t.equal(gw.upstream.seen.length, before, 'nothing reached the server')
})

t.test('a member that differs from name or uri only in case is refused (a case-insensitive JSON binding reads the last)', async (t) => {
  const gw = await startGateway({ routes, upstreamHandler: sdk1 })
  t.teardown(() => gw.close())
  const weak = await gw.mint({ scope: 'mcp:tools' })
  const before = gw.upstream.seen.length
  for (const params of [
    { name: 'get_order', Name: 'delete_order' },
    { NAME: 'delete_order', name: 'get_order' },
    { uri: 'orders://42', URI: 'orders://secret' },
    { uri: 'orders://42', Uri: 'orders://secret' },
  ]) {
    const method = 'name' in params ? 'tools/call' : 'resources/read'
    const res = await call(gw, 'sdk1', weak, method, params, '')
    t.equal(res.status, 400, JSON.stringify(params))
    t.equal(res.json().error, 'invalid_request')
  }
  const ref = await call(
    gw,
    'sdk1',
    weak,
    'completion/complete',
    { ref: { type: 'ref/prompt', name: 'hello', NAME: 'secret_prompt' }, argument: { name: 'a', value: '' } },
    '',
  )
  t.equal(ref.status, 400)
  t.equal(gw.upstream.seen.length, before, 'nothing reached the server')
})
