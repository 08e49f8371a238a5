/**
 * docs/mcp.md's SDK 2.x client, run as written: the page's `js` block (after
 * its marker comment) is written out as a module and imported, then used
 * against bin/bearward in front of an SDK 2.x MCP server. It negotiates
 * 2026-07-28 (`versionNegotiation: { mode: 'auto' }`), signs the person in on
 * the 401 (UnauthorizedError, finishAuth, connect again) and, on a tool that
 * needs more scope, steps up on the 403 and retries the call.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Client, OAuthClientMetadata, OAuthClientProvider, StoredOAuthClientInformation, StoredOAuthTokens } from '@modelcontextprotocol/client'
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server'
import t from 'tap'
import { z } from 'zod'
import { demoHashes } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { freePort } from '../helpers/http.js'
import { serveMcpHandler } from '../helpers/mcp-sdk2.js'
import { PersonAtTheBrowser } from '../helpers/mcp-sign-in.js'

const REDIRECT = 'http://127.0.0.1:53683/callback'
const MARKER = '<!-- test/e2e/mcp-client-example.test.ts runs this block against bin/bearward -->'

/** The page's block after the marker. */
function exampleFromDocs(): string {
  const page = readFileSync('docs/mcp.md', 'utf8')
  const at = page.indexOf(MARKER)
  if (at === -1) throw new Error('docs/mcp.md lost the marker of its client example')
  const block = /^```js\n([\s\S]*?)^```/m.exec(page.slice(at))
  if (block?.[1] === undefined) throw new Error('no js block after the marker')
  return block[1]
}

interface Example {
  connect(
    serverUrl: URL,
    provider: OAuthClientProvider,
    signedIn: () => Promise<URLSearchParams>,
  ): Promise<{ client: Client; callTool(name: string, args: Record<string, unknown>): Promise<{ content: unknown }> }>
}

/** A client registered in the YAML (public, PKCE); the person at the browser is alice. */
class OrdersAgent extends PersonAtTheBrowser<StoredOAuthClientInformation, StoredOAuthTokens> implements OAuthClientProvider {
  constructor() {
    super(REDIRECT)
    this.saveClientInformation({ client_id: 'orders-agent' })
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Orders agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], token_endpoint_auth_method: 'none' }
  }
}

function ordersServer(): McpServer {
  const server = new McpServer({ name: 'orders', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.registerTool('get_order', { description: 'Read an order', inputSchema: z.object({ id: z.string() }) }, async ({ id }) => ({
    content: [{ type: 'text', text: `order ${id}` }],
  }))
  server.registerTool('delete_order', { description: 'Delete an order', inputSchema: z.object({ id: z.string() }) }, async ({ id }) => ({
    content: [{ type: 'text', text: `deleted ${id}` }],
  }))
  return server
}

t.test("docs/mcp.md's SDK 2.x client: negotiates, signs in, steps up", async (t) => {
  const dir = resolve('dist-test/docs-examples')
  await mkdir(dir, { recursive: true })
  // Inside the repository, so the block's import resolves from its node_modules.
  const file = join(dir, 'mcp-client.mjs')
  await writeFile(file, exampleFromDocs())
  const example = (await import(pathToFileURL(file).href)) as Example

  const mcp = await serveMcpHandler(createMcpHandler(ordersServer))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { passwordHash } = await demoHashes()
  const cfg = await tempConfig(`
listen: 127.0.0.1:${port}
admin_listen: 127.0.0.1:0
public_url: ${base}
authorization_server:
  scopes:
    "mcp:tools": Use the order tools
    "orders:write": Delete your orders
  clients:
    - client_id: orders-agent
      type: public
      redirect_uris: [${REDIRECT}]
      grant_types: [authorization_code]
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
`)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await mcp.close()
    await cfg.cleanup()
  })

  const provider = new OrdersAgent()
  const { client, callTool } = await example.connect(new URL(`${base}/mcp`), provider, async () => provider.takeCallback())
  t.teardown(() => client.close())
  t.equal(provider.authorizationUrls.length, 1, 'the 401 sent the person to sign in once')
  t.equal(provider.authorizationUrls[0]?.searchParams.get('scope'), 'mcp:tools', 'for the scope the challenge named')
  t.equal(client.getNegotiatedProtocolVersion(), '2026-07-28', "versionNegotiation 'auto' speaks 2026-07-28 through bearward")

  const before = mcp.seen.length
  t.same((await callTool('get_order', { id: '7' })).content, [{ type: 'text', text: 'order 7' }], 'a tool the token allows')
  t.equal(provider.authorizationUrls.length, 1, 'no new sign-in for it')

  const deleted = await callTool('delete_order', { id: '7' })
  t.same(deleted.content, [{ type: 'text', text: 'deleted 7' }], 'the step-up tool answers after the retry')
  t.equal(provider.authorizationUrls.length, 2, 'the 403 sent the person to sign in again')
  t.equal(provider.authorizationUrls[1]?.searchParams.get('scope'), 'mcp:tools orders:write', 'for every scope the call needs')
  const deletes = mcp.seen.slice(before).filter((r) => r.headers['mcp-name'] === 'delete_order')
  t.equal(deletes.length, 1, 'the refused attempt never reached the MCP server; the retry did, once')
})
