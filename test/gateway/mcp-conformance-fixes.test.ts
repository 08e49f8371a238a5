/**
 * Two answers the MCP conformance scenarios for 2026-07-28 (`server-stateless`)
 * found bearward changing (test/e2e/mcp-conformance-2026.test.ts):
 *
 * - a version the gateway does not know (`MCP-Protocol-Version: v999.0.0`)
 *   was its own 400 `invalid_request`, so the client never learnt the
 *   server's revisions (the server answers -32022 with `data.supported` and
 *   the request's id). Now it is the server's to refuse, unless the route
 *   limits `protocol_versions`, and it is judged by the strictest rules;
 * - a `resources/subscribe` without a `uri` (a method 2026-07-28 removed:
 *   the server answers 404, -32601) was 400 "names no resource" on a route
 *   with no resource rules, where no URI could need more than the route's
 *   scopes. A route with resource rules still refuses it.
 */
import t, { type Test } from 'tap'
import { startGateway, type Harness, type Reply } from './fixture.js'

const META = { 'io.modelcontextprotocol/protocolVersion': 'v999.0.0', 'io.modelcontextprotocol/clientCapabilities': {} }
const UNKNOWN = { 'mcp-protocol-version': 'v999.0.0', 'mcp-method': 'server/discover' }

async function gateway(
  t: Test,
  mcp: string,
): Promise<{ gw: Harness; post: (body: object, headers: Record<string, string>, reaches: boolean) => Promise<Reply> }> {
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: ${mcp}
`,
  })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp:tools orders:read' })
  const post = async (body: object, headers: Record<string, string>, reaches: boolean): Promise<Reply> => {
    const before = gw.upstream.seen.length
    const res = await gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    })
    t.equal(gw.upstream.seen.length, before + (reaches ? 1 : 0), reaches ? 'reached the upstream' : 'nothing reached the upstream')
    return res
  }
  return { gw, post }
}

t.test('a protocol version the gateway does not know is the server to refuse', async (t) => {
  const { post } = await gateway(t, '{ tools: { delete_order: ["orders:write"] } }')
  const discover = { jsonrpc: '2.0', id: 301, method: 'server/discover', params: { _meta: META } }
  t.equal((await post(discover, UNKNOWN, true)).status, 200, 'forwarded: the server names the revisions it supports')
  // It gets the strictest rules: the standard headers are required, as in 2026-07-28.
  const bare = await post(discover, { 'mcp-protocol-version': 'v999.0.0' }, false)
  t.equal(bare.status, 400)
  t.equal((bare.json().error as { code?: number }).code, -32020, 'no Mcp-Method: HeaderMismatch, with the id')
  t.equal(bare.json().id, 301)
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_order', _meta: META } }
  const refused = await post(call, { ...UNKNOWN, 'mcp-method': 'tools/call', 'mcp-name': 'delete_order' }, false)
  t.equal(refused.status, 403, 'the body is judged as always: a tool the token may not call')
  const batch = [discover]
  t.equal((await post(batch, { 'mcp-protocol-version': 'v999.0.0' }, false)).status, 400, 'no batches')
  for (const value of ['2026-07-28, 2026-07-28', 'a b', 'x'.repeat(65)]) {
    const res = await post(discover, { ...UNKNOWN, 'mcp-protocol-version': value }, false)
    t.equal(res.status, 400, `not a version token: ${value.slice(0, 20)}`)
    t.equal(res.json().error, 'invalid_request')
  }
})

t.test('a version outside protocol_versions is refused in the client terms', async (t) => {
  const { post } = await gateway(t, '{ protocol_versions: ["2026-07-28"] }')
  const res = await post({ jsonrpc: '2.0', id: 301, method: 'server/discover', params: { _meta: META } }, UNKNOWN, false)
  t.equal(res.status, 400)
  t.same(res.json(), {
    jsonrpc: '2.0',
    id: 301,
    error: { code: -32022, message: 'Unsupported protocol version: v999.0.0', data: { supported: ['2026-07-28'], requested: 'v999.0.0' } },
  })
})

t.test('a request without a name needs one only where a rule could use it', async (t) => {
  const meta = { ...META, 'io.modelcontextprotocol/protocolVersion': '2026-07-28' }
  const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/subscribe' }
  const subscribe = { jsonrpc: '2.0', id: 500, method: 'resources/subscribe', params: { _meta: meta } }
  const open = await gateway(t, '{ tools: { delete_order: ["orders:write"] } }')
  t.equal((await open.post(subscribe, headers, true)).status, 200, 'no resource rules: the server answers')
  const nameless = { jsonrpc: '2.0', id: 501, method: 'tools/call', params: { _meta: meta } }
  const refused = await open.post(nameless, { ...headers, 'mcp-method': 'tools/call' }, false)
  t.equal(refused.status, 400, 'tool rules: a tools/call naming no tool is refused')
  t.equal(refused.json().error_description, 'A tools/call request names no tool')
  const ruled = await gateway(t, '{ resources: { "orders://*": ["orders:read"] } }')
  const res = await ruled.post(subscribe, headers, false)
  t.equal(res.status, 400, 'resource rules: nothing to judge it by')
  t.equal(res.json().error_description, 'A resources/subscribe request names no resource')
})
