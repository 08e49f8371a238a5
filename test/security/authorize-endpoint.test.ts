/**
 * Attacks on the authorization endpoint (RFC 6749 4.1, RFC 9700 2.1 and 4.1,
 * RFC 8252 7.3 / 8.3, RFC 7636, docs/architecture.md "Redirect URIs and codes" and the
 * authorization-endpoint error table), against the real binary.
 *
 * What must hold: a redirect goes only to a registered URI, matched byte for
 * byte (the one exception: the port of a native app's loopback IP URI);
 * problems with client_id or redirect_uri are an error page, never a
 * Location; later problems go back to the verified URI with state exactly as
 * sent; nothing the request carries can become markup in a page; every page
 * forbids framing.
 */
import t, { type Test } from 'tap'
import { Browser, parseForms } from '../helpers/browser.js'
import { startUpstream } from '../helpers/upstream.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { healthy, pkce, rawHttp, startTarget, type Target } from '../helpers/attack.js'

const WEB_REDIRECT = 'http://127.0.0.1:5555/callback'
const SPA_REDIRECT = 'https://app.example.com/cb'
const HOSTILE_NAME = `<img src=x onerror=alert(1)>"'&`

let target: Target

t.before(async () => {
  target = await startTarget({
    clients: `
    - client_id: spa
      name: "<img src=x onerror=alert(1)>\\"'&"
      type: public
      redirect_uris: ["${SPA_REDIRECT}"]
      scopes: [openid, orders:read]
`,
  })
})
t.teardown(() => target.close())

const { challenge } = pkce()

/** A valid authorization request for `client` with overrides; `null` removes a parameter. */
function authorizeUrl(client: 'web' | 'spa' | 'cli', overrides: Record<string, string | null> = {}): string {
  const redirect = client === 'web' ? WEB_REDIRECT : client === 'spa' ? SPA_REDIRECT : 'http://127.0.0.1:49152/callback'
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: client,
    redirect_uri: redirect,
    scope: 'orders:read',
    state: 'st-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
  }
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== null) q.append(k, v)
  return `${target.url}/authorize?${q}`
}

const get = (url: string): Promise<Response> => fetch(url, { redirect: 'manual' })

/** The answer is the error page: 400 HTML, no Location, nothing of the attacker's URI in it. */
async function assertErrorPage(t: Test, res: Response, label: string): Promise<string> {
  const body = await res.text()
  t.equal(res.status, 400, `${label}: 400`)
  t.equal(res.headers.get('location'), null, `${label}: no Location`)
  t.match(res.headers.get('content-type'), /^text\/html/, `${label}: an HTML page`)
  t.notMatch(body, /evil|attacker/i, `${label}: the page does not show or link the attacker's URI`)
  return body
}

/** The answer is a redirect to `registered` carrying `error` (and iss). */
function assertErrorRedirect(t: Test, res: Response, registered: string, error: string, label: string): URL {
  t.equal(res.status, 302, `${label}: 302`)
  const location = res.headers.get('location') ?? ''
  const url = new URL(location)
  t.equal(`${url.origin}${url.pathname}`, registered, `${label}: back to the registered URI only`)
  t.equal(url.searchParams.get('error'), error, `${label}: error=${error}`)
  t.equal(url.searchParams.get('code'), null, `${label}: no code`)
  t.equal(url.searchParams.get('iss'), target.url, `${label}: iss (RFC 9207)`)
  return url
}

t.test('redirect_uri must equal a registered URI byte for byte: anything else is an error page, never a redirect', async (t) => {
  const webTricks = [
    `${WEB_REDIRECT}/`,
    `${WEB_REDIRECT}?next=https://evil.example/`,
    `${WEB_REDIRECT}?`,
    'http://127.0.0.1:5555/CALLBACK',
    'HTTP://127.0.0.1:5555/callback',
    'http://127.0.0.1:5555/call',
    `${WEB_REDIRECT}x`,
    `${WEB_REDIRECT}/../evil`,
    `${WEB_REDIRECT}/evil`,
    'http://127.0.0.1:5555@evil.example/callback',
    'http://evil.example@127.0.0.1:5555/callback',
    'http://127.0.0.1:5555\\@evil.example/callback',
    `${WEB_REDIRECT}#evil`,
    'http://127.0.0.1:5555%2Fcallback',
    'http://127.0.0.1:5555/callback%2F',
    'http://127.0.0.1:5555/%63allback',
    'http://127.0.0.1:5555\\callback',
    'https://127.0.0.1:5555/callback',
    'http://localhost:5555/callback',
    'http://127.0.0.2:5555/callback',
    'http://[::1]:5555/callback',
    'http://2130706433:5555/callback',
    ` ${WEB_REDIRECT}`,
    `${WEB_REDIRECT}%00`,
    'javascript://127.0.0.1:5555/callback%0aalert(1)',
    'https://evil.example/callback',
  ]
  for (const uri of webTricks) await assertErrorPage(t, await get(authorizeUrl('web', { redirect_uri: uri })), `web ${JSON.stringify(uri)}`)

  const spaTricks = [
    'https://app.example.com/cb/',
    'https://APP.example.com/cb',
    'https://app.example.com./cb',
    'https://app.example.com:443/cb',
    'http://app.example.com/cb',
    'https://\u0430pp.example.com/cb', // Cyrillic а: an IDN lookalike
    'https://xn--pp-8cd.example.com/cb',
    'https://app.example.com.evil.example/cb',
    'https://app.example.com%2eevil.example/cb',
    'https://app.example.com@evil.example/cb',
    'https://app.example.com/cb/..',
    'https://app.example.com/CB',
    'https://app.example.com/cb?evil=1',
    'https://app.example.com/c%62',
    '//app.example.com/cb',
    'app.example.com/cb',
  ]
  for (const uri of spaTricks) await assertErrorPage(t, await get(authorizeUrl('spa', { redirect_uri: uri })), `spa ${JSON.stringify(uri)}`)

  // The exact registered values are accepted (the refusals above are about the differences).
  t.equal((await get(authorizeUrl('web'))).status, 200, 'the registered web URI shows the login page')
  t.equal((await get(authorizeUrl('spa'))).status, 200, 'the registered spa URI shows the login page')
})

t.test('loopback redirect URIs of a native app: any port on the registered IP literal, nothing else (RFC 8252 7.3, 8.3)', async (t) => {
  t.equal((await get(authorizeUrl('cli', { redirect_uri: 'http://127.0.0.1:49152/callback' }))).status, 200, 'an ephemeral port is accepted')
  t.equal((await get(authorizeUrl('cli', { redirect_uri: 'http://127.0.0.1/callback' }))).status, 200, 'no port is accepted')
  const refused = [
    'http://localhost:49152/callback',
    'http://localhost/callback',
    'http://127.0.0.2:49152/callback',
    'http://127.1:49152/callback',
    'http://[::1]:49152/callback',
    'https://127.0.0.1:49152/callback',
    'http://127.0.0.1:49152/callback/',
    'http://127.0.0.1:49152/other',
    'http://127.0.0.1:0/callback',
    'http://127.0.0.1:65536/callback',
    'http://127.0.0.1:99999/callback',
    'http://127.0.0.1:-1/callback',
    'http://127.0.0.1:49152@evil.example/callback',
    'http://127.0.0.1:49152.evil.example/callback',
    'http://127.0.0.1.evil.example:49152/callback',
    'http://127.0.0.1:49152/callback?x=1',
  ]
  for (const uri of refused) await assertErrorPage(t, await get(authorizeUrl('cli', { redirect_uri: uri })), `cli ${JSON.stringify(uri)}`)
})

t.test("a web (confidential) client's registered loopback URI keeps its port: the variable port is for native apps only", async (t) => {
  // docs/architecture.md, Redirect URIs: "The only exception is a variable port in a
  // loopback redirect URI of a native application." `web` is a confidential
  // server-side client registered with port 5555; another local process
  // listening on 5556 must not receive its codes.
  for (const uri of ['http://127.0.0.1:5556/callback', 'http://127.0.0.1/callback', 'http://127.0.0.1:80/callback']) {
    await assertErrorPage(t, await get(authorizeUrl('web', { redirect_uri: uri })), `web ${uri}`)
  }
})

t.test('client_id problems are an error page, never a redirect (no open redirector)', async (t) => {
  const cases: Array<[string, string]> = [
    ['unknown client', `${target.url}/authorize?response_type=code&client_id=evil&redirect_uri=${encodeURIComponent('https://evil.example/cb')}&state=x`],
    ['missing client_id', `${target.url}/authorize?response_type=code&redirect_uri=${encodeURIComponent('https://evil.example/cb')}&state=x`],
    ['empty client_id', `${target.url}/authorize?response_type=code&client_id=&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`],
    ['repeated client_id', `${authorizeUrl('web')}&client_id=spa`],
    ['repeated redirect_uri', `${authorizeUrl('web')}&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`],
    [
      'unknown client, bad response_type',
      `${target.url}/authorize?response_type=token&client_id=nobody&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`,
    ],
    ['bad redirect and bad response_type', authorizeUrl('web', { redirect_uri: 'https://evil.example/cb', response_type: 'token' })],
    ['bad redirect and prompt=none', authorizeUrl('web', { redirect_uri: 'https://evil.example/cb', prompt: 'none' })],
    ['bad redirect_uri and bad scope', authorizeUrl('spa', { redirect_uri: 'https://evil.example/cb', scope: 'nope' })],
  ]
  for (const [label, url] of cases) await assertErrorPage(t, await get(url), label)
  const post = await fetch(`${target.url}/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: 'https://evil.example/cb', state: 'x' }),
  })
  await assertErrorPage(t, post, 'POST /authorize with a bad redirect_uri')
})

t.test('state comes back exactly as sent, URL-encoded in Location; absent state stays absent', async (t) => {
  const states = ['"><script>alert(1)</script>', "a b&c=d#e+f%20g'", 'ünïcödé-✓', '\r\nSet-Cookie: x=1', 'x'.repeat(2000)]
  for (const state of states) {
    const res = await get(authorizeUrl('web', { response_type: 'token', state }))
    const url = assertErrorRedirect(t, res, WEB_REDIRECT, 'unsupported_response_type', `state ${JSON.stringify(state.slice(0, 20))}`)
    t.equal(url.searchParams.get('state'), state, 'state unchanged')
    const location = res.headers.get('location') ?? ''
    t.notMatch(location, /[<>"` \r\n]/, 'Location holds no raw markup, double quote, space or line break')
  }
  const none = await get(authorizeUrl('web', { response_type: 'token', state: null }))
  const url = assertErrorRedirect(t, none, WEB_REDIRECT, 'unsupported_response_type', 'no state')
  t.notOk(url.searchParams.has('state'), 'no state parameter is invented')
})

t.test('response_type other than code is refused at the redirect URI (RFC 9700 2.1.2: no implicit)', async (t) => {
  for (const rt of [
    'token',
    'id_token',
    'code token',
    'code id_token',
    'id_token token',
    'code id_token token',
    'CODE',
    'Code',
    'code ',
    ' code',
    'code,token',
    'none',
  ]) {
    assertErrorRedirect(
      t,
      await get(authorizeUrl('web', { response_type: rt })),
      WEB_REDIRECT,
      'unsupported_response_type',
      `response_type ${JSON.stringify(rt)}`,
    )
  }
  const encoded = await get(authorizeUrl('web', { response_type: null }) + '&response_type=code%20id_token')
  assertErrorRedirect(t, encoded, WEB_REDIRECT, 'unsupported_response_type', 'response_type=code%20id_token')
  assertErrorRedirect(t, await get(authorizeUrl('web', { response_type: '' })), WEB_REDIRECT, 'invalid_request', 'empty response_type')
  assertErrorRedirect(t, await get(authorizeUrl('web', { response_type: null })), WEB_REDIRECT, 'invalid_request', 'missing response_type')
  assertErrorRedirect(t, await get(authorizeUrl('web', { response_mode: 'fragment' })), WEB_REDIRECT, 'invalid_request', 'response_mode=fragment')
  assertErrorRedirect(t, await get(authorizeUrl('web', { response_mode: 'form_post' })), WEB_REDIRECT, 'invalid_request', 'response_mode=form_post')
})

t.test('PKCE is required, S256 only, and well-formed (RFC 7636 4.2, RFC 9700 2.1.1)', async (t) => {
  const cases: Array<[string, Record<string, string | null>]> = [
    ['missing (confidential client)', { code_challenge: null, code_challenge_method: null }],
    ['plain', { code_challenge_method: 'plain' }],
    ['method omitted means plain', { code_challenge_method: null }],
    ['lower-case s256', { code_challenge_method: 's256' }],
    ['unknown method', { code_challenge_method: 'S512' }],
    ['method without challenge', { code_challenge: null }],
    ['42 characters', { code_challenge: challenge.slice(0, 42) }],
    ['44 characters', { code_challenge: `${challenge}A` }],
    ['base64 with padding', { code_challenge: `${challenge.slice(0, 42)}=` }],
    ['base64 + and /', { code_challenge: `${challenge.slice(0, 41)}+/` }],
    ['space inside', { code_challenge: `${challenge.slice(0, 20)} ${challenge.slice(21)}` }],
    ['non-ASCII', { code_challenge: `${challenge.slice(0, 42)}é` }],
    ['128 characters', { code_challenge: 'a'.repeat(128) }],
  ]
  for (const [label, o] of cases) assertErrorRedirect(t, await get(authorizeUrl('web', o)), WEB_REDIRECT, 'invalid_request', `PKCE ${label}`)
  assertErrorRedirect(
    t,
    await get(authorizeUrl('cli', { code_challenge: null, code_challenge_method: null })),
    'http://127.0.0.1:49152/callback',
    'invalid_request',
    'public client without PKCE',
  )
})

t.test('repeated parameters are invalid_request (RFC 6749 3.1)', async (t) => {
  for (const name of ['response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'nonce', 'prompt']) {
    const res = await get(`${authorizeUrl('web', { nonce: 'n', prompt: 'login' })}&${name}=x`)
    assertErrorRedirect(t, res, WEB_REDIRECT, 'invalid_request', `repeated ${name}`)
  }
})

t.test('scope: unknown, not allowed for the client, or absurd is invalid_scope', async (t) => {
  for (const scope of ['admin', 'orders:read admin', 'orders:write', 'openid\u0000admin', 'orders:read\torders:write']) {
    assertErrorRedirect(t, await get(authorizeUrl('spa', { scope })), SPA_REDIRECT, 'invalid_scope', `scope ${JSON.stringify(scope)}`)
  }
})

t.test('huge parameters get a clean 4xx and the server keeps serving', async (t) => {
  const big = 'orders:read '.repeat(9000) // ~100 KB
  const viaGet = await rawHttp(
    target.url,
    `GET /authorize?response_type=code&client_id=web&scope=${encodeURIComponent(big)} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
  )
  // 414; 431 only when the request line reaches the parser split across TCP reads (http/client-error.ts).
  t.ok([414, 431].includes(viaGet.status), `GET with a 100 KB query: 414 (or 431), got ${viaGet.status}`)
  t.notOk(viaGet.headers.has('location'), 'no redirect')
  const viaPost = await fetch(`${target.url}/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: WEB_REDIRECT,
      scope: big,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
  })
  t.equal(viaPost.status, 413, 'POST /authorize with a 100 KB body: 413')
  t.equal(viaPost.headers.get('location'), null)
  const bigState = await get(authorizeUrl('web', { state: 'x'.repeat(6000), scope: 'nope' }))
  t.equal(bigState.status, 302, 'a long (6 KB) state still gets a proper answer')
  t.ok(await healthy(target), 'healthz 200 afterwards')
  t.equal((await get(authorizeUrl('web'))).status, 200, 'and /authorize still serves')
})

t.test('request objects and request_uri are refused, and request_uri is never fetched', async (t) => {
  const fetched = await startUpstream('request-uri')
  t.teardown(() => fetched.close())
  // An unsigned request object naming another redirect URI: refused on our page (its redirect_uri is not trusted for a redirect).
  const ro = await get(authorizeUrl('web', { request: 'eyJhbGciOiJub25lIn0.eyJyZWRpcmVjdF91cmkiOiJodHRwczovL2V2aWwuZXhhbXBsZS8ifQ.' }))
  t.match(await assertErrorPage(t, ro, 'request'), /request_not_supported/, 'web has no keys to sign one with')
  // Only the request_uri values of our own /par are taken: another host's is never fetched.
  const ru = await get(authorizeUrl('web', { request_uri: `${fetched.url}/req.jwt` }))
  t.match(await assertErrorPage(t, ru, 'request_uri'), /request_uri_not_supported/)
  const ruOnly = await get(`${target.url}/authorize?client_id=web&request_uri=${encodeURIComponent(`${fetched.url}/req2.jwt`)}`)
  t.not(ruOnly.status, 200, 'request_uri with only client_id is not processed')
  t.equal(fetched.seen.length, 0, 'the request_uri server received nothing')
})

t.test('prompt=none without a session: login_required at the redirect URI, never a code', async (t) => {
  assertErrorRedirect(t, await get(authorizeUrl('web', { prompt: 'none' })), WEB_REDIRECT, 'login_required', 'prompt=none')
  assertErrorRedirect(t, await get(authorizeUrl('web', { prompt: 'none login' })), WEB_REDIRECT, 'invalid_request', 'prompt=none login')
  assertErrorRedirect(t, await get(authorizeUrl('web', { prompt: 'bogus' })), WEB_REDIRECT, 'invalid_request', 'prompt=bogus')
  // A forged session cookie does not count as a session.
  const forged = await fetch(authorizeUrl('web', { prompt: 'none' }), { redirect: 'manual', headers: { cookie: `bw_session=${'A'.repeat(43)}` } })
  assertErrorRedirect(t, forged, WEB_REDIRECT, 'login_required', 'prompt=none with a forged session cookie')
})

const XSS = `"><script>alert(1)</script><img src=x onerror=alert(2)>'`

/** Nothing from `payload` appears unescaped; its escaped form may. */
function assertEscaped(t: Test, body: string, label: string): void {
  t.notMatch(body, /<script>alert|<img src=x onerror/i, `${label}: no injected markup`)
  t.notMatch(body, /value="[^"]*"><script/, `${label}: no attribute break-out`)
}

t.test('client- and request-controlled values are escaped on the login, consent and error pages', async (t) => {
  const login = await get(authorizeUrl('spa', { state: XSS, login_hint: XSS, nonce: XSS, scope: 'orders:read' }))
  t.equal(login.status, 200)
  const loginHtml = await login.text()
  assertEscaped(t, loginHtml, 'login page')
  t.notOk(loginHtml.includes(HOSTILE_NAME), 'the hostile client name is not inserted raw')
  t.ok(loginHtml.includes('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;'), 'the client name is shown escaped')

  // Through the login to the consent page of the hostile-named client.
  const browser = new Browser()
  const url = authorizeUrl('spa', { state: XSS, prompt: 'consent' })
  const first = await browser.get(url)
  const form = parseForms(await first.text(), url).find((f) => 'csrf' in f.fields)
  if (!form) throw new Error('no login form')
  const afterLogin = await browser.submit(form, { username: 'alice', password: DEMO_PASSWORD })
  const next = await browser.follow(afterLogin, url, target.url)
  t.equal(next.res.status, 200, 'the consent page')
  const consentHtml = await next.res.text()
  t.match(consentHtml, /name="decision"/, 'it is the consent page')
  assertEscaped(t, consentHtml, 'consent page')
  t.notOk(consentHtml.includes(HOSTILE_NAME), 'the hostile client name is escaped on the consent page')
  t.match(next.res.headers.get('content-security-policy'), /frame-ancestors 'none'/)

  // Error pages never reflect the request.
  const err = await get(`${target.url}/authorize?client_id=${encodeURIComponent(XSS)}&redirect_uri=${encodeURIComponent(XSS)}`)
  const errHtml = await assertErrorPage(t, err, 'unknown client page')
  assertEscaped(t, errHtml, 'error page')
  const device = await get(`${target.url}/device?user_code=${encodeURIComponent(XSS)}`)
  assertEscaped(t, await device.text(), 'device page with a hostile user_code')
})

t.test('every HTML page forbids framing (CSP frame-ancestors and X-Frame-Options) and is not cached', async (t) => {
  const pages: Array<[string, () => Promise<Response>]> = [
    ['login page', () => get(authorizeUrl('web'))],
    ['authorize error page', () => get(`${target.url}/authorize?client_id=nobody`)],
    ['authorize 405 page', () => fetch(`${target.url}/authorize`, { method: 'PUT' })],
    ['device entry page', () => get(`${target.url}/device`)],
    ['device unknown code', () => get(`${target.url}/device?user_code=BCDF-GHJK`)],
    ['login GET (405)', () => get(`${target.url}/login`)],
    ['consent GET (405)', () => get(`${target.url}/consent`)],
    ['logout GET (signed-out page)', () => get(`${target.url}/logout`)],
    [
      'logout GET with a bad post_logout_redirect_uri (400)',
      () => get(`${target.url}/logout?client_id=web&post_logout_redirect_uri=https%3A%2F%2Fevil.example%2F`),
    ],
    [
      'login POST without CSRF (403)',
      () => fetch(`${target.url}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'username=a&password=b' }),
    ],
    [
      'consent POST without session (403)',
      () => fetch(`${target.url}/consent`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'decision=allow' }),
    ],
    [
      'device POST without CSRF (403)',
      () => fetch(`${target.url}/device`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'user_code=BCDF-GHJK' }),
    ],
  ]
  for (const [label, load] of pages) {
    const res = await load()
    await res.arrayBuffer()
    t.match(res.headers.get('content-type'), /^text\/html/, `${label}: HTML (${res.status})`)
    t.match(res.headers.get('content-security-policy'), /frame-ancestors 'none'/, `${label}: CSP frame-ancestors 'none'`)
    t.equal(res.headers.get('x-frame-options'), 'DENY', `${label}: X-Frame-Options DENY`)
    t.equal(res.headers.get('x-content-type-options'), 'nosniff', `${label}: nosniff`)
    t.match(res.headers.get('cache-control'), /no-store/, `${label}: no-store`)
  }
})

t.test('a hostile Host header does not change the issuer or any advertised URL', async (t) => {
  const headers = { host: 'evil.example', 'x-forwarded-host': 'evil2.example', 'x-forwarded-proto': 'https' }
  const metadata = await rawHttp(
    target.url,
    `GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: ${headers.host}\r\nX-Forwarded-Host: ${headers['x-forwarded-host']}\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n\r\n`,
  )
  t.equal(metadata.status, 200)
  t.notMatch(metadata.body, /evil/, 'metadata names only public_url')
  t.match(metadata.body, new RegExp(`"issuer":"${target.url}"`))
  const device = await rawHttp(
    target.url,
    `POST /device_authorization HTTP/1.1\r\nHost: ${headers.host}\r\nX-Forwarded-Host: ${headers['x-forwarded-host']}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 31\r\nConnection: close\r\n\r\nclient_id=cli&scope=orders:read`,
  )
  t.equal(device.status, 200)
  t.notMatch(device.body, /evil/, 'verification_uri is built from public_url')
  const redirect = await rawHttp(
    target.url,
    `GET ${new URL(authorizeUrl('web', { response_type: 'token' })).pathname}${new URL(authorizeUrl('web', { response_type: 'token' })).search} HTTP/1.1\r\nHost: ${headers.host}\r\nConnection: close\r\n\r\n`,
  )
  t.match(redirect.headers.get('location'), new RegExp(`iss=${encodeURIComponent(target.url).replace(/[.]/g, '\\.')}`), 'iss is public_url')
})
