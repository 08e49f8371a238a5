/**
 * What an MCP SDK client shows its user when a tool's rate limit refuses a
 * call (docs/traffic.md): the SDK 1.x client against an SDK 1.x server, the
 * SDK 2.x client against an SDK 2.x server (2026-07-28), each with a token
 * in `requestInit`, as a user with a token in hand configures it. The first
 * call is answered by the server, the second is the gateway's 429, which the
 * client raises as an error naming the status and the JSON-RPC message.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client'
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpServer as McpServer1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { createMcpHandler, McpServer as McpServer2 } from '@modelcontextprotocol/server'
import t from 'tap'
import { z } from 'zod'
import { serveMcpHandler } from '../helpers/mcp-sdk2.js'
import { startGateway } from './fixture.js'

const routes = (up: string): string => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": [mcp] }
    mcp:
      tools:
        search: { rate_limit: { limit: 1, per: 1m } }`

function sdk1Server(req: IncomingMessage, res: ServerResponse, body: string): void {
  const mcp = new McpServer1({ name: 'orders', version: '1.0.0' })
  mcp.registerTool('search', { inputSchema: { q: z.string() } }, async ({ q }) => ({ content: [{ type: 'text', text: `found ${q}` }] }))
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  mcp
    .connect(transport)
    .then(() => transport.handleRequest(req, res, JSON.parse(body) as unknown))
    .catch(() => res.destroy())
}

function sdk2Server(): McpServer2 {
  const mcp = new McpServer2({ name: 'orders', version: '2.0.0' }, { capabilities: { tools: {} } })
  mcp.registerTool('search', { inputSchema: z.object({ q: z.string() }) }, async ({ q }) => ({ content: [{ type: 'text', text: `found ${q}` }] }))
  return mcp
}

async function refusal(p: Promise<unknown>): Promise<Error> {
  try {
    await p
  } catch (err) {
    if (err instanceof Error) return err
  }
  throw new Error('expected the call to fail')
}

t.test('SDK 1.x client: the second search is refused with the 429 and its message', async (t) => {
  const gw = await startGateway({ routes, upstreamHandler: sdk1Server })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp' })
  const client = new Client1({ name: 'limits-test', version: '1.0.0' })
  await client.connect(new Transport1(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
  t.teardown(() => client.close())
  const first = await client.callTool({ name: 'search', arguments: { q: 'shoes' } })
  t.same(first.content, [{ type: 'text', text: 'found shoes' }])
  const err = await refusal(client.callTool({ name: 'search', arguments: { q: 'hats' } }))
  t.equal((err as Error & { code?: unknown }).code, 429, 'the status, as the error code (StreamableHTTPError)')
  t.match(err.message, /Too Many Requests: retry after 60 s/, 'the JSON-RPC message')
})

t.test('SDK 2.x client (2026-07-28): the second search is refused with the 429 and its message', async (t) => {
  const server = await serveMcpHandler(createMcpHandler(sdk2Server))
  const gw = await startGateway({ routes: () => routes(server.url) })
  t.teardown(async () => {
    await gw.close()
    await server.close()
  })
  const token = await gw.mint({ scope: 'mcp' })
  const client = new Client2({ name: 'limits-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(new Transport2(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
  t.teardown(() => client.close())
  const first = await client.callTool({ name: 'search', arguments: { q: 'shoes' } })
  t.same(first.content, [{ type: 'text', text: 'found shoes' }])
  const seen = server.seen.length
  const err = await refusal(client.callTool({ name: 'search', arguments: { q: 'hats' } }))
  t.match(err.message, /Too Many Requests: retry after 60 s/, 'the JSON-RPC message')
  t.match(err, { name: 'SdkHttpError', data: { status: 429, statusText: 'Too Many Requests' } }, 'the status, in the error data')
  t.equal(server.seen.length, seen, 'the refused call did not reach the server')
})
