/**
 * A stock MCP client through bin/bearward to a stock MCP server: the official
 * TypeScript SDK (@modelcontextprotocol/sdk, unmodified) on both ends. The
 * client's Streamable HTTP transport with an OAuth client provider finds the
 * protected resource metadata from the 401, the authorization server
 * metadata, registers itself (RFC 7591), sends the person to sign in (this
 * test is the person: it drives the login and consent pages over HTTP),
 * exchanges the code with PKCE and `resource`, lists tools and calls one. A
 * tool that needs more scope gets 403; the client re-authorizes with the
 * wider scope and the call succeeds. A token for another resource is refused.
 */
import t from 'tap'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { z } from 'zod'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { DEMO_SECRET, demoHashes } from '../helpers/as-config.js'
import { selfSignedCert } from '../helpers/tls.js'
import { closeServer, freePort, listen } from '../helpers/http.js'
import { basic } from '../helpers/client-auth.js'
import { PersonAtTheBrowser, refusal } from '../helpers/mcp-sign-in.js'

const REDIRECT = 'http://127.0.0.1:53682/callback'

/** The MCP server: the SDK's Streamable HTTP server transport, stateless, on a port-0 node http server. */
async function startMcpServer(): Promise<{ url: string; seen: Array<{ method: string; body: string }>; server: Server }> {
  const seen: Array<{ method: string; body: string }> = []
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      seen.push({ method: req.method ?? '', body })
      const mcp = new McpServer({ name: 'orders', version: '1.0.0' })
      mcp.registerTool('get_order', { description: 'Read an order', inputSchema: { id: z.string() } }, async ({ id }) => ({
        content: [{ type: 'text', text: `order ${id} for ${String(req.headers['x-auth-subject'])}` }],
      }))
      mcp.registerTool('delete_order', { description: 'Delete an order', inputSchema: { id: z.string() } }, async ({ id }) => ({
        content: [{ type: 'text', text: `deleted ${id}` }],
      }))
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      res.on('close', () => {
        void transport.close()
        void mcp.close()
      })
      mcp
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body === '' ? undefined : (JSON.parse(body) as unknown)))
        .catch(() => res.destroy())
    })
  })
  const serverAt = await listen(server)
  return { url: serverAt.url, seen, server }
}

/** The person at the browser (mcp-sign-in.ts) as an SDK 1.x provider that registers itself (RFC 7591). */
class PersonDrivenProvider extends PersonAtTheBrowser<OAuthClientInformationMixed, OAuthTokens> implements OAuthClientProvider {
  constructor() {
    super(REDIRECT)
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK test client',
      redirect_uris: [REDIRECT],
      // No refresh token: at a 403 the SDK then re-authorizes with the wider scope.
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
}

t.test('the MCP SDK client signs in through bearward to an SDK server', async (t) => {
  const mcpServer = await startMcpServer()
  const other = await startMcpServer()
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { secretHash, passwordHash } = await demoHashes()
  const config = await tempConfig(`
listen: 127.0.0.1:${port}
admin_listen: 127.0.0.1:0
public_url: ${base}
log: { level: info }
authorization_server:
  scopes:
    "mcp:tools": Use the order tools
    "orders:write": Delete your orders
  registration: { enabled: true, scopes: ["mcp:tools", "orders:write"] }
  clients:
    - client_id: robot
      type: confidential
      secret_hash: "${secretHash}"
      grant_types: [client_credentials]
      scopes: ["mcp:tools"]
  users:
    - username: alice
      password_hash: "${passwordHash}"
routes:
  - name: mcp
    match: { path: /mcp }
    upstream: ${mcpServer.url}
    scopes: { "*": ["mcp:tools"] }
    protected_resource: { name: Orders MCP }
    mcp: { tools: { delete_order: ["orders:write"] } }
  - name: other
    match: { path: /other }
    upstream: ${other.url}
    scopes: { "*": ["mcp:tools"] }
`)
  const closeServers = async (): Promise<void> => {
    for (const s of [mcpServer.server, other.server]) {
      await closeServer(s)
    }
    await config.cleanup()
  }
  // A loaded machine can take a while to generate the ephemeral signing key.
  let bw: RunningBin
  try {
    bw = await startBin(config.file, {}, 60_000)
  } catch (err) {
    await closeServers()
    throw err
  }
  t.teardown(async () => {
    await bw.stop()
    await closeServers()
  })

  const provider = new PersonDrivenProvider()
  const serverUrl = new URL(`${base}/mcp`)

  // 1. The first request is refused with 401; the SDK discovers, registers and sends the person.
  const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  const client = new Client({ name: 'sdk-test', version: '1.0.0' })
  t.ok((await refusal(client.connect(first))) instanceof UnauthorizedError, 'the SDK stops at the redirect, as with a real browser')
  t.equal(mcpServer.seen.length, 0, 'nothing reached the MCP server without a token')
  const info = provider.clientInformation()
  t.match(info?.client_id, /^[A-Za-z0-9_-]{22}$/, 'the client registered itself (RFC 7591)')
  const authUrl = provider.authorizationUrls[0]
  t.equal(authUrl?.origin + (authUrl?.pathname ?? ''), `${base}/authorize`)
  t.equal(authUrl?.searchParams.get('resource'), `${base}/mcp`, 'the resource from the protected resource metadata')
  t.equal(authUrl?.searchParams.get('scope'), 'mcp:tools', 'the scope from the 401 challenge')
  t.equal(authUrl?.searchParams.get('code_challenge_method'), 'S256')
  await first.finishAuth(provider.takeCode())
  const access = provider.tokens()?.access_token ?? ''
  const claims = JSON.parse(Buffer.from(access.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>
  t.equal(claims.aud, `${base}/mcp`, 'the token is bound to the MCP route (RFC 8707)')
  t.equal(claims.scope, 'mcp:tools')

  // 2. Connected: list the tools and call one.
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  await client.connect(transport)
  t.teardown(() => client.close())
  const tools = await client.listTools()
  // The list is filtered by the token (mcp.filter_lists, on by default): without orders:write, delete_order is not shown.
  t.same(tools.tools.map((tool) => tool.name).sort(), ['get_order'], 'the list shows only the tools this token may call')
  const got = await client.callTool({ name: 'get_order', arguments: { id: '42' } })
  t.same(got.content, [{ type: 'text', text: 'order 42 for alice' }])

  // 3. A tool that needs more scope: 403, the SDK re-authorizes with the wider scope, the call succeeds.
  const before = mcpServer.seen.length
  t.ok((await refusal(client.callTool({ name: 'delete_order', arguments: { id: '42' } }))) instanceof UnauthorizedError, 'stopped at the redirect again')
  t.equal(mcpServer.seen.length, before, 'the refused call reached no MCP server')
  const stepUp = provider.authorizationUrls[1]
  t.equal(stepUp?.searchParams.get('scope'), 'mcp:tools orders:write', 'the 403 named every scope needed')
  await transport.finishAuth(provider.takeCode())
  const deleted = await client.callTool({ name: 'delete_order', arguments: { id: '42' } })
  t.same(deleted.content, [{ type: 'text', text: 'deleted 42' }])
  t.equal(provider.authorizationUrls.length, 2, 'one step-up was enough')

  // 4. A token for another resource is refused, both ways.
  const mcpToken = provider.tokens()?.access_token ?? ''
  const otherBefore = other.seen.length
  const atOther = await fetch(`${base}/other`, {
    method: 'POST',
    headers: { authorization: `Bearer ${mcpToken}`, 'content-type': 'application/json' },
    body: '{}',
  })
  t.equal(atOther.status, 401, 'the MCP route token is refused at a route with another resource')
  t.match(atOther.headers.get('www-authenticate'), /error="invalid_token"/)
  t.equal(other.seen.length, otherBefore, 'nothing reached that upstream')
  const robot = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('robot', DEMO_SECRET) },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'mcp:tools', resource: `${base}/other` }).toString(),
  })
  const otherToken = String(((await robot.json()) as Record<string, unknown>).access_token)
  const mcpBefore = mcpServer.seen.length
  const atMcp = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${otherToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  t.equal(atMcp.status, 401, 'a token for /other is refused at /mcp')
  t.equal(mcpServer.seen.length, mcpBefore, 'nothing reached the MCP server')
})

t.test('the SDK client identifies itself with a Client ID Metadata Document instead of registering', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bw-mcp-cimd-'))
  const cert = selfSignedCert(dir, 'client-docs')
  const docHits: string[] = []
  let docUrl = ''
  const docs = createHttpsServer({ cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) }, (req, res) => {
    docHits.push(req.url ?? '')
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' })
    res.end(
      JSON.stringify({
        client_id: docUrl,
        client_name: 'SDK document client',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    )
  })
  const docsAt = await listen(docs)
  docUrl = `https://localhost:${docsAt.port}/clients/sdk.json`
  const mcpServer = await startMcpServer()
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { passwordHash } = await demoHashes()
  const config = await tempConfig(`
listen: 127.0.0.1:${port}
admin_listen: 127.0.0.1:0
public_url: ${base}
authorization_server:
  scopes: { "mcp:tools": Use the order tools }
  client_id_metadata_documents: { enabled: true, allow_hosts: [localhost], ca_file: ${cert.certFile} }
  users:
    - username: alice
      password_hash: "${passwordHash}"
routes:
  - name: mcp
    match: { path: /mcp }
    upstream: ${mcpServer.url}
    scopes: { "*": ["mcp:tools"] }
`)
  const cleanup = async (): Promise<void> => {
    for (const s of [mcpServer.server, docs]) {
      await closeServer(s)
    }
    await config.cleanup()
    await rm(dir, { recursive: true, force: true })
  }
  let bw: RunningBin
  try {
    bw = await startBin(config.file, {}, 60_000)
  } catch (err) {
    await cleanup()
    throw err
  }
  t.teardown(async () => {
    await bw.stop()
    await cleanup()
  })

  class DocumentProvider extends PersonDrivenProvider {
    readonly clientMetadataUrl = docUrl
  }
  const provider = new DocumentProvider()
  const meta = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>
  t.equal(meta.client_id_metadata_document_supported, true)
  t.equal(meta.registration_endpoint, undefined, 'no registration here: the document is the only way in')
  const serverUrl = new URL(`${base}/mcp`)
  const client = new Client({ name: 'sdk-doc-test', version: '1.0.0' })
  t.ok((await refusal(client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })))) instanceof UnauthorizedError)
  t.equal(provider.clientInformation()?.client_id, docUrl, 'the client_id is the document URL')
  t.same(docHits, ['/clients/sdk.json'], 'bearward fetched the document once')
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  await transport.finishAuth(provider.takeCode())
  await client.connect(transport)
  t.teardown(() => client.close())
  const got = await client.callTool({ name: 'get_order', arguments: { id: '7' } })
  t.same(got.content, [{ type: 'text', text: 'order 7 for alice' }])
  t.same(docHits, ['/clients/sdk.json'], 'the code exchange used the cached document (max-age=300)')
})
