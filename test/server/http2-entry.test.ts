/**
 * What an HTTP/2 request may carry that HTTP/1.1's parser never delivers,
 * refused or normalised where both protocols enter (server/dispatch.ts)
 * before any route or endpoint runs (issue #38): a `:method` outside
 * `http.METHODS` (`delete`, `Get`: HTTP/1.1's parser takes methods
 * case-sensitively), an `:authority` with userinfo, split `cookie` fields,
 * `http2-settings`. Every request goes out through node:http2, and every
 * refusal is checked to have reached no upstream.
 */
import t, { type Test } from 'tap'
import type { ClientHttp2Session } from 'node:http2'
import { METHODS } from 'node:http'
import { startGateway, send, sendRaw, type Harness } from '../gateway/fixture.js'
import { h2Request, openSession, rawH2Request, type H2Reply } from '../helpers/http2.js'
import { eventually } from '../helpers/http.js'

function routes(up: string): string {
  return `
  - name: orders
    match: { path: /orders }
    upstream: ${up}
    scopes: { "*": ["orders:read"], DELETE: ["orders:write"], POST: ["orders:write"] }
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: { tools: { delete_order: ["orders:write"] } }
  - name: public
    match: { path: /public }
    upstream: ${up}
    public: true
`
}

const call = (name: string): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } })

t.test('an HTTP/2 :method HTTP/1.1 would not parse is refused at the entry', async (t) => {
  const gw: Harness = await startGateway({ routes, extra: 'http2: { cleartext: true }' })
  t.teardown(() => gw.close())
  const session: ClientHttp2Session = await openSession(gw.url)
  t.teardown(() => session.destroy())
  // What the upstream's own parser refused counts as having reached it: a lenient framework would have served it.
  let unparsed = 0
  gw.upstream.server.on('clientError', (_err, socket) => {
    unparsed++
    socket.destroy()
  })
  const read = await gw.mint({ scope: 'orders:read' })
  const mcp = await gw.mint({ scope: 'mcp:tools' })

  /** A request over h2 that must be refused as HTTP/1.1 refuses an unparsable method: 400 invalid_request, nothing upstream. */
  async function refused(t: Test, headers: Record<string, string>, body?: string): Promise<H2Reply> {
    const before = gw.upstream.seen.length + unparsed
    const got = await h2Request(session, headers, body)
    t.equal(got.status, 400, `${headers[':method']} ${headers[':path']}: 400`)
    t.match(got.body === '' ? {} : JSON.parse(got.body), { error: 'invalid_request' }, 'the JSON error')
    t.equal(gw.upstream.seen.length + unparsed, before, 'nothing reached the upstream')
    return got
  }

  t.test('a read-only token cannot run DELETE by spelling it in lower case', async (t) => {
    for (const method of ['delete', 'Delete', 'post', 'get', 'Get', 'put', 'patch', 'DELETe']) {
      await refused(t, { ':method': method, ':path': '/orders/7', authorization: `Bearer ${read}` })
    }
    const upper = await h2Request(session, { ':method': 'DELETE', ':path': '/orders/7', authorization: `Bearer ${read}` })
    t.equal(upper.status, 403, 'DELETE itself needs orders:write')
    const get = await h2Request(session, { ':method': 'GET', ':path': '/orders/7', authorization: `Bearer ${read}` })
    t.equal(get.status, 200, 'GET is served as ever')
    t.equal(gw.upstream.seen.at(-1)?.method, 'GET')
  })

  t.test('an mcp:tools token cannot call delete_order by posting in lower case', async (t) => {
    const headers = { ':path': '/mcp', authorization: `Bearer ${mcp}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    await refused(t, { ':method': 'post', ...headers }, call('delete_order'))
    await refused(t, { ':method': 'Post', ...headers }, call('delete_order'))
    const upper = await h2Request(session, { ':method': 'POST', ...headers }, call('delete_order'))
    t.equal(upper.status, 403, 'POST is inspected: the tool needs orders:write')
  })

  t.test('TRACE in any case is refused before any route', async (t) => {
    await refused(t, { ':method': 'trace', ':path': '/public/x' })
    await refused(t, { ':method': 'Trace', ':path': '/public/x' })
    const upper = await h2Request(session, { ':method': 'TRACE', ':path': '/public/x' })
    t.equal(upper.status, 405, 'TRACE itself is refused by the route as over HTTP/1.1')
  })

  t.test('methods no HTTP/1.1 parser knows are refused too', async (t) => {
    for (const method of ['FOO', 'BREW', 'PRI', 'get-', 'M-search', 'QUERy']) await refused(t, { ':method': method, ':path': '/public/x' })
  })

  t.test('every method HTTP/1.1 parses still reaches the route (bar CONNECT, which Node answers 405 itself)', async (t) => {
    for (const method of METHODS) {
      if (method === 'CONNECT') continue
      const got = await h2Request(session, { ':method': method, ':path': '/public/m' })
      t.not(got.status, 400, `${method}: ${got.status}`)
    }
    const before = gw.upstream.seen.length + unparsed
    const connect = await h2Request(session, { ':method': 'CONNECT', ':authority': 'gw.test:443' })
    t.equal(connect.status, 405, 'CONNECT: 405 from node:http2')
    t.equal(gw.upstream.seen.length + unparsed, before, 'nothing reached the upstream')
  })

  t.test('HEAD over HTTP/2 is forwarded and answered (it hung: a HEAD stream reads as a closed connection)', async (t) => {
    const before = gw.upstream.seen.length
    const got = await h2Request(session, { ':method': 'HEAD', ':path': '/public/head' })
    t.equal(got.status, 200)
    t.equal(got.body, '')
    t.equal(gw.upstream.seen.length, before + 1)
    t.equal(gw.upstream.seen.at(-1)?.method, 'HEAD')
  })

  t.test('the authorization server endpoints take the same methods', async (t) => {
    await refused(t, { ':method': 'post', ':path': '/token', 'content-type': 'application/x-www-form-urlencoded' }, 'grant_type=client_credentials')
    await refused(t, { ':method': 'get', ':path': '/.well-known/oauth-authorization-server' })
    const upper = await h2Request(session, { ':method': 'GET', ':path': '/.well-known/oauth-authorization-server' })
    t.equal(upper.status, 200)
  })

  t.test('HTTP/1.1 answers the same lower-case request 400 from its parser', async (t) => {
    const before = gw.upstream.seen.length
    const raw = await sendRaw(gw.url, `delete /orders/7 HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${read}\r\n\r\n`)
    t.match(raw, /^HTTP\/1\.1 400 /)
    t.equal(gw.upstream.seen.length, before)
  })
})

t.test('what an HTTP/2 request carries reaches the upstream as HTTP/1.1 would carry it', async (t) => {
  const gw: Harness = await startGateway({ routes, extra: 'http2: { cleartext: true }' })
  t.teardown(() => gw.close())
  const session: ClientHttp2Session = await openSession(gw.url)
  t.teardown(() => session.destroy())

  t.test('split cookie fields are joined into one Cookie line with "; " (RFC 9113 8.2.3)', async (t) => {
    const got = await h2Request(session, { ':path': '/public/c', cookie: ['a=1', 'b=2', 'c=3'] })
    t.equal(got.status, 200)
    const raw = gw.upstream.seen.at(-1)?.rawHeaders ?? []
    const cookies = raw.filter((_, i) => i % 2 === 1 && raw[i - 1]?.toLowerCase() === 'cookie')
    t.same(cookies, ['a=1; b=2; c=3'], 'one Cookie line')
  })

  t.test('http2-settings is not forwarded, on either protocol', async (t) => {
    // node:http2's client refuses to send it; an attacker's client does not.
    const before = gw.upstream.seen.length
    const socket = await rawH2Request(gw.url, [
      [':method', 'GET'],
      [':scheme', 'http'],
      [':authority', 'gw.test'],
      [':path', '/public/s'],
      ['http2-settings', 'AAMAAABkAAQAoAAAAAIAAAAA'],
    ])
    t.teardown(() => socket.destroy())
    t.ok(await eventually(() => gw.upstream.seen.length > before), 'the request was forwarded')
    t.equal(gw.upstream.seen.at(-1)?.url, '/public/s')
    t.equal(gw.upstream.seen.at(-1)?.headers['http2-settings'], undefined)
    const h1 = await send(gw.url, '/public/s1', { headers: { 'http2-settings': 'AAMAAABk' } })
    t.equal(h1.status, 200)
    t.equal(gw.upstream.seen.at(-1)?.headers['http2-settings'], undefined)
  })

  t.test('an :authority or Host with userinfo is refused (RFC 9113 8.3.1, RFC 9112 3.2)', async (t) => {
    const before = gw.upstream.seen.length
    for (const authority of ['evil@gw.test', 'user:pass@gw.test', '@gw.test']) {
      const got = await h2Request(session, { ':path': '/public/u', ':authority': authority })
      if (got.status === undefined) {
        // Node 24's nghttp2 refuses it itself, before bearward sees the stream.
        t.equal(got.rstCode, 1, `:authority ${authority}: reset with PROTOCOL_ERROR`)
      } else {
        t.equal(got.status, 400, `:authority ${authority}`)
        t.match(JSON.parse(got.body), { error: 'invalid_request' })
      }
    }
    const h1 = await send(gw.url, '/public/u', { headers: { host: 'evil@gw.test' } })
    t.equal(h1.status, 400, 'Host with userinfo over HTTP/1.1')
    t.equal(gw.upstream.seen.length, before, 'nothing reached the upstream')
    const ok = await h2Request(session, { ':path': '/public/u', ':authority': 'gw.test:8080' })
    t.equal(ok.status, 200)
    t.equal(gw.upstream.seen.at(-1)?.headers['x-forwarded-host'], 'gw.test:8080')
  })
})

t.test('an HTTP/1.1 Upgrade: h2c is answered 400, saying why, not closed unanswered', async (t) => {
  const gw: Harness = await startGateway({ routes, extra: 'http2: { cleartext: true }' })
  t.teardown(() => gw.close())
  const before = gw.upstream.seen.length
  for (const target of ['/public/x', '/orders/1', '/token', '/nowhere']) {
    const raw = await sendRaw(
      gw.url,
      `GET ${target} HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n`,
    )
    t.match(raw, /^HTTP\/1\.1 400 /, `${target}: 400`)
    t.match(raw, /"error":"invalid_request"/)
    t.match(raw, /h2c/, 'the answer says why')
  }
  for (const [line, why] of [
    ['POST /public/x HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 0', /GET/],
    ['GET /public/x HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade\r\nUpgrade: TLS/1.2', /WebSocket/],
  ] as const) {
    const raw = await sendRaw(gw.url, `${line}\r\n\r\n`)
    t.match(raw, /^HTTP\/1\.1 400 /, `${line.split('\r\n')[0]} with ${line.split('Upgrade: ')[1]?.split('\r')[0]}: 400`)
    t.match(raw, why)
  }
  t.equal(gw.upstream.seen.length, before)
})
