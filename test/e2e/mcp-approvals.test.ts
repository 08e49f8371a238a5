/**
 * Approval of a sensitive MCP tool call, end to end (issue #41, docs/approvals.md): bin/bearward in
 * front of an SDK 2.x server (`createMcpHandler`, unmodified), the SDK 2.x client (unmodified) signed
 * in as alice. `delete_order` says `approval: required`. On 2026-07-28 the client's own
 * `input_required` driver hands the `elicitation/create` (mode url) to its elicitation handler: here
 * the person at the browser, who signs in on the approval page and approves; the driver's retry then
 * reaches the server once. A second call needs a new approval (`reuse: once`), changed arguments
 * another one, and bob's session cannot approve alice's. The same server on 2025-11-25, stateless
 * (no session to remember the capability with), gets the tool result that names the page.
 */
import t, { type Test } from 'tap'
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
import { startBin, tempConfig } from '../helpers/bin.js'
import { DEMO_PASSWORD, demoHashes } from '../helpers/as-config.js'
import { Browser, parseForms } from '../helpers/browser.js'
import { freePort } from '../helpers/http.js'
import { serveMcpHandler, type RunningMcpHandler } from '../helpers/mcp-sdk2.js'
import { PersonAtTheBrowser, refusal } from '../helpers/mcp-sign-in.js'

const REDIRECT = 'http://127.0.0.1:53684/callback'
const MODERN = '2026-07-28'

function ordersServer(): McpServer {
  const server = new McpServer({ name: 'orders', version: '2.0.0' }, { capabilities: { tools: {} } })
  server.registerTool('delete_order', { description: 'Delete an order', inputSchema: z.object({ id: z.string() }) }, async ({ id }) => ({
    content: [{ type: 'text', text: `deleted ${id}` }],
  }))
  return server
}

class AgentProvider extends PersonAtTheBrowser<StoredOAuthClientInformation, StoredOAuthTokens> implements OAuthClientProvider {
  constructor() {
    super(REDIRECT)
    this.saveClientInformation({ client_id: 'agent' })
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
}

/** The person at a browser: signs in on the approval page (as `username`) and presses `decision`; the page's status. */
async function decideAt(url: string, username: string, decision: 'approve' | 'deny'): Promise<number> {
  const b = new Browser()
  const login = await b.get(url)
  const loginForm = parseForms(await login.text(), url).find((f) => 'password' in f.fields)
  if (loginForm === undefined) throw new Error('no login form on the approval page')
  const back = await b.submit(loginForm, { username, password: DEMO_PASSWORD })
  const page = await b.get(new URL(back.headers.get('location') ?? '', url).toString())
  const html = await page.text()
  if (page.status !== 200) return page.status
  const form = parseForms(html, url).find((f) => f.buttons.some((x) => x.name === 'decision'))
  if (form === undefined) throw new Error('no decision form')
  return (await b.submit(form, { decision })).status
}

async function setUp(t: Test): Promise<{ base: string; mcp: RunningMcpHandler }> {
  const mcp = await serveMcpHandler(createMcpHandler(ordersServer))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { passwordHash } = await demoHashes()
  const config = await tempConfig(`
listen: 127.0.0.1:${port}
admin_listen: 127.0.0.1:0
public_url: ${base}
authorization_server:
  scopes:
    "mcp:tools": Use the order tools
    "orders:write": Delete your orders
  clients:
    - client_id: agent
      name: Order Agent
      type: public
      redirect_uris: [${REDIRECT}]
      grant_types: [authorization_code]
      scopes: ["mcp:tools", "orders:write"]
  users:
    - username: alice
      password_hash: "${passwordHash}"
    - username: bob
      password_hash: "${passwordHash}"
routes:
  - name: mcp
    match: { path: /mcp }
    upstream: ${mcp.url}
    scopes: { "*": ["mcp:tools"] }
    mcp:
      tools:
        delete_order: { scopes: ["orders:write"], approval: required }
`)
  const bin = await startBin(config.file, {}, 60_000).catch(async (err: unknown) => {
    await mcp.close()
    await config.cleanup()
    throw err
  })
  t.teardown(async () => {
    await bin.stop()
    await mcp.close()
    await config.cleanup()
  })
  return { base, mcp }
}

/** A connected SDK 2.x client of alice's, with a token carrying orders:write, and an elicitation handler. */
interface Agent {
  /** callTool, finishing a step-up sign-in (the 403 naming orders:write) once when the SDK stops at its redirect. */
  call(args: Record<string, unknown>): Promise<Awaited<ReturnType<Client['callTool']>>>
}

async function connect(t: Test, base: string, version: string, elicit: (url: string) => Promise<void>): Promise<Agent> {
  const serverUrl = new URL(`${base}/mcp`)
  const provider = new AgentProvider()
  const client = new Client({ name: 'agent', version: '1.0.0' }, {
    capabilities: { elicitation: { url: {} } },
    versionNegotiation: { mode: version === MODERN ? { pin: version } : 'legacy' },
  } as ConstructorParameters<typeof Client>[1])
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params as { mode?: string; url?: string }
    if (params.mode !== 'url' || params.url === undefined) return { action: 'decline' }
    await elicit(params.url)
    return { action: 'accept' }
  })
  const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  t.ok((await refusal(client.connect(first))) instanceof UnauthorizedError, 'signed in at the redirect')
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider })
  await transport.finishAuth(provider.takeCallback())
  await client.connect(transport)
  t.teardown(() => client.close())
  return {
    call: async (args) => {
      try {
        return await client.callTool({ name: 'delete_order', arguments: args })
      } catch (err) {
        if (!(err instanceof UnauthorizedError)) throw err
        await transport.finishAuth(provider.takeCallback())
        return client.callTool({ name: 'delete_order', arguments: args })
      }
    },
  }
}

const toolCalls = (mcp: RunningMcpHandler): number => mcp.seen.filter((s) => s.body.includes('"tools/call"')).length

t.test('SDK 2.x on 2026-07-28: the person approves on the page, the retried call reaches the server once', async (t) => {
  const { base, mcp } = await setUp(t)
  const pages: string[] = []
  let person = 'alice'
  const agent = await connect(t, base, MODERN, async (url) => {
    pages.push(url)
    t.equal(await decideAt(url, person, 'approve'), person === 'alice' ? 200 : 403, `${person} at the page`)
    if (person !== 'alice') throw new Error('not approved')
  })
  const done = await agent.call({ id: '42' })
  t.same(done.content, [{ type: 'text', text: 'deleted 42' }])
  t.equal(pages.length, 1, 'one approval page')
  t.match(pages[0], new RegExp(`^${base}/approve\\?id=`))
  t.equal(toolCalls(mcp), 1, 'the call reached the server once')
  const forwarded = JSON.parse(mcp.seen.at(-1)?.body ?? '{}') as { params: Record<string, unknown> }
  t.notOk('requestState' in forwarded.params, 'without the gateway’s requestState')

  const again = await agent.call({ id: '42' })
  t.same(again.content, [{ type: 'text', text: 'deleted 42' }])
  t.equal(pages.length, 2, 'reuse once: the second call needed a new approval')
  t.not(pages[1], pages[0])
  t.equal(toolCalls(mcp), 2)

  await agent.call({ id: '43' })
  t.equal(pages.length, 3, 'changed arguments: another approval')

  person = 'bob'
  const refused = await refusal(agent.call({ id: '44' }))
  t.ok(refused !== null, 'bob cannot approve alice’s call: the client gives up')
  t.equal(toolCalls(mcp), 3, 'nothing more reached the server')
})

t.test('SDK 2.x on 2025-11-25 against a stateless server: a tool result names the page', async (t) => {
  const { base, mcp } = await setUp(t)
  const agent = await connect(t, base, '2025-11-25', async () => {
    throw new Error('no elicitation expected without a session')
  })
  const held = await agent.call({ id: '7' })
  t.equal(held.isError, true)
  const text = (held.content as Array<{ text: string }>)[0]?.text ?? ''
  const url = /(http:\/\/\S+\/approve\?id=[A-Za-z0-9_-]{22})/.exec(text)?.[1]
  if (url === undefined) throw new Error(`no URL in ${text}`)
  t.equal(toolCalls(mcp), 0)
  t.equal(await decideAt(url, 'alice', 'approve'), 200)
  const done = await agent.call({ id: '7' })
  t.same(done.content, [{ type: 'text', text: 'deleted 7' }])
  t.equal(toolCalls(mcp), 1)
})
