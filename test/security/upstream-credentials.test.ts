/**
 * Issue #38, "judge what you forward": credentials of the client or of the
 * person that must never cross to an upstream, on the real binary.
 *
 * - A token sent in a form body (RFC 6750 2.2, `token_in_body`) is taken out
 *   of the body before forwarding, as one in the query is, in every
 *   `upstream_token` mode: the upstream gets the other fields byte for byte
 *   and a Content-Length that counts them.
 * - bearward's own sign-in cookies (bw_session, bw_csrf, bw_known,
 *   bw_upstream and their `__Host-` forms) are the person's session at the
 *   authorization server on the same origin: they are removed from the
 *   Cookie header of every route, over HTTP/1.1, HTTP/2 and WebSocket
 *   upgrades, and an upstream cannot set them in the browser.
 */
import t from 'tap'
import { connect, type ClientHttp2Session, type IncomingHttpHeaders as H2Headers } from 'node:http2'
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { gzipSync } from 'node:zlib'
import { closeServer, listen } from '../helpers/http.js'
import { openLoginForm, postLogin, rawHttp, send, serviceToken, startTarget, type Target } from '../helpers/attack.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'

interface Seen {
  url: string
  rawHeaders: string[]
  body: Buffer
}

/** What the upstream received, raw; `/app/set-cookie` and upgrades answer with the Set-Cookie lines of {@link upstreamCookies}. */
const seen: Seen[] = []
const upstreamCookies = [
  'theme=dark; Path=/',
  'bw_session=attacker0123456789abcdefghijklmnopqrstu; Path=/',
  '__Host-bw_session=attacker0123456789abcdefghijklmnopqrstu; Path=/; Secure',
  '__HOST-bw_session=attacker0123456789abcdefghijklmnopqrstu; Path=/; Secure',
  '__Secure-bw_csrf=attacker; Path=/; Secure',
  'bw_known=attacker; Path=/',
  'bw_upstream=attacker; Path=/',
  ' bw_session =attacker; Path=/',
  // A nameless cookie is sent back by browsers as its bare value: `bw_session=attacker`.
  '=bw_session=attacker0123456789abcdefghijklmnopqrstu; Path=/',
  'lang=en',
]
const keptCookies = ['theme=dark; Path=/', 'lang=en']

let target: Target
let session: ClientHttp2Session

t.before(async () => {
  const recorder = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      seen.push({ url: req.url ?? '', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks) })
      if (req.url?.endsWith('/set-cookie') === true) res.setHeader('set-cookie', upstreamCookies)
      if (req.url?.endsWith('/refuse-upgrade') === true) res.statusCode = 403
      res.end('ok')
    })
  })
  recorder.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    seen.push({ url: req.url ?? '', rawHeaders: req.rawHeaders, body: Buffer.alloc(0) })
    const cookies = upstreamCookies.map((c) => `Set-Cookie: ${c}\r\n`).join('')
    if (req.url?.endsWith('/refuse-upgrade') === true) {
      socket.end(`HTTP/1.1 403 Forbidden\r\n${cookies}Content-Length: 2\r\nConnection: close\r\n\r\nno`)
      return
    }
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${cookies}\r\n`)
    socket.end()
  })
  const { url: up } = await listen(recorder)
  target = await startTarget({
    gateway: '{ trusted_proxies: [127.0.0.1] }',
    top: 'http2: { cleartext: true }',
    routes: () => `
  - name: form-exchange
    match: { path: /form-exchange }
    upstream: ${up}
    token_in_body: true
    upstream_token: exchange
    scopes: { "*": [orders:read] }
  - name: form-assertion
    match: { path: /form-assertion }
    upstream: ${up}
    token_in_body: true
    upstream_token: assertion
    scopes: { "*": [orders:read] }
  - name: form-passthrough
    match: { path: /form-passthrough }
    upstream: ${up}
    token_in_body: true
    scopes: { "*": [orders:read] }
  - name: form-forward
    match: { path: /form-forward }
    upstream: ${up}
    token_in_body: true
    forward_authorization: true
    scopes: { "*": [orders:read] }
  - name: app
    match: { path: /app }
    upstream: ${up}
    public: true
  - name: private
    match: { path: /private }
    upstream: ${up}
    scopes: { "*": [orders:read] }
`,
  })
  session = connect(target.url)
  session.on('error', () => {})
  t.teardown(async () => {
    session.destroy()
    await target.close()
    void closeServer(recorder)
  })
})

function valuesOf(s: Seen | undefined, name: string): string[] {
  const out: string[] = []
  const raw = s?.rawHeaders ?? []
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] ?? '').toLowerCase() === name) out.push(raw[i + 1] ?? '')
  return out
}

/** The one request the upstream received while `act` ran. */
async function received(act: () => Promise<unknown>): Promise<Seen | undefined> {
  const before = seen.length
  await act()
  const got = seen.slice(before)
  return got.length === 1 ? got[0] : undefined
}

const FORM = 'application/x-www-form-urlencoded'

t.test('a form-body token never reaches the upstream, in every upstream_token mode, the other fields byte for byte', async (t) => {
  const token = await serviceToken(target)
  for (const route of ['form-exchange', 'form-assertion', 'form-passthrough', 'form-forward']) {
    for (const [label, body, forwarded] of [
      ['the brief', `note=hi&access_token=${token}`, 'note=hi'],
      ['token first, odd encodings kept', `access_token=${token}&a=%41%2b+b&z=%E2%82%AC&w&=&&x=%ZZ`, 'a=%41%2b+b&z=%E2%82%AC&w&=&&x=%ZZ'],
      ['an encoded parameter name', `a=1&%61ccess%5Ftoken=${token}&b=2`, 'a=1&b=2'],
      ['a token only', `access_token=${token}`, ''],
    ] as const) {
      const got = await received(async () => {
        const res = await fetch(`${target.url}/${route}/x`, { method: 'POST', headers: { 'content-type': FORM }, body })
        t.equal(res.status, 200, `${route}, ${label}: forwarded`)
        await res.arrayBuffer()
      })
      t.equal(got?.body.toString('latin1'), forwarded, `${route}, ${label}: the body without the token`)
      t.notMatch(JSON.stringify(got?.rawHeaders ?? []), token, `${route}, ${label}: no token in any header`)
      t.same(valuesOf(got, 'content-length'), forwarded === '' ? ['0'] : [String(Buffer.byteLength(forwarded))], `${route}, ${label}: Content-Length`)
      t.same(valuesOf(got, 'transfer-encoding'), [], `${route}, ${label}: not chunked`)
    }
  }
})

t.test('a form-body token in a chunked body never reaches the upstream; bytes that are not UTF-8 pass unchanged', async (t) => {
  const token = await serviceToken(target)
  const latin = Buffer.from([0x6e, 0x3d, 0xe9, 0xff, 0x25, 0x46, 0x46]) // n=\xe9\xff%FF
  for (const route of ['form-exchange', 'form-passthrough']) {
    const got = await received(
      () =>
        new Promise<void>((resolve, reject) => {
          const u = new URL(`${target.url}/${route}/chunked`)
          const req = httpRequest(
            { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': FORM, 'transfer-encoding': 'chunked' } },
            (res) => {
              t.equal(res.statusCode, 200, `${route}: forwarded`)
              res.resume()
              res.on('end', resolve)
            },
          )
          req.on('error', reject)
          req.write(Buffer.concat([latin, Buffer.from('&acc')]))
          req.write(`ess_token=${token.slice(0, 10)}`)
          req.write(`${token.slice(10)}&tail=1`)
          req.end()
        }),
    )
    const want = Buffer.concat([latin, Buffer.from('&tail=1')])
    t.same(got?.body, want, `${route}: the other fields byte for byte`)
    t.same(valuesOf(got, 'content-length'), [String(want.length)], `${route}: Content-Length counts what is sent`)
    t.same(valuesOf(got, 'transfer-encoding'), [], `${route}: not chunked`)
  }
})

t.test('a compressed form body, which the gateway cannot read for a token, is refused where body tokens are taken', async (t) => {
  const token = await serviceToken(target)
  for (const encoding of ['gzip', 'deflate, identity', 'GZIP']) {
    const before = seen.length
    const res = await fetch(`${target.url}/form-exchange/x`, {
      method: 'POST',
      headers: { 'content-type': FORM, 'content-encoding': encoding, authorization: `Bearer ${token}` },
      body: gzipSync(`note=hi&access_token=${token}`),
    })
    t.equal(res.status, 400, `${encoding}: refused`)
    t.match(await res.text(), /invalid_request/)
    t.equal(seen.length, before, `${encoding}: nothing forwarded`)
  }
  const plain = await fetch(`${target.url}/form-exchange/x`, {
    method: 'POST',
    headers: { 'content-type': FORM, 'content-encoding': 'identity' },
    body: `note=hi&access_token=${token}`,
  })
  t.equal(plain.status, 200, '`identity` is no encoding')
})

t.test('a repeated form-body token is refused and nothing reaches the upstream', async (t) => {
  const token = await serviceToken(target)
  const before = seen.length
  const res = await fetch(`${target.url}/form-exchange/x`, {
    method: 'POST',
    headers: { 'content-type': FORM },
    body: `access_token=${token}&%61ccess_token=${token}`,
  })
  t.equal(res.status, 400)
  t.equal(seen.length, before, 'nothing forwarded')
})

/** alice's browser after signing in: the Cookie header it sends on public_url's origin (bw_csrf, bw_session, bw_known). */
async function aliceCookies(): Promise<string[]> {
  const login = await openLoginForm(target.url)
  const res = await postLogin(target.url, login, 'alice', DEMO_PASSWORD, '203.0.113.7')
  const set = res.cookies.map((c) => c.slice(0, c.indexOf(';')))
  const all = [login.cookie, ...set]
  if (!set.some((c) => c.startsWith('bw_session=')) || !set.some((c) => c.startsWith('bw_known=')))
    throw new Error(`no session after login: ${res.status} ${res.cookies.join(' | ')}`)
  return all
}

t.test("bearward's sign-in cookies never reach an upstream, on a public or a protected route; other cookies byte for byte", async (t) => {
  const own = await aliceCookies()
  const cookie = ['theme=dark', ...own, 'other="quoted value"'].join('; ')
  const account = await send(`${target.url}/account`, { headers: { cookie } })
  t.equal(account.status, 200)
  t.match(account.body, /Applications you allowed/, "alice's cookies open her account page")

  const got = await received(async () => t.equal((await send(`${target.url}/app/home`, { headers: { cookie } })).status, 200))
  t.same(valuesOf(got, 'cookie'), ['theme=dark; other="quoted value"'], 'only the upstream’s own cookies')
  const replay = await send(`${target.url}/account`, { headers: { cookie: valuesOf(got, 'cookie').join('; ') } })
  t.notMatch(replay.body, /Applications you allowed/, 'what the upstream received does not open her account page')

  const token = await serviceToken(target)
  const protectedGot = await received(async () =>
    t.equal((await send(`${target.url}/private/x`, { headers: { cookie, authorization: `Bearer ${token}` } })).status, 200),
  )
  t.same(valuesOf(protectedGot, 'cookie'), ['theme=dark; other="quoted value"'], 'a protected route too')

  const onlyOwn = await received(async () => t.equal((await send(`${target.url}/app/home`, { headers: { cookie: own.join('; ') } })).status, 200))
  t.same(valuesOf(onlyOwn, 'cookie'), [], 'no Cookie header when nothing else remains')
})

t.test("every spelling of bearward's cookie names is removed, on every Cookie line", async (t) => {
  const v = 'x0123456789abcdefghijklmnopqrstuvwxyzABCDEF'
  const got = await received(async () => {
    const res = await rawHttp(
      target.url,
      'GET /app/lines HTTP/1.1\r\nHost: x\r\nConnection: close\r\n' +
        `Cookie: a=1;bw_session=${v};b=2\r\n` +
        `Cookie: __Host-bw_session=${v}; __HOST-bw_csrf=${v}; __Secure-bw_known=${v}\r\n` +
        `Cookie:  bw_upstream =${v} ;c=3; BW_Session=${v}\r\n` +
        'Cookie: d=4\r\n\r\n',
    )
    t.equal(res.status, 200)
  })
  t.same(valuesOf(got, 'cookie'), ['a=1;b=2', 'c=3', 'd=4'], 'lines that keep a cookie keep their bytes; a line left empty is dropped')
  t.notMatch(JSON.stringify(got?.rawHeaders ?? []), v, 'no own cookie value anywhere')
})

t.test("an upstream cannot set bearward's sign-in cookies in the browser", async (t) => {
  const res = await send(`${target.url}/app/set-cookie`)
  t.equal(res.status, 200)
  t.same(res.cookies, keptCookies, 'only the upstream’s own cookies reach the browser')
  const logged = await target.bin.waitForLog((e) => e.msg === 'upstream set-cookie for a bearward cookie dropped')
  t.equal(logged.level, 40, 'at warn')
  t.notMatch(target.bin.lines.join('\n'), /attacker/, 'the value is never logged')
})

function h2(headers: Record<string, string | string[]>): Promise<{ status: number; headers: H2Headers }> {
  return new Promise((resolve, reject) => {
    const req = session.request(headers)
    req.on('response', (h) => {
      req.resume()
      req.on('end', () => resolve({ status: Number(h[':status']), headers: h }))
    })
    req.on('error', reject)
  })
}

t.test("over HTTP/2, bearward's cookies are removed from every cookie field and cannot be set by an upstream", async (t) => {
  const own = await aliceCookies()
  const got = await received(async () => {
    const answer = await h2({ ':method': 'GET', ':path': '/app/h2', cookie: ['theme=dark', ...own, 'bw_', 'session=x', 'lang=en'] })
    t.equal(answer.status, 200)
  })
  const forwarded = valuesOf(got, 'cookie').join('; ')
  t.notMatch(forwarded, /bw_session=|bw_csrf=|bw_known=/, 'no own cookie in any field')
  t.match(forwarded, /theme=dark/)
  t.match(forwarded, /lang=en/)
  t.notMatch(forwarded, /bw_session/, 'split fields cannot be joined into an own cookie')

  const answer = await h2({ ':method': 'GET', ':path': '/app/set-cookie' })
  t.same(answer.headers['set-cookie'], keptCookies, 'only the upstream’s own cookies reach the client')
})

/** An HTTP/2 request with a body and no content-length (HTTP/2 frames it; RFC 9113 8.1.1). */
function h2Post(path: string, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': FORM, ...headers })
    req.on('response', (h) => {
      req.resume()
      req.on('end', () => resolve(Number(h[':status'])))
    })
    req.on('error', reject)
    req.end(body)
  })
}

t.test('over HTTP/2, a form-body token without a content-length is read and taken out like any other', async (t) => {
  const token = await serviceToken(target)
  for (const route of ['form-exchange', 'form-passthrough']) {
    const got = await received(async () => t.equal(await h2Post(`/${route}/h2`, {}, `note=hi&access_token=${token}`), 200, `${route}: the body token is found`))
    t.equal(got?.body.toString(), 'note=hi', `${route}: the body without the token`)
    t.same(valuesOf(got, 'content-length'), ['7'], `${route}: Content-Length`)
  }
  const before = seen.length
  t.equal(
    await h2Post('/form-passthrough/h2', { authorization: `Bearer ${token}` }, `note=hi&access_token=${token}`),
    400,
    'header and body: more than one way',
  )
  t.equal(seen.length, before, 'nothing forwarded')
})

/** A WebSocket handshake through the gateway; resolves with the response head the client read. */
function upgrade(path: string, cookie: string): Promise<{ status: number; cookies: string[] }> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${target.url}${path}`)
    const req = httpRequest({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', cookie },
    })
    req.on('upgrade', (res, socket) => {
      socket.destroy()
      resolve({ status: res.statusCode ?? 0, cookies: res.headers['set-cookie'] ?? [] })
    })
    req.on('response', (res) => {
      res.resume()
      resolve({ status: res.statusCode ?? 0, cookies: res.headers['set-cookie'] ?? [] })
    })
    req.on('error', reject)
    req.end()
  })
}

t.test("a WebSocket upgrade carries none of bearward's cookies either way", async (t) => {
  const own = await aliceCookies()
  const cookie = ['theme=dark', ...own].join('; ')
  for (const path of ['/app/ws', '/app/refuse-upgrade']) {
    let answer: { status: number; cookies: string[] } | undefined
    const got = await received(async () => {
      answer = await upgrade(path, cookie)
    })
    t.equal(answer?.status, path === '/app/ws' ? 101 : 403, `${path}: the upstream's answer`)
    t.same(valuesOf(got, 'cookie'), ['theme=dark'], `${path}: only the upstream’s own cookies upstream`)
    t.same(answer?.cookies, keptCookies, `${path}: only the upstream’s own cookies back`)
  }
})
