/**
 * The MCP inspector decides on every message of a body (issue #28.1): each
 * request needs the scopes of what it names, a response or an ordinary
 * notification none, and a body it cannot classify completely is 400, never
 * passed on the route rule alone. Attacks first: the batch of the issue, and
 * every way a lenient server behind could read a call the gateway did not
 * judge. Each refusal is checked to have reached no upstream.
 */
import t, { type Test } from 'tap'
import { startGateway, type Harness, type Reply } from './fixture.js'

function routes(up: string): string {
  return `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp:
      tools: { delete_order: ["orders:write"], "admin_*": ["admin"] }
      resources: { "orders://*": ["orders:read"] }
      prompts: { summary: ["orders:read"] }
`
}

const call = (name: unknown, id: unknown = 1): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } })

t.test('the MCP inspector', async (t) => {
  const gw: Harness = await startGateway({ routes })
  t.teardown(() => gw.close())
  const narrow = await gw.mint({ scope: 'mcp:tools' })
  const wide = await gw.mint({ scope: 'mcp:tools orders:write orders:read admin' })

  async function post(t: Test, body: string | object, o: { token: string; headers?: Record<string, string>; reaches: boolean }): Promise<Reply> {
    const before = gw.upstream.seen.length
    const text = typeof body === 'string' ? body : JSON.stringify(body)
    const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${o.token}`, ...o.headers }
    const res = await gw.send('/mcp', { method: 'POST', headers, body: text })
    t.equal(gw.upstream.seen.length, before + (o.reaches ? 1 : 0), o.reaches ? 'reached the upstream' : 'nothing reached the upstream')
    return res
  }

  t.test('the issue: a batch holding a response does not carry a call past its scopes', async (t) => {
    const withResult = `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_order","arguments":{"id":7}}},{"jsonrpc":"2.0","id":"x","result":{}}]`
    const res = await post(t, withResult, { token: narrow, reaches: false })
    t.equal(res.status, 403)
    t.match(res.headers['www-authenticate'], / scope="mcp:tools orders:write", /)
    const withError = [call('delete_order'), { jsonrpc: '2.0', id: 'x', error: { code: -1, message: 'no' } }]
    t.equal((await post(t, withError, { token: narrow, reaches: false })).status, 403, 'an error member instead of result')
    t.equal((await post(t, withError, { token: wide, reaches: true })).status, 200, 'with the scope, the batch goes through')
    const responsesOnly = [{ jsonrpc: '2.0', id: 'x', result: {} }]
    t.equal((await post(t, responsesOnly, { token: narrow, reaches: true })).status, 200, 'a response needs no tool scope')
  })

  t.test('batches are not MCP from 2025-06-18 on', async (t) => {
    for (const version of ['2025-06-18', '2025-11-25', '2026-07-28']) {
      const res = await post(t, [call('get_order')], { token: wide, headers: { 'mcp-protocol-version': version }, reaches: false })
      t.equal(res.status, 400, version)
      t.equal(res.json().error_description, 'JSON-RPC batches are not part of MCP since revision 2025-06-18')
    }
    const enveloped = [{ ...call('get_order'), params: { name: 'get_order', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }]
    t.equal((await post(t, enveloped, { token: wide, reaches: false })).status, 400, 'a batch whose message claims 2026-07-28')
    t.equal(
      (await post(t, [call('get_order')], { token: wide, headers: { 'mcp-protocol-version': '2025-03-26' }, reaches: true })).status,
      200,
      '2025-03-26 had them',
    )
  })

  t.test('bodies that are not completely understood are 400', async (t) => {
    const cases: Array<[string, string]> = [
      ['an empty batch', '[]'],
      ['a batch with a non-object member', `[${JSON.stringify(call('get_order'))}, 1]`],
      ['a batch with a null member', `[${JSON.stringify(call('get_order'))}, null]`],
      ['JSON that is not JSON-RPC', '{"hello":1}'],
      ['a string', '"tools/call"'],
      ['jsonrpc 1.0', JSON.stringify({ ...call('get_order'), jsonrpc: '1.0' })],
      ['an unknown member', JSON.stringify({ ...call('get_order'), extra: 1 })],
      ['a message that is request and response at once', JSON.stringify({ ...call('delete_order'), result: {} })],
      ['a response with result and error', '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}'],
      ['params as an array', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["delete_order"]}'],
      ['a null id', JSON.stringify(call('delete_order', null))],
      ['a fractional id', JSON.stringify(call('delete_order', 1.5))],
      ['an object id', JSON.stringify(call('delete_order', { a: 1 }))],
      ['a method in another case', JSON.stringify({ ...call('delete_order'), method: 'Tools/Call' })],
      ['a method with a space', JSON.stringify({ ...call('delete_order'), method: 'tools/call ' })],
      ['a tool name that is not a string', JSON.stringify(call(['delete_order']))],
      ['duplicate names', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_order","name":"get_order"}}'],
      ['duplicate names, one escaped', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_order","n\\u0061me":"get_order"}}'],
      ['a duplicate method', '{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{"name":"delete_order"}}'],
      ['a __proto__ member', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"__proto__":{"name":"delete_order"},"name":"get_order"}}'],
      ['two requests with one id', `[${JSON.stringify(call('get_order', 1))},${JSON.stringify(call('get_order', 1))}]`],
      ['a BOM', `\ufeff${JSON.stringify(call('get_order'))}`],
      ['a completion of an unknown ref type', '{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/tool","name":"x"}}}'],
      ['an empty body', ''],
    ]
    for (const [what, body] of cases) {
      const res = await post(t, body, { token: wide, reaches: false })
      t.equal(res.status, 400, what)
      t.equal(res.json().error, 'invalid_request', what)
    }
    const before = gw.upstream.seen.length
    const latin1 = await gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${wide}` },
      body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order\xff"}}', 'latin1')]),
    })
    t.equal(latin1.status, 400, 'bytes that are not UTF-8')
    t.equal(gw.upstream.seen.length, before)
  })

  t.test('a POST that is not application/json is 400', async (t) => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'application/jsonx', 'multipart/form-data']) {
      const res = await post(t, call('get_order'), { token: wide, headers: { 'content-type': type }, reaches: false })
      t.equal(res.status, 400, type)
    }
    const before = gw.upstream.seen.length
    const none = await gw.send('/mcp', { method: 'POST', headers: { authorization: `Bearer ${wide}` }, body: JSON.stringify(call('get_order')) })
    t.equal(none.status, 400, 'no Content-Type')
    t.equal(gw.upstream.seen.length, before)
    t.equal((await post(t, call('get_order'), { token: wide, headers: { 'content-type': 'Application/JSON; charset="UTF-8"' }, reaches: true })).status, 200)
  })

  t.test('a notification of a judged method needs its scopes (a server may run it and drop the answer)', async (t) => {
    const note = { jsonrpc: '2.0', method: 'tools/call', params: { name: 'delete_order' } }
    t.equal((await post(t, note, { token: narrow, reaches: false })).status, 403)
    t.equal((await post(t, { jsonrpc: '2.0', method: 'notifications/initialized' }, { token: narrow, reaches: true })).status, 200)
  })

  t.test('resources, prompts, completions and patterns', async (t) => {
    const read = (uri: string, method = 'resources/read'): object => ({ jsonrpc: '2.0', id: 2, method, params: { uri } })
    t.equal((await post(t, read('orders://7'), { token: narrow, reaches: false })).status, 403, 'a resource under a pattern')
    t.equal((await post(t, read('orders://7', 'resources/subscribe'), { token: narrow, reaches: false })).status, 403, 'subscribing to it')
    t.equal((await post(t, read('docs://readme'), { token: narrow, reaches: true })).status, 200, 'a resource no rule names')
    t.equal((await post(t, read('orders://7'), { token: wide, reaches: true })).status, 200)
    const prompt = { jsonrpc: '2.0', id: 3, method: 'prompts/get', params: { name: 'summary' } }
    t.equal((await post(t, prompt, { token: narrow, reaches: false })).status, 403, 'a listed prompt')
    const complete = {
      jsonrpc: '2.0',
      id: 4,
      method: 'completion/complete',
      params: { ref: { type: 'ref/prompt', name: 'summary' }, argument: { name: 'a', value: '' } },
    }
    t.equal((await post(t, complete, { token: narrow, reaches: false })).status, 403, 'completing a listed prompt')
    const admin = await post(t, call('admin_wipe'), { token: narrow, reaches: false })
    t.equal(admin.status, 403, 'a tool under a * pattern')
    t.match(admin.headers['www-authenticate'], / scope="mcp:tools admin", /)
    t.equal((await post(t, call('administer'), { token: narrow, reaches: true })).status, 200, 'admin_* does not match administer')
    t.equal((await post(t, { jsonrpc: '2.0', id: 5, method: 'resources/read', params: {} }, { token: wide, reaches: false })).status, 400, 'a read without uri')
  })
})
