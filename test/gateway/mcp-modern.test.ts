/**
 * MCP 2026-07-28 requests at the gateway (issue #30.1-4, 30.7): the
 * standard headers are required and must agree with the body (Mcp-Name
 * decoded from its base64 form first); a problem is 400 with the JSON-RPC
 * HeaderMismatch error (-32020) carrying the request's id, as the SDK's own
 * server answers, so a client of both eras reads it as a modern answer.
 * `mcp.protocol_versions` refuses other revisions in the client's terms, and
 * `mcp.allowed_origins` browser requests from other origins (403).
 */
import t, { type Test } from 'tap'
import { PUBLIC_URL, startGateway, type Harness, type Reply } from './fixture.js'

const MODERN = '2026-07-28'
const META_KEY = 'io.modelcontextprotocol/protocolVersion'

/** A 2026-07-28 request body as the SDK 2.x client sends it. */
function modern(method: string, params: Record<string, unknown>, id: string | number = 1, version = MODERN): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: { [META_KEY]: version, 'io.modelcontextprotocol/clientCapabilities': {} } } }
}

/** The SDK's encoding of an Mcp-Name value that is not plain ASCII. */
const b64 = (s: string): string => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`

t.test('MCP 2026-07-28 headers and route policies', async (t) => {
  const gw: Harness = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp:
      tools: { delete_order: ["orders:write"] }
      prompts: { "Zusammenfassung für Müller": ["orders:read"] }
      protocol_versions: ["2025-11-25", "2026-07-28"]
      allowed_origins: ["https://app.example.com"]
`,
  })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp:tools orders:write orders:read' })

  async function post(t: Test, body: object | string, headers: Record<string, string>, reaches: boolean): Promise<Reply> {
    const before = gw.upstream.seen.length
    const res = await gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
    t.equal(gw.upstream.seen.length, before + (reaches ? 1 : 0), reaches ? 'reached the upstream' : 'nothing reached the upstream')
    return res
  }

  const std = (method: string, name?: string): Record<string, string> => ({
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
  })

  /** A 400 with the JSON-RPC HeaderMismatch error naming the request's id. */
  function mismatch(t: Test, res: Reply, id: string | number, what: string): void {
    t.equal(res.status, 400, what)
    t.equal(res.headers['content-type'], 'application/json', what)
    const body = res.json()
    t.equal(body.jsonrpc, '2.0', what)
    t.equal(body.id, id, `${what}: the request's id`)
    t.equal((body.error as { code: number }).code, -32020, `${what}: HeaderMismatch`)
  }

  t.test('a request with its headers agreeing goes through', async (t) => {
    t.equal((await post(t, modern('tools/call', { name: 'delete_order' }), std('tools/call', 'delete_order'), true)).status, 200)
    t.equal((await post(t, modern('tools/list', {}), std('tools/list'), true)).status, 200)
  })

  t.test('missing headers are refused (#30.1)', async (t) => {
    mismatch(t, await post(t, modern('tools/list', {}, 'q'), { 'mcp-protocol-version': MODERN }, false), 'q', 'no Mcp-Method')
    mismatch(t, await post(t, modern('tools/call', { name: 'get_order' }, 2), std('tools/call'), false), 2, 'a tools/call without Mcp-Name')
    mismatch(t, await post(t, modern('resources/read', { uri: 'orders://1' }, 3), std('resources/read'), false), 3, 'a resources/read without Mcp-Name')
    mismatch(t, await post(t, modern('prompts/get', { name: 'x' }, 4), std('prompts/get'), false), 4, 'a prompts/get without Mcp-Name')
    mismatch(t, await post(t, modern('tools/list', {}, 5), { 'mcp-method': 'tools/list' }, false), 5, 'a body claiming 2026-07-28 without MCP-Protocol-Version')
  })

  t.test('MCP-Protocol-Version disagreeing with the body is refused (#30.2)', async (t) => {
    const res = await post(t, modern('tools/list', {}, 6, '2026-07-28'), { ...std('tools/list'), 'mcp-protocol-version': '2025-11-25' }, false)
    mismatch(t, res, 6, 'header 2025-11-25, body 2026-07-28')
  })

  t.test('Mcp-Name in its base64 form is decoded before comparing (#30.3)', async (t) => {
    const name = 'Zusammenfassung für Müller'
    t.equal((await post(t, modern('prompts/get', { name }), std('prompts/get', b64(name)), true)).status, 200, 'a prompt name that is not ASCII')
    t.equal((await post(t, modern('tools/call', { name: 'list_orders' }), std('tools/call', b64('list_orders')), true)).status, 200, 'the issue example')
    const narrow = await gw.mint({ scope: 'mcp:tools' })
    const res = await gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${narrow}`, ...std('prompts/get', b64(name)) },
      body: JSON.stringify(modern('prompts/get', { name })),
    })
    t.equal(res.status, 403, 'the decoded name is the one judged')
    mismatch(t, await post(t, modern('tools/call', { name: 'delete_order' }, 7), std('tools/call', b64('get_order')), false), 7, 'an encoded other name')
    mismatch(
      t,
      await post(t, modern('tools/call', { name: 'delete_order' }, 8), std('tools/call', '=?base64?ZGVsZXRl_29yZGVy?='), false),
      8,
      'not canonical base64 (url-safe alphabet)',
    )
    mismatch(
      t,
      await post(t, modern('tools/call', { name: 'delete_order' }, 9), std('tools/call', '=?base64?/w==?='), false),
      9,
      'base64 of bytes that are not UTF-8',
    )
  })

  t.test('Mcp-Method naming another method, a repeated header (#30.4)', async (t) => {
    mismatch(t, await post(t, modern('tools/call', { name: 'delete_order' }, 'm'), std('tools/list'), false), 'm', 'Mcp-Method tools/list on a call')
    const repeated = await gw.send('/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': ['get_order', 'delete_order'],
      },
      body: JSON.stringify(modern('tools/call', { name: 'delete_order' })),
    })
    mismatch(t, repeated, 1, 'Mcp-Name sent twice')
  })

  t.test('protocol_versions (#30.7)', async (t) => {
    const old = await post(t, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2025-06-18' }, false)
    t.equal(old.status, 400)
    t.same(old.json(), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'Bad Request: Unsupported protocol version: 2025-06-18 (supported versions: 2025-11-25, 2026-07-28)' },
    })
    const future = await post(t, modern('tools/list', {}, 'f', '2027-01-01'), { ...std('tools/list'), 'mcp-protocol-version': '2027-01-01' }, false)
    t.equal(future.status, 400)
    t.same(
      future.json(),
      {
        jsonrpc: '2.0',
        id: 'f',
        error: {
          code: -32022,
          message: 'Unsupported protocol version: 2027-01-01',
          data: { supported: ['2025-11-25', '2026-07-28'], requested: '2027-01-01' },
        },
      },
      'a modern client is told the supported revisions',
    )
    t.equal(future.headers['mcp-protocol-version'], undefined)
    const noHeader = await post(t, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {}, false)
    t.equal(noHeader.status, 400, 'no header is 2025-03-26, not accepted here')
    const init = {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    }
    t.equal((await post(t, init, {}, true)).status, 200, 'initialize negotiates in the server: it carries no header yet')
    t.equal((await post(t, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2025-11-25' }, true)).status, 200)
    const before = gw.upstream.seen.length
    const get = await gw.send('/mcp', { headers: { authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-03-26' } })
    t.equal(get.status, 400, 'a GET stream of a revision not accepted')
    t.equal(gw.upstream.seen.length, before)
    const malformed = await post(t, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': 'latest' }, false)
    t.equal(malformed.status, 400)
  })

  t.test('allowed_origins (#30.7)', async (t) => {
    const ok = await post(t, modern('tools/list', {}), { ...std('tools/list'), origin: 'https://app.example.com' }, true)
    t.equal(ok.status, 200)
    for (const origin of ['https://evil.example', 'null', PUBLIC_URL, 'https://app.example.com.evil.example', 'not an origin']) {
      const res = await post(t, modern('tools/list', {}), { ...std('tools/list'), origin }, false)
      t.equal(res.status, 403, origin)
      t.same(res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Forbidden: Requests from this Origin are not accepted' } }, origin)
    }
    const noToken = await gw.send('/mcp', { method: 'POST', headers: { 'content-type': 'application/json', origin: 'https://evil.example' }, body: '{}' })
    t.equal(noToken.status, 403, 'refused before the token is looked at')
    t.equal((await post(t, modern('tools/list', {}), std('tools/list'), true)).status, 200, 'no Origin: not a browser request')
  })
})

t.test('the default allowed origin is public_url', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: {}
`,
  })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp:tools' })
  const send = (origin: string): Promise<Reply> =>
    gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, origin },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
  t.equal((await send(PUBLIC_URL)).status, 200)
  t.equal((await send('http://localhost:6274')).status, 403, 'another origin, e.g. a local inspector page')
  t.equal(gw.upstream.seen.length, 1)
})
