/**
 * List results filtered by the token (issue #30.5): tools/list,
 * resources/list, resources/templates/list and prompts/list show only what
 * the same token may call, read or get, in JSON and in SSE answers, page by
 * page with the cursors kept; a filtered answer is private (Cache-Control,
 * and cacheScope for a 2026-07-28 request) and its Content-Length right.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import t, { type Test } from 'tap'
import { startGateway, type Harness, type Reply } from './fixture.js'

const TOOLS = [
  { name: 'get_order', inputSchema: { type: 'object' } },
  { name: 'delete_order', inputSchema: { type: 'object' } },
  { name: 'admin_wipe', inputSchema: { type: 'object' } },
]
const PAGES: Record<string, { tools: unknown[]; nextCursor?: string }> = {
  '': { tools: TOOLS.slice(0, 2), nextCursor: 'p2' },
  p2: { tools: TOOLS.slice(2) },
}

/** What the fake MCP server answers for a list request, by method. */
function resultOf(method: string, params: Record<string, unknown> | undefined): Record<string, unknown> {
  switch (method) {
    case 'tools/list':
      return { ...(PAGES[String(params?.cursor ?? '')] ?? { tools: [] }), ttlMs: 60000, cacheScope: 'public' }
    case 'resources/list':
      return { resources: [{ uri: 'orders://1', name: 'o1' }, { uri: 'docs://readme', name: 'readme' }, { name: 'no uri' }] }
    case 'resources/templates/list':
      return {
        resourceTemplates: [
          { uriTemplate: 'orders://{id}', name: 'order' },
          { uriTemplate: 'docs://{page}', name: 'doc' },
        ],
      }
    case 'prompts/list':
      return { prompts: [{ name: 'summary' }, { name: 'hello' }] }
    default:
      return {}
  }
}

/** The fake MCP server: JSON unless the request's Accept prefers SSE (x-answer: sse). */
function mcpServer(req: IncomingMessage, res: ServerResponse, body: string): void {
  const msg = JSON.parse(body) as { id: number | string; method: string; params?: Record<string, unknown> }
  const answer = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: resultOf(msg.method, msg.params) })
  if (req.headers['x-answer'] === 'sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    // A progress notification first, the response split across writes, a comment, CRLF line ends.
    res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":"delete_order"}}\n\n')
    res.write(`: keep-alive\n\nid: 7\r\nevent: message\r\ndata: ${answer.slice(0, 20)}`)
    setImmediate(() => res.end(`${answer.slice(20)}\r\n\r\n`))
    return
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer), 'cache-control': 'public, max-age=60' })
  res.end(answer)
}

function routes(extra: string): (up: string) => string {
  return (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp:
      tools: { delete_order: ["orders:write"], "admin_*": ["admin"] }
      resources: { "orders://*": ["orders:read"] }
      prompts: { summary: ["orders:read"] }
${extra}
`
}

t.test('list results follow the token', async (t) => {
  const gw: Harness = await startGateway({ routes: routes(''), upstreamHandler: mcpServer })
  t.teardown(() => gw.close())
  const narrow = await gw.mint({ scope: 'mcp:tools' })
  const wide = await gw.mint({ scope: 'mcp:tools orders:write orders:read admin' })

  const list = (token: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Reply> =>
    gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    })
  const result = (r: Reply): Record<string, unknown> => r.json().result as Record<string, unknown>
  const names = (items: unknown, key = 'name'): string[] => (items as Array<Record<string, string>>).map((i) => i[key] as string)

  function privateAnswer(t: Test, r: Reply): void {
    t.equal(r.status, 200)
    t.match(r.headers['cache-control'], /^private\b/, 'Cache-Control: private')
    t.notMatch(r.headers['cache-control'], /public/)
    t.equal(Number(r.headers['content-length']), Buffer.byteLength(r.body), 'Content-Length is the rewritten body length')
  }

  t.test('tools/list, page by page, with the cursor kept', async (t) => {
    const first = await list(narrow, 'tools/list')
    privateAnswer(t, first)
    t.same(names(result(first).tools), ['get_order'], 'delete_order is not shown to a token that would get 403 for it')
    t.equal(result(first).nextCursor, 'p2', 'the cursor goes on')
    t.equal(result(first).cacheScope, 'private', 'cacheScope private')
    const second = await list(narrow, 'tools/list', { cursor: 'p2' })
    t.same(names(result(second).tools), [], 'an emptied page is still a page')
    t.same(names(result(await list(wide, 'tools/list')).tools), ['get_order', 'delete_order'])
    t.same(names(result(await list(wide, 'tools/list', { cursor: 'p2' })).tools), ['admin_wipe'])
  })

  t.test('resources, templates and prompts', async (t) => {
    t.same(names(result(await list(narrow, 'resources/list')).resources, 'uri'), ['docs://readme'], 'an item without a uri is not shown either')
    t.same(names(result(await list(wide, 'resources/list')).resources, 'uri'), ['orders://1', 'docs://readme'])
    t.same(names(result(await list(narrow, 'resources/templates/list')).resourceTemplates, 'uriTemplate'), ['docs://{page}'])
    t.same(names(result(await list(narrow, 'prompts/list')).prompts), ['hello'])
    t.same(names(result(await list(wide, 'prompts/list')).prompts), ['summary', 'hello'])
  })

  t.test('an SSE answer streams through, only the response event rewritten', async (t) => {
    const r = await list(narrow, 'tools/list', {}, { 'x-answer': 'sse' })
    t.equal(r.status, 200)
    t.equal(r.headers['content-type'], 'text/event-stream')
    t.equal(r.headers['cache-control'], 'private, no-cache')
    const events = r.body.split(/\r?\n\r?\n/).filter((e) => e !== '')
    t.equal(events.length, 3, 'progress, comment, response')
    t.match(events[0], /notifications\/progress.*"progressToken":"delete_order"/, 'other events pass unchanged')
    t.equal(events[1], ': keep-alive')
    t.match(events[2], /^id: 7\nevent: message\ndata: /, 'the event keeps its id and type')
    const data = JSON.parse((events[2] as string).replace(/^[\s\S]*?data: /, '')) as { result: { tools: Array<{ name: string }> } }
    t.same(
      data.result.tools.map((x) => x.name),
      ['get_order'],
    )
  })

  t.test('a response to another method is not touched', async (t) => {
    const r = await list(narrow, 'ping')
    t.equal(r.headers['cache-control'], 'public, max-age=60')
  })
})

t.test('filter_lists: false passes lists unchanged', async (t) => {
  const gw = await startGateway({ routes: routes('      filter_lists: false'), upstreamHandler: mcpServer })
  t.teardown(() => gw.close())
  const narrow = await gw.mint({ scope: 'mcp:tools' })
  const r = await gw.send('/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${narrow}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })
  t.equal((r.json().result as { tools: unknown[] }).tools.length, 2)
  t.equal(r.headers['cache-control'], 'public, max-age=60')
})

t.test('an answer that cannot be filtered is not passed on', async (t) => {
  const gw = await startGateway({
    routes: routes(''),
    upstreamHandler: (req, res) => {
      if (req.headers['x-answer'] === 'gzip') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        res.end('\x1f\x8b')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_order"}]')
    },
  })
  t.teardown(() => gw.close())
  const narrow = await gw.mint({ scope: 'mcp:tools' })
  for (const answer of ['gzip', 'truncated']) {
    const r = await gw.send('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${narrow}`, 'x-answer': answer },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    t.equal(r.status, 502, answer)
    t.notMatch(r.body, /delete_order/, answer)
  }
})
