/**
 * MCP 2026-07-28 through bin/bearward with the official SDK 2.x on both ends
 * (`@modelcontextprotocol/client` and `@modelcontextprotocol/server`,
 * unmodified), and the SDK 1.x client (2025-11-25) beside it on the same
 * route.
 *
 * The server is stateless (`createMcpHandler`: one server instance per
 * request) with tools, resources, a resource template, a prompt whose name is
 * not ASCII and `subscriptions/listen`. The 2.x client identifies itself with
 * a Client ID Metadata Document, signs the person in (this test is the
 * person), negotiates 2026-07-28 (`server/discover`) and sends the standard
 * headers on every request: `MCP-Protocol-Version`, `Mcp-Method`, and
 * `Mcp-Name` for tools/call, resources/read and prompts/get, base64-encoded
 * (`=?base64?…?=`) when the name is not plain ASCII.
 *
 * Then the header attacks, as raw HTTP on the same route: a 2026-07-28
 * request whose headers are missing or disagree with its body must be
 * refused by the gateway (HTTP 400 carrying the JSON-RPC HeaderMismatch
 * error, -32020, with the request's id) and must not reach the server.
 *
 * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports
 */
import t, { type Test } from 'tap'
import { createServer as createHttpsServer } from 'node:https'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client'
import { createMcpHandler, McpServer, ResourceTemplate, type McpRequestContext } from '@modelcontextprotocol/server'
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { z } from 'zod'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { DEMO_SECRET, demoHashes } from '../helpers/as-config.js'
import { selfSignedCert } from '../helpers/tls.js'
import { closeServer, eventually, freePort, listen } from '../helpers/http.js'
import { serveMcpHandler, type RunningMcpHandler } from '../helpers/mcp-sdk2.js'
import { basic } from '../helpers/client-auth.js'
import { PersonAtTheBrowser, refusal } from '../helpers/mcp-sign-in.js'

const REDIRECT = 'http://127.0.0.1:53683/callback'
const MODERN = '2026-07-28'
/** The tool whose name is not ASCII: the client sends it as `Mcp-Name: =?base64?…?=`. */
const COUNT_TOOL = 'zähle_bestellungen'
/** The prompt whose name is not ASCII. */
const SUMMARY_PROMPT = 'Zusammenfassung für Müller'
/** The `_meta` key that carries a 2026-07-28 request's protocol version. */
const VERSION_META = 'io.modelcontextprotocol/protocolVersion'
/** The `_meta` a 2026-07-28 request carries: the SDK server refuses a request without all three. */
function envelope(version: string): Record<string, unknown> {
  return {
    [VERSION_META]: version,
    'io.modelcontextprotocol/clientInfo': { name: 'raw-http', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  }
}
/** JSON-RPC error code of a header that is missing or disagrees with the body (MCP 2026-07-28). */
const HEADER_MISMATCH = -32020

/** `=?base64?…?=`: the form MCP gives a header value that is not plain ASCII. */
function encodedName(name: string): string {
  return `=?base64?${Buffer.from(name, 'utf8').toString('base64')}?=`
}

/**
 * The SDK warns on stderr about a tool name outside SEP-986's characters, once per
 * server instance, i.e. once per request here; the name is deliberate.
 */
function quietly<T>(fn: () => T): T {
  const warn = console.warn
  console.warn = () => {}
  try {
    return fn()
  } finally {
    console.warn = warn
  }
}

/** The orders MCP server: a fresh SDK 2.x McpServer per request, as createMcpHandler builds them. */
function ordersServer(ctx: McpRequestContext): McpServer {
  const who = (): string => String(ctx.requestInfo?.headers.get('x-auth-subject'))
  const server = new McpServer(
    { name: 'orders', version: '2.0.0' },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } },
      // The server calls its tool list shareable; a list the gateway filtered for one token must not be.
      cacheHints: { 'tools/list': { ttlMs: 60_000, cacheScope: 'public' } },
    },
  )
  server.registerTool('get_order', { description: 'Read an order', inputSchema: z.object({ id: z.string() }) }, async ({ id }) => ({
    content: [{ type: 'text', text: `order ${id} for ${who()}` }],
  }))
  server.registerTool('delete_order', { description: 'Delete an order', inputSchema: z.object({ id: z.string() }) }, async ({ id }) => ({
    content: [{ type: 'text', text: `deleted ${id}` }],
  }))
  quietly(() =>
    server.registerTool(COUNT_TOOL, { description: 'Count the orders', inputSchema: z.object({}) }, async () => ({
      content: [{ type: 'text', text: `3 orders for ${who()}` }],
    })),
  )
  server.registerResource('recent', 'orders://recent', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: `recent orders of ${who()}` }],
  }))
  server.registerResource('order', new ResourceTemplate('orders://{id}', { list: undefined }), { mimeType: 'text/plain' }, async (uri, { id }) => ({
    contents: [{ uri: uri.href, text: `order ${String(id)}` }],
  }))
  server.registerPrompt(SUMMARY_PROMPT, { description: 'Summarise the orders', argsSchema: z.object({ ton: z.string() }) }, async ({ ton }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Fasse die Bestellungen ${ton} zusammen` } }],
  }))
  return server
}

/**
 * The person at the browser (mcp-sign-in.ts) as an SDK 2.x provider
 * identified by a Client ID Metadata Document. The SDK checks the redirect's
 * `iss` (RFC 9207), so the test hands it the whole callback (takeCallback).
 */
class DocumentClientProvider extends PersonAtTheBrowser<StoredOAuthClientInformation, StoredOAuthTokens> implements OAuthClientProvider {
  constructor(readonly clientMetadataUrl: string) {
    super(REDIRECT)
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK 2 document client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
}

interface Setup {
  base: string
  mcp: RunningMcpHandler
  notify: () => void
  docUrl: string
  docHits: string[]
  bin: RunningBin
}

async function setUp(t: Test): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'bw-mcp2-'))
  const cert = selfSignedCert(dir, 'client-docs')
  const docHits: string[] = []
  let docUrl = ''
  const docs = createHttpsServer({ cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) }, (req, res) => {
    docHits.push(req.url ?? '')
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' })
    res.end(
      JSON.stringify({
        client_id: docUrl,
        client_name: 'SDK 2 document client',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    )
  })
  const docsAt = await listen(docs)
  docUrl = `https://localhost:${docsAt.port}/clients/sdk2.json`
  const handler = createMcpHandler(ordersServer)
  const mcp = await serveMcpHandler(handler)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { secretHash, passwordHash } = await demoHashes()
  const config = await tempConfig(`
listen: 127.0.0.1:${port}
admin_listen: 127.0.0.1:0
public_url: ${base}
authorization_server:
  scopes:
    "mcp:tools": Use the order tools
    "orders:write": Delete your orders
  client_id_metadata_documents: { enabled: true, allow_hosts: [localhost], ca_file: ${cert.certFile} }
  clients:
    - client_id: robot
      type: confidential
      secret_hash: "${secretHash}"
      grant_types: [client_credentials]
      scopes: ["mcp:tools", "orders:write"]
  users:
    - username: alice
      password_hash: "${passwordHash}"
routes:
  - name: mcp
    match: { path: /mcp }
    upstream: ${mcp.url}
    scopes: { "*": ["mcp:tools"] }
    mcp: { tools: { delete_order: ["orders:write"] } }
  - name: modern-only
    match: { path: /modern }
    upstream: ${mcp.url}
    scopes: { "*": ["mcp:tools"] }
    mcp: { protocol_versions: ["${MODERN}"] }
  - name: legacy-only
    match: { path: /legacy }
    upstream: ${mcp.url}
    scopes: { "*": ["mcp:tools"] }
    mcp: { protocol_versions: ["2025-11-25"] }
`)
  const cleanup = async (): Promise<void> => {
    await mcp.close()
    await closeServer(docs)
    await config.cleanup()
    await rm(dir, { recursive: true, force: true })
  }
  let bin: RunningBin
  try {
    bin = await startBin(config.file, {}, 60_000)
  } catch (err) {
    await cleanup()
    throw err
  }
  t.teardown(async () => {
    await bin.stop()
    await cleanup()
  })
  return { base, mcp, notify: () => handler.notify.toolsChanged(), docUrl, docHits, bin }
}

/** A client-credentials token for the MCP route (the raw-HTTP attacker's, and the 1.x client's). */
async function robotToken(base: string, scope: string, path = '/mcp'): Promise<string> {
  const res = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('robot', DEMO_SECRET) },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource: `${base}${path}` }).toString(),
  })
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`)
  return String(((await res.json()) as Record<string, unknown>).access_token)
}

t.test('MCP SDK 2.x and 1.x through bearward', async (t) => {
  const s = await setUp(t)
  const serverUrl = new URL(`${s.base}/mcp`)

  await t.test('the SDK 2.x client signs in with a metadata document and speaks 2026-07-28', async (t) => {
    const provider = new DocumentClientProvider(s.docUrl)
    const client = new Client({ name: 'sdk2-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } })
    const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
    t.ok((await refusal(client.connect(first))) instanceof UnauthorizedError, 'the SDK stops at the redirect, as with a real browser')
    t.equal(s.mcp.seen.length, 0, 'nothing reached the MCP server without a token')
    t.equal(provider.clientInformation()?.client_id, s.docUrl, 'the client_id is the document URL')
    t.same(s.docHits, ['/clients/sdk2.json'], 'bearward fetched the document once')
    const authUrl = provider.authorizationUrls[0]
    t.equal(authUrl?.searchParams.get('resource'), `${s.base}/mcp`, 'the resource from the protected resource metadata')
    t.equal(authUrl?.searchParams.get('scope'), 'mcp:tools', 'the scope from the 401 challenge')
    const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
    await transport.finishAuth(provider.takeCallback())
    await client.connect(transport)
    t.teardown(() => client.close())
    t.equal(client.getProtocolEra(), 'modern')
    t.equal(client.getNegotiatedProtocolVersion(), MODERN)
    const discover = s.mcp.seen.at(-1)
    t.equal(discover?.headers['mcp-method'], 'server/discover', 'the server/discover probe reached the server')
    t.equal(discover?.headers['x-auth-subject'], 'alice', 'with the person it was signed in as')

    const got = await client.callTool({ name: 'get_order', arguments: { id: '42' } })
    t.same(got.content, [{ type: 'text', text: 'order 42 for alice' }])
    const call = s.mcp.seen.at(-1)
    t.equal(call?.headers['mcp-method'], 'tools/call')
    t.equal(call?.headers['mcp-name'], 'get_order')
    t.equal(call?.headers['mcp-protocol-version'], MODERN)

    const recent = await client.readResource({ uri: 'orders://recent' })
    t.same(recent.contents, [{ uri: 'orders://recent', text: 'recent orders of alice' }])
    t.equal(s.mcp.seen.at(-1)?.headers['mcp-name'], 'orders://recent', 'resources/read names its uri')
    const seven = await client.readResource({ uri: 'orders://7' })
    t.same(seven.contents, [{ uri: 'orders://7', text: 'order 7' }], 'a resource of the template')
    t.same(
      (await client.listResources()).resources.map((r) => r.uri),
      ['orders://recent'],
    )
    t.same(
      (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate),
      ['orders://{id}'],
    )
    t.same(
      (await client.listPrompts()).prompts.map((p) => p.name),
      [SUMMARY_PROMPT],
    )

    await t.test('names that are not ASCII travel base64-encoded in Mcp-Name', async (t) => {
      const before = s.mcp.seen.length
      const counted = await refusal(
        client.callTool({ name: COUNT_TOOL, arguments: {} }).then((r) => t.same(r.content, [{ type: 'text', text: '3 orders for alice' }])),
      )
      t.equal(counted, null, `tools/call of ${COUNT_TOOL} went through`)
      t.equal(s.mcp.seen[before]?.headers['mcp-name'], encodedName(COUNT_TOOL), 'and reached the server in the encoded form, unchanged')
      const prompted = await refusal(
        client
          .getPrompt({ name: SUMMARY_PROMPT, arguments: { ton: 'kurz' } })
          .then((r) => t.same(r.messages, [{ role: 'user', content: { type: 'text', text: 'Fasse die Bestellungen kurz zusammen' } }])),
      )
      t.equal(prompted, null, `prompts/get of "${SUMMARY_PROMPT}" went through`)
      t.equal(s.mcp.seen.at(-1)?.headers['mcp-name'], encodedName(SUMMARY_PROMPT))
    })

    await t.test('subscriptions/listen: the stream stays open through the gateway and delivers', async (t) => {
      const changes: unknown[] = []
      client.setNotificationHandler('notifications/tools/list_changed', (n) => {
        changes.push(n)
      })
      const subscription = await client.listen({ toolsListChanged: true })
      t.equal(s.mcp.open.size, 1, 'one listen stream open at the server')
      s.notify()
      t.ok(await eventually(() => changes.length === 1), 'the change notification arrived through bearward')
      s.notify()
      t.ok(await eventually(() => changes.length === 2), 'and the next one on the same stream')
      await subscription.close()
      t.ok(await eventually(() => s.mcp.open.size === 0), 'closing the subscription ends the stream at the server')
    })

    await t.test('a token without orders:write: delete_order is not listed, and calling it is 403', async (t) => {
      const tools = await client.listTools()
      t.same(tools.tools.map((tool) => tool.name).sort(), ['get_order', COUNT_TOOL].sort(), 'tools/list leaves out the tool this token may not call')
      // The same list as raw HTTP: marked private, for this token only (the server said public).
      const listBody = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: envelope(MODERN) } })
      const listHeaders = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/list',
      }
      const itself = (await (await fetch(`${s.mcp.url}/mcp`, { method: 'POST', headers: listHeaders, body: listBody })).json()) as {
        result: Record<string, unknown>
      }
      t.equal(itself.result.cacheScope, 'public', 'the server itself calls its list public')
      const listed = await fetch(serverUrl, {
        method: 'POST',
        headers: { ...listHeaders, authorization: `Bearer ${String(provider.tokens()?.access_token)}` },
        body: listBody,
      })
      t.equal(listed.status, 200)
      t.match(listed.headers.get('cache-control'), /\bprivate\b/, 'Cache-Control: private on the filtered answer')
      const filtered = (await listed.json()) as { result: { cacheScope?: unknown; tools: Array<{ name: string }> } }
      t.same(filtered.result.tools.map((tool) => tool.name).sort(), ['get_order', COUNT_TOOL].sort())
      t.equal(filtered.result.cacheScope, 'private', 'the filtered result says cacheScope private')
      const before = s.mcp.seen.length
      provider.signIn = false
      const err = await refusal(client.callTool({ name: 'delete_order', arguments: { id: '42' } }))
      t.ok(err instanceof UnauthorizedError, 'the SDK takes the 403 for a step-up and stops at the redirect')
      t.equal(s.mcp.seen.length, before, 'the refused call reached no MCP server')
      const stepUp = provider.authorizationUrls.at(-1)
      t.equal(provider.authorizationUrls.length, 2, 'the client was sent to authorize again')
      t.equal(stepUp?.searchParams.get('scope'), 'mcp:tools orders:write', 'the 403 named every scope the call needs')
      // The same call as raw HTTP with this token: the challenge itself.
      const raw = await fetch(serverUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${String(provider.tokens()?.access_token)}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN,
          'mcp-method': 'tools/call',
          'mcp-name': 'delete_order',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 9,
          method: 'tools/call',
          params: { name: 'delete_order', arguments: { id: '42' }, _meta: envelope(MODERN) },
        }),
      })
      t.equal(raw.status, 403)
      t.match(raw.headers.get('www-authenticate'), /error="insufficient_scope"/)
      t.match(raw.headers.get('www-authenticate'), /scope="mcp:tools orders:write"/)
      t.equal(s.mcp.seen.length, before, 'nothing reached the MCP server')
    })
  })

  await t.test('the SDK 1.x client (2025-11-25) on the same route', async (t) => {
    const token = await robotToken(s.base, 'mcp:tools')
    const client = new Client1({ name: 'sdk1-test', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport1(serverUrl, { requestInit: { headers: { authorization: `Bearer ${token}` } } })
    const before = s.mcp.seen.length
    await client.connect(transport)
    t.teardown(() => client.close())
    t.equal(client.getServerVersion()?.name, 'orders')
    const init = s.mcp.seen[before]
    t.match(init?.body, /"method":"initialize"/, 'the 2025 handshake reached the server')
    t.equal(init?.headers['mcp-method'], undefined, 'a 2025-11-25 client sends no Mcp-Method header')
    const got = await client.callTool({ name: 'get_order', arguments: { id: '5' } })
    t.same(got.content, [{ type: 'text', text: 'order 5 for robot' }])
    t.equal(s.mcp.seen.at(-1)?.headers['mcp-protocol-version'], '2025-11-25')
    const prompt = await client.getPrompt({ name: SUMMARY_PROMPT, arguments: { ton: 'lang' } })
    t.same(prompt.messages, [{ role: 'user', content: { type: 'text', text: 'Fasse die Bestellungen lang zusammen' } }])
    const recent = await client.readResource({ uri: 'orders://recent' })
    t.same(recent.contents, [{ uri: 'orders://recent', text: 'recent orders of robot' }])
    const upTo = s.mcp.seen.length
    const deleted = await refusal(client.callTool({ name: 'delete_order', arguments: { id: '5' } }))
    t.ok(deleted instanceof Error, 'delete_order without orders:write is refused')
    t.equal(s.mcp.seen.length, upTo, 'and never reached the server')
  })

  await t.test('mcp.protocol_versions: each era is refused where the route does not accept it', async (t) => {
    // The SDK 1.x client (2025-11-25) at a route that accepts only 2026-07-28.
    const modernToken = await robotToken(s.base, 'mcp:tools', '/modern')
    const before = s.mcp.seen.length
    const legacyClient = new Client1({ name: 'sdk1-test', version: '1.0.0' })
    const refusedConnect = await refusal(
      legacyClient.connect(
        new StreamableHTTPClientTransport1(new URL(`${s.base}/modern`), { requestInit: { headers: { authorization: `Bearer ${modernToken}` } } }),
      ),
    )
    t.ok(refusedConnect instanceof Error, 'the SDK 1.x client cannot connect')
    t.match(String(refusedConnect), /Unsupported protocol version: 2025-11-25/, 'told why, as a 2025 server would say it')
    await legacyClient.close()
    t.notOk(
      s.mcp.seen.slice(before).some((r) => r.headers['mcp-protocol-version'] === '2025-11-25'),
      'no request naming 2025-11-25 reached the server',
    )
    // The SDK 2.x client is served there.
    const modernClient = new Client({ name: 'sdk2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } })
    await modernClient.connect(new StreamableHTTPClientTransport(new URL(`${s.base}/modern`), { authProvider: { token: async () => modernToken } }))
    t.equal(modernClient.getProtocolEra(), 'modern', 'the SDK 2.x client negotiates 2026-07-28 there')
    t.same((await modernClient.callTool({ name: 'get_order', arguments: { id: '3' } })).content, [{ type: 'text', text: 'order 3 for robot' }])
    await modernClient.close()

    // The SDK 2.x client ('auto') at a route that accepts only 2025-11-25: refused in its own terms, it falls back.
    const legacyToken = await robotToken(s.base, 'mcp:tools', '/legacy')
    const from = s.mcp.seen.length
    const dualClient = new Client({ name: 'sdk2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } })
    await dualClient.connect(new StreamableHTTPClientTransport(new URL(`${s.base}/legacy`), { authProvider: { token: async () => legacyToken } }))
    t.equal(dualClient.getProtocolEra(), 'legacy', 'the SDK 2.x client falls back to the 2025 handshake')
    t.equal(dualClient.getNegotiatedProtocolVersion(), '2025-11-25')
    t.same((await dualClient.callTool({ name: 'get_order', arguments: { id: '4' } })).content, [{ type: 'text', text: 'order 4 for robot' }])
    await dualClient.close()
    t.notOk(
      s.mcp.seen.slice(from).some((r) => r.headers['mcp-protocol-version'] === MODERN),
      'no request naming 2026-07-28 reached the server',
    )
  })

  await t.test('header attacks on the same route: 400 with the JSON-RPC HeaderMismatch error, nothing forwarded', async (t) => {
    const token = await robotToken(s.base, 'mcp:tools orders:write')
    const post = (headers: Record<string, string>, body: unknown): Promise<Response> =>
      fetch(serverUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
      })
    const call = (id: number | string, name: string, version = MODERN): Record<string, unknown> => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: { id: '1' }, _meta: envelope(version) },
    })
    const parse = (text: string): unknown => {
      try {
        return JSON.parse(text)
      } catch {
        return text
      }
    }
    const refused = async (t: Test, what: string, headers: Record<string, string>, body: Record<string, unknown>): Promise<void> => {
      // The SDK server itself, asked directly, refuses the same request this way: the gateway answers as it would.
      const itself = await fetch(`${s.mcp.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
      })
      t.equal(itself.status, 400, `${what}: the SDK server itself says 400`)
      t.match(parse(await itself.text()), { jsonrpc: '2.0', error: { code: HEADER_MISMATCH } }, `${what}: with HeaderMismatch`)
      const before = s.mcp.seen.length
      const res = await post(headers, body)
      t.equal(res.status, 400, `${what}: 400`)
      t.match(res.headers.get('content-type'), /^application\/json/, `${what}: a JSON body`)
      t.match(
        parse(await res.text()),
        { jsonrpc: '2.0', id: body.id, error: { code: HEADER_MISMATCH, message: String } },
        `${what}: the JSON-RPC error with the request's id`,
      )
      t.equal(s.mcp.seen.length, before, `${what}: nothing reached the MCP server`)
    }

    // The control: the same request with every header right goes through.
    const before = s.mcp.seen.length
    const ok = await post({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'delete_order' }, call(1, 'delete_order'))
    t.equal(ok.status, 200, 'a 2026-07-28 request with its headers right is forwarded')
    t.match(await ok.json(), { id: 1, result: { content: [{ type: 'text', text: 'deleted 1' }] } })
    t.equal(s.mcp.seen.length, before + 1)
    const encoded = await post({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': encodedName(COUNT_TOOL) }, call(2, COUNT_TOOL))
    t.equal(encoded.status, 200, 'the encoded form of Mcp-Name is decoded and matches')
    t.match(await encoded.text(), /3 orders for robot/)

    const plainEncoded = await post({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': encodedName('get_order') }, call(21, 'get_order'))
    t.equal(plainEncoded.status, 200, 'an ASCII name in the encoded form is decoded and matches too')
    t.match(await plainEncoded.text(), /order 1 for robot/)

    await refused(t, 'no MCP-Protocol-Version', { 'mcp-method': 'tools/call', 'mcp-name': 'get_order' }, call(22, 'get_order'))
    await refused(t, 'no Mcp-Method', { 'mcp-protocol-version': MODERN, 'mcp-name': 'get_order' }, call(3, 'get_order'))
    await refused(t, 'tools/call without Mcp-Name', { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call' }, call(4, 'get_order'))
    await refused(
      t,
      'Mcp-Name disagreeing',
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'get_order' },
      call('five', 'delete_order'),
    )
    await refused(
      t,
      'an encoded Mcp-Name that decodes to another name',
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': encodedName('get_order') },
      call(6, 'delete_order'),
    )
    await refused(
      t,
      'MCP-Protocol-Version disagreeing with _meta',
      { 'mcp-protocol-version': '2025-11-25', 'mcp-method': 'tools/call', 'mcp-name': 'get_order' },
      call(7, 'get_order'),
    )
    await refused(
      t,
      'an Mcp-Name whose base64 sentinel does not decode',
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': '=?base64?!!!?=' },
      call(23, 'get_order'),
    )
    await refused(
      t,
      'Mcp-Method disagreeing',
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list', 'mcp-name': 'delete_order' },
      call(8, 'delete_order'),
    )
  })
})
