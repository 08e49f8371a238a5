/**
 * A stock MCP client registers itself (RFC 7591) with the registration
 * config docs/mcp.md gives, and signs the person in: the official SDK 2.x
 * (`@modelcontextprotocol/client`, unmodified) with a client that asks for
 * refresh tokens. The SDK adds `offline_access` to the scope it registers
 * with because the server metadata advertises it; registration used to
 * refuse that with 400 invalid_client_metadata, naming no scope, so the
 * client could not start. The protocol scopes the metadata advertises
 * (`openid`, `offline_access`) are now always open to a registered client,
 * and a refused scope is named.
 */
import t from 'tap'
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client'
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server'
import { z } from 'zod'
import { demoHashes } from '../helpers/as-config.js'
import { serveMcpHandler } from '../helpers/mcp-sdk2.js'
import { PersonAtTheBrowser, refusal } from '../helpers/mcp-sign-in.js'
import { serveRuntime } from '../helpers/serve-runtime.js'

const REDIRECT = 'http://127.0.0.1:53684/callback'

/** An SDK 2.x client that registers itself: no metadata document, a refresh token wanted. */
class RegisteringClientProvider extends PersonAtTheBrowser<StoredOAuthClientInformation, StoredOAuthTokens> implements OAuthClientProvider {
  constructor() {
    super(REDIRECT)
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK 2 registering client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
}

function ordersServer(): McpServer {
  const server = new McpServer({ name: 'orders', version: '2.0.0' })
  server.registerTool('get_order', { description: 'Get an order', inputSchema: z.object({ id: z.string() }) }, async ({ id }) => ({
    content: [{ type: 'text', text: `order ${id}` }],
  }))
  return server
}

t.test('the MCP SDK 2.x registers itself with docs/mcp.md’s registration config and signs in', async (t) => {
  const mcp = await serveMcpHandler(createMcpHandler(ordersServer))
  t.teardown(() => mcp.close())
  const { passwordHash } = await demoHashes()
  // docs/mcp.md's configuration, as written there (keys from the server's own ephemeral key here).
  const served = await serveRuntime(`
public_url: \${PUBLIC_URL}
authorization_server:
  scopes:
    "mcp:tools": Use the order tools
    "orders:write": Change or delete your orders
  registration:
    enabled: true
    scopes: ["mcp:tools", "orders:write"]
    client_ttl: 30d
  users:
    - username: alice
      password_hash: "${passwordHash}"
routes:
  - name: orders-mcp
    match: { path: /mcp }
    upstream: ${mcp.url}
    scopes: { "*": ["mcp:tools"] }
    protected_resource: { name: Orders MCP }
    mcp:
      tools: { delete_order: ["orders:write"], "admin_*": ["admin"] }
`)
  t.teardown(() => served.close())
  const base = served.publicUrl
  const serverUrl = new URL(`${base}/mcp`)

  const provider = new RegisteringClientProvider()
  const client = new Client({ name: 'sdk2-registering', version: '1.0.0' })
  const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  const stopped = await refusal(client.connect(first))
  t.ok(stopped instanceof UnauthorizedError, `the SDK registered and stopped at the redirect (${String(stopped)})`)
  const registered = provider.clientInformation()
  t.type(registered?.client_id, 'string', 'registration succeeded')
  t.equal((registered as Record<string, unknown> | undefined)?.scope, 'mcp:tools offline_access', 'with the scope the SDK asked for')
  const authUrl = provider.authorizationUrls[0]
  t.equal(authUrl?.searchParams.get('scope'), 'mcp:tools offline_access', 'and asks /authorize for the same')

  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  await transport.finishAuth(provider.takeCallback())
  t.type(provider.tokens()?.refresh_token, 'string', 'offline_access: a refresh token')
  await client.connect(transport)
  t.teardown(() => client.close())
  const got = await client.callTool({ name: 'get_order', arguments: { id: '7' } })
  t.same(got.content, [{ type: 'text', text: 'order 7' }])
  t.equal(mcp.seen.at(-1)?.headers['x-auth-subject'], 'alice')

  t.test('a scope outside registration.scopes is refused, and the answer names it', async (t) => {
    const refused = await fetch(`${base}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', scope: 'mcp:tools admin offline_access' }),
    })
    t.equal(refused.status, 400)
    const body = (await refused.json()) as Record<string, unknown>
    t.equal(body.error, 'invalid_client_metadata')
    t.match(String(body.error_description), /`admin`/, 'the refused scope is named')
    const profile = await fetch(`${base}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', scope: 'openid profile' }),
    })
    t.equal(profile.status, 400, 'a data scope is the operator’s to open, even a built-in one')
    t.match(String(((await profile.json()) as Record<string, unknown>).error_description), /`profile`/)
    const odd = await fetch(`${base}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', scope: 'mcp:tools "x\\y' }),
    })
    t.equal(odd.status, 400)
    const oddBody = (await odd.json()) as Record<string, unknown>
    t.notMatch(String(oddBody.error_description), /["\\]/, 'a malformed scope is not echoed')
  })
})
