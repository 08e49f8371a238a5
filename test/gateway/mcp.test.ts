/**
 * Per-tool scopes on a route that fronts an MCP server: the gateway reads the
 * JSON-RPC body and, for tools/call of a listed tool, requires its scopes as
 * well as the route's; one challenge names everything needed. Every refusal
 * is checked to have reached no upstream, and every admitted body to arrive
 * byte for byte.
 */
import t, { type Test } from 'tap'
import { PUBLIC_URL, startGateway, type Harness, type Reply } from './fixture.js'

/** Every protected route takes DPoP-bound tokens too (dpop: allowed): its challenges say so (RFC 9449 7.1). */
const ACCEPTS_DPOP = ', DPoP algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"'

const META = `resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`

function routes(up: string): string {
  return `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: { tools: { delete_order: ["orders:write"], refund: ["orders:write", "payments"] }, max_body: 2kb }
`
}

const call = (name: unknown, id = 1): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })

t.test('MCP per-tool scopes', async (t) => {
  const gw: Harness = await startGateway({ routes })
  t.teardown(() => gw.close())
  const narrow = await gw.mint({ scope: 'mcp:tools' })
  const wide = await gw.mint({ scope: 'mcp:tools orders:write' })

  /** POST a body to /mcp; asserts whether it reached the upstream, and that it arrived unchanged. */
  async function post(t: Test, body: string | object, o: { token?: string; headers?: Record<string, string>; reaches: boolean }): Promise<Reply> {
    const before = gw.upstream.seen.length
    const text = typeof body === 'string' ? body : JSON.stringify(body)
    const headers: Record<string, string> = { 'content-type': 'application/json', ...o.headers }
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`
    const res = await gw.send('/mcp', { method: 'POST', headers, body: text })
    t.equal(gw.upstream.seen.length, before + (o.reaches ? 1 : 0), o.reaches ? 'reached the upstream' : 'nothing reached the upstream')
    if (o.reaches) t.equal(gw.upstream.seen.at(-1)?.body, text, 'the body arrived byte for byte')
    return res
  }

  t.test('a listed tool needs its scopes besides the route', async (t) => {
    const refused = await post(t, call('delete_order'), { token: narrow, reaches: false })
    t.equal(refused.status, 403)
    t.equal(
      refused.headers['www-authenticate'],
      `Bearer realm="bearward", error="insufficient_scope", error_description="The access token does not grant the scope this request needs", scope="mcp:tools orders:write", ${META}` +
        ACCEPTS_DPOP,
    )
    t.equal((await post(t, call('delete_order'), { token: wide, reaches: true })).status, 200)
  })

  t.test('a token short of the route scope too gets one challenge naming everything', async (t) => {
    const none = await gw.mint({ scope: 'other' })
    const res = await post(t, call('refund'), { token: none, reaches: false })
    t.equal(res.status, 403)
    t.match(res.headers['www-authenticate'], / scope="mcp:tools orders:write payments", /)
  })

  t.test('without a token, the 401 names the route scopes: the body is not read before the token is valid', async (t) => {
    const res = await post(t, call('delete_order'), { reaches: false })
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], `Bearer realm="bearward", scope="mcp:tools", ${META}` + ACCEPTS_DPOP)
    const bad = await post(t, '{"broken', { token: 'not.a.jwt', reaches: false })
    t.equal(bad.status, 401, 'an invalid token is refused before the (unparsable) body is looked at')
  })

  t.test('other methods and unlisted tools are judged by the route rules', async (t) => {
    t.equal((await post(t, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { token: narrow, reaches: true })).status, 200)
    t.equal((await post(t, call('get_order'), { token: narrow, reaches: true })).status, 200)
    t.equal((await post(t, { jsonrpc: '2.0', method: 'notifications/initialized' }, { token: narrow, reaches: true })).status, 200)
    const before = gw.upstream.seen.length
    t.equal((await gw.get('/mcp', narrow, { accept: 'text/event-stream' })).status, 200, 'GET (the SSE stream) carries no body to judge')
    t.equal(gw.upstream.seen.length, before + 1)
  })

  t.test('a batch (before 2025-06-18) needs the union of its calls', async (t) => {
    const both = [call('delete_order', 1), call('refund', 2), { jsonrpc: '2.0', id: 3, method: 'tools/list' }]
    const res = await post(t, both, { token: wide, reaches: false })
    t.equal(res.status, 403)
    t.match(res.headers['www-authenticate'], / scope="mcp:tools orders:write payments", /)
    const all = await gw.mint({ scope: 'mcp:tools orders:write payments' })
    t.equal((await post(t, both, { token: all, reaches: true })).status, 200)
    t.equal(
      (await post(t, [call('delete_order', 1), call('get_order', 2)], { token: narrow, reaches: false })).status,
      403,
      'one listed call in a batch is enough to need its scopes',
    )
  })

  t.test('Mcp-Method and Mcp-Name must agree with the body', async (t) => {
    const ok = await post(t, call('delete_order'), { token: wide, headers: { 'mcp-method': 'tools/call', 'mcp-name': 'delete_order' }, reaches: true })
    t.equal(ok.status, 200)
    const cases: Array<[string, object | unknown[], Record<string, string>]> = [
      ['a method header naming another method', call('delete_order'), { 'mcp-method': 'tools/list' }],
      ['a name header naming another tool', call('delete_order'), { 'mcp-method': 'tools/call', 'mcp-name': 'get_order' }],
      ['a name header for a harmless tool on a call of a guarded one', call('delete_order'), { 'mcp-name': 'get_order' }],
      ['headers on a batch', [call('get_order')], { 'mcp-method': 'tools/call' }],
    ]
    for (const [what, body, headers] of cases) {
      const res = await post(t, body, { token: wide, headers, reaches: false })
      t.equal(res.status, 400, what)
      t.equal(res.json().error, 'invalid_request', what)
    }
    const uri = await post(
      t,
      { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'orders://1' } },
      { token: narrow, headers: { 'mcp-method': 'resources/read', 'mcp-name': 'orders://1' }, reaches: true },
    )
    t.equal(uri.status, 200, 'Mcp-Name carries params.uri when there is no name')
  })

  t.test('bodies the gateway cannot judge are refused', async (t) => {
    const broken = await post(t, '{"jsonrpc":"2.0","method":"tools/call",', { token: wide, reaches: false })
    t.equal(broken.status, 400)
    t.equal(broken.json().error_description, 'The request body is not valid JSON')
    const bom = await post(t, `\ufeff${JSON.stringify(call('delete_order'))}`, { token: narrow, reaches: false })
    t.equal(bom.status, 400, 'a BOM a lenient parser would skip')
    const nameless = await post(t, call(42), { token: wide, reaches: false })
    t.equal(nameless.status, 400)
    t.equal(nameless.json().error_description, 'A tools/call request names no tool')
    const big = await post(t, call('x'.repeat(3000)), { token: wide, reaches: false })
    t.equal(big.status, 413)
  })

  t.test('the refusals are counted as token validation results', async (t) => {
    const text = gw.metrics.render()
    t.match(text, /bearward_token_validations_total\{result="insufficient_scope"\} \d+/)
  })
})
