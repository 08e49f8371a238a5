import t, { type Test } from 'tap'
import { epochSeconds } from '../../src/clock.js'
import { hashToken } from '../../src/store/hash.js'
import {
  API_AUDIENCE,
  Browser,
  WEB_CALLBACK,
  authParams,
  authorizeAs,
  authorizeUrl,
  countCodes,
  get,
  pkce,
  startFront,
  type Front,
} from '../helpers/as-front.js'

/**
 * GET /authorize: what is refused without a redirect (client_id, redirect_uri),
 * what goes back to the client as an error, and what a successful
 * authorization stores. Refusals are sent by a browser that is logged in and
 * has already consented, so the validation is the only thing standing between
 * the request and a code; each checks that no code was stored.
 */

const front = await startFront()
t.teardown(() => front.close())
const codes = countCodes(front.store)

/** A browser logged in as alice that has allowed `web` the default test scopes. */
async function consentedBrowser(f: Front = front): Promise<Browser> {
  const browser = new Browser()
  const callback = await authorizeAs(browser, authorizeUrl(f, authParams()))
  if (callback.searchParams.get('code') === null) throw new Error('setup: no code')
  return browser
}

const browser = await consentedBrowser()
const cookie = (): string => [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ')

async function refusedWithPage(t: Test, params: Record<string, string> | [string, string][], message: RegExp): Promise<void> {
  const before = codes.count
  const res = await get(authorizeUrl(front, params), cookie())
  t.equal(res.status, 400, 'error page status')
  t.equal(res.headers.get('location'), null, 'never redirected')
  t.match(res.headers.get('content-type'), /^text\/html/)
  t.match(res.text, message)
  t.equal(codes.count, before, 'no code stored')
}

/** The error redirect for a request otherwise fine: callback, error, state, iss, and no code. */
async function refusedWithRedirect(
  t: Test,
  params: Record<string, string> | [string, string][],
  error: string,
  o: { state?: string | null; callback?: string } = {},
): Promise<URL> {
  const before = codes.count
  const res = await get(authorizeUrl(front, params), cookie())
  t.equal(res.status, 302)
  const location = new URL(res.headers.get('location') ?? '')
  t.equal(location.origin + location.pathname, o.callback ?? WEB_CALLBACK, 'sent to the verified redirect URI')
  t.equal(location.searchParams.get('error'), error)
  t.type(location.searchParams.get('error_description'), 'string')
  t.equal(location.searchParams.get('state'), o.state === undefined ? authParams().state : o.state, 'state echoed')
  t.equal(location.searchParams.get('iss'), front.issuer, 'RFC 9207 iss')
  t.equal(location.searchParams.get('code'), null)
  t.equal(codes.count, before, 'no code stored')
  return location
}

t.test('redirect_uri must match a registered one exactly; mismatches show a page and never redirect', async (t) => {
  const cases: Array<[string, string]> = [
    ['an added trailing slash', `${WEB_CALLBACK}/`],
    ['an added query', `${WEB_CALLBACK}?next=1`],
    ['a changed case in the path', 'https://app.example.com/Callback'],
    ['a changed case in scheme and host', 'HTTPS://APP.EXAMPLE.COM/callback'],
    ['a prefix of a registered URI', 'https://app.example.com/call'],
    ['a registered URI plus a path', `${WEB_CALLBACK}/evil`],
    ['userinfo pointing elsewhere', 'https://app.example.com@evil.example/cb'],
    ['a fragment', `${WEB_CALLBACK}#frag`],
    ['another port', 'https://app.example.com:8443/callback'],
    ['http instead of https', 'http://app.example.com/callback'],
    ['the registered query in another order', 'https://app.example.com/other?x=1&tenant=a%20b'],
    ['percent-encoding changed', 'https://app.example.com/%63allback'],
  ]
  for (const [name, uri] of cases) {
    await t.test(name, (t) => refusedWithPage(t, authParams({ redirect_uri: uri }), /redirect_uri is not registered/))
  }
})

t.test('client_id problems show a page and never redirect', async (t) => {
  await t.test('unknown client', (t) => refusedWithPage(t, authParams({ client_id: 'nobody' }), /not registered with this server/))
  await t.test('missing client_id', (t) => refusedWithPage(t, authParams({ client_id: undefined }), /no client_id/))
  await t.test('repeated client_id', (t) => refusedWithPage(t, [...Object.entries(authParams()), ['client_id', 'web']], /client_id is repeated/))
  await t.test('repeated redirect_uri', (t) =>
    refusedWithPage(t, [...Object.entries(authParams()), ['redirect_uri', WEB_CALLBACK]], /redirect_uri is repeated/),
  )
  await t.test('redirect_uri missing while the client has two registered', (t) =>
    refusedWithPage(t, authParams({ redirect_uri: undefined }), /no redirect_uri, and the application has more than one/),
  )
  await t.test('a redirect_uri of another client', (t) =>
    refusedWithPage(t, authParams({ redirect_uri: 'https://spa.example.com/cb' }), /redirect_uri is not registered/),
  )
  await t.test('the error page does not echo what was sent', async (t) => {
    const res = await get(authorizeUrl(front, authParams({ redirect_uri: 'https://x.example/<script>alert(1)</script>' })))
    t.equal(res.status, 400)
    t.notMatch(res.text, /<script>alert/)
    t.notMatch(res.text, /x\.example/)
  })
})

t.test('a redirect_uri may be omitted when the client has exactly one; the registered one is used', async (t) => {
  const b = new Browser()
  const callback = await authorizeAs(b, authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: undefined, scope: 'orders:read' })))
  t.equal(callback.origin + callback.pathname, 'https://first.example.com/cb')
  const taken = await front.store.codes.take(hashToken(callback.searchParams.get('code') ?? ''))
  t.equal(taken.status, 'taken')
  if (taken.status !== 'taken') return
  t.equal(taken.record.redirectUri, null, 'recorded as omitted, so /token must omit it too')
  t.equal(taken.record.effectiveRedirectUri, 'https://first.example.com/cb')
})

t.test('a registered URI with a query keeps it exactly; the response parameters are appended', async (t) => {
  const registered = 'https://app.example.com/other?tenant=a%20b&x=1'
  const res = await get(authorizeUrl(front, authParams({ redirect_uri: registered })), cookie())
  t.equal(res.status, 302)
  const location = res.headers.get('location') ?? ''
  t.ok(location.startsWith(`${registered}&code=`), location)
  const url = new URL(location)
  t.equal(url.searchParams.get('tenant'), 'a b')
  t.equal(url.searchParams.get('x'), '1')
  t.equal(url.searchParams.get('state'), authParams().state)
  t.equal(url.searchParams.get('iss'), front.issuer)
})

t.test('loopback redirect URIs (RFC 8252 7.3): any port for 127.0.0.1 and [::1], not for localhost or other hosts', async (t) => {
  const native = (uri: string): Record<string, string> => authParams({ client_id: 'native', redirect_uri: uri, scope: 'orders:read', prompt: 'none' })
  for (const uri of ['http://127.0.0.1:51234/callback', 'http://127.0.0.1/callback', 'http://[::1]:60000/callback', 'http://[::1]/callback']) {
    await t.test(`accepted: ${uri}`, async (t) => {
      // prompt=none: the redirect (consent_required) proves the URI was accepted.
      const res = await get(authorizeUrl(front, native(uri)), cookie())
      t.equal(res.status, 302)
      const location = res.headers.get('location') ?? ''
      t.ok(location.startsWith(`${uri}?error=consent_required`), location)
    })
  }
  const refused = [
    'http://localhost:5000/callback',
    'http://localhost/callback',
    'https://native.example.com:9443/cb',
    'https://native.example.com/cb',
    'http://127.0.0.1:51234/callback/x',
    'http://127.0.0.1:51234/Callback',
    'http://127.0.0.2:51234/callback',
    'https://127.0.0.1:51234/callback',
    'http://127.0.0.1:0/callback',
    'http://127.0.0.1:70000/callback',
    'http://127.0.0.1:5000@evil.example/callback',
    'http://[::1]:5000/callback?x=1',
  ]
  for (const uri of refused) {
    await t.test(`refused: ${uri}`, (t) => refusedWithPage(t, native(uri), /redirect_uri is not registered/))
  }
})

t.test('response_type must be code', async (t) => {
  for (const type of ['token', 'id_token', 'code token', 'code id_token', 'none', 'CODE']) {
    await t.test(type, async (t) => {
      await refusedWithRedirect(t, authParams({ response_type: type }), 'unsupported_response_type')
    })
  }
  await t.test('missing', async (t) => {
    await refusedWithRedirect(t, authParams({ response_type: undefined }), 'invalid_request')
  })
})

t.test('repeated parameters are invalid_request', async (t) => {
  for (const name of ['response_type', 'scope', 'code_challenge', 'code_challenge_method', 'nonce', 'prompt', 'max_age', 'response_mode']) {
    await t.test(name, async (t) => {
      const p = authParams({ max_age: '600', prompt: 'consent', response_mode: 'query' })
      const loc = await refusedWithRedirect(t, [...Object.entries(p), [name, p[name] ?? 'x']], 'invalid_request')
      t.match(loc.searchParams.get('error_description'), new RegExp(`${name} is repeated`))
    })
  }
  await t.test('state: answered without a state, since there is no single one to echo', async (t) => {
    await refusedWithRedirect(t, [...Object.entries(authParams()), ['state', 'second']], 'invalid_request', { state: null })
  })
  await t.test('an empty repeat counts too', async (t) => {
    await refusedWithRedirect(t, [...Object.entries(authParams()), ['scope', '']], 'invalid_request')
  })
})

t.test('a client not registered for the authorization code grant is unauthorized_client', async (t) => {
  const p = authParams({ client_id: 'devonly', redirect_uri: 'https://devonly.example.com/cb', scope: 'orders:read' })
  await refusedWithRedirect(t, p, 'unauthorized_client', { callback: 'https://devonly.example.com/cb' })
})

t.test('scope', async (t) => {
  await t.test('unknown scope', async (t) => {
    const location = await refusedWithRedirect(t, authParams({ scope: 'openid orders:delete' }), 'invalid_scope')
    t.equal(location.searchParams.get('error_description'), 'The requested scope `orders:delete` is unknown or not allowed for this application', 'named')
  })
  await t.test('a known scope the client may not have', async (t) => {
    const p = authParams({ client_id: 'spa', redirect_uri: 'https://spa.example.com/cb', scope: 'orders:write' })
    const location = await refusedWithRedirect(t, p, 'invalid_scope', { callback: 'https://spa.example.com/cb' })
    t.match(location.searchParams.get('error_description'), /`orders:write`/, 'named')
  })
  await t.test('a scope that is no scope token is not echoed', async (t) => {
    const location = await refusedWithRedirect(t, authParams({ scope: 'openid "quoted"' }), 'invalid_scope')
    t.equal(location.searchParams.get('error_description'), 'The scope parameter is malformed')
  })
  await t.test('scope names are case-sensitive', async (t) => {
    await refusedWithRedirect(t, authParams({ scope: 'OPENID' }), 'invalid_scope')
  })
  await t.test('omitted: the client’s scopes except openid and offline_access', async (t) => {
    const b = new Browser()
    const callback = await authorizeAs(b, authorizeUrl(front, authParams({ scope: undefined })))
    const taken = await front.store.codes.take(hashToken(callback.searchParams.get('code') ?? ''))
    t.equal(taken.status === 'taken' && taken.record.scope, 'profile email orders:read orders:write')
  })
  await t.test('duplicates are granted once', async (t) => {
    const res = await get(authorizeUrl(front, authParams({ scope: 'orders:read openid orders:read' })), cookie())
    const code = new URL(res.headers.get('location') ?? '').searchParams.get('code') ?? ''
    const taken = await front.store.codes.take(hashToken(code))
    t.equal(taken.status === 'taken' && taken.record.scope, 'orders:read openid')
  })
})

t.test('PKCE (RFC 7636, RFC 9700 2.1.1)', async (t) => {
  const spa = (over: Record<string, string | undefined>): Record<string, string> =>
    authParams({ client_id: 'spa', redirect_uri: 'https://spa.example.com/cb', scope: 'orders:read', ...over })
  await t.test('a public client without code_challenge', async (t) => {
    const loc = await refusedWithRedirect(t, spa({ code_challenge: undefined, code_challenge_method: undefined }), 'invalid_request', {
      callback: 'https://spa.example.com/cb',
    })
    t.match(loc.searchParams.get('error_description'), /code_challenge is required/)
  })
  await t.test('a confidential client without code_challenge (require_pkce defaults to true)', async (t) => {
    await refusedWithRedirect(t, authParams({ code_challenge: undefined, code_challenge_method: undefined }), 'invalid_request')
  })
  await t.test('plain is refused', async (t) => {
    const v = pkce().verifier
    const loc = await refusedWithRedirect(t, authParams({ code_challenge: v, code_challenge_method: 'plain' }), 'invalid_request')
    t.match(loc.searchParams.get('error_description'), /must be S256/)
  })
  await t.test('an omitted method means plain, and is refused', async (t) => {
    await refusedWithRedirect(t, authParams({ code_challenge_method: undefined }), 'invalid_request')
  })
  await t.test('an unknown method', async (t) => {
    await refusedWithRedirect(t, authParams({ code_challenge_method: 'S512' }), 'invalid_request')
  })
  await t.test('a method without a challenge', async (t) => {
    await refusedWithRedirect(t, authParams({ code_challenge: undefined }), 'invalid_request')
  })
  for (const [name, challenge] of [
    ['42 characters', pkce().challenge.slice(0, 42)],
    ['44 characters', `${pkce().challenge}A`],
    ['with = padding', `${pkce().challenge.slice(0, 42)}=`],
    ['standard base64 characters', `${pkce().challenge.slice(0, 41)}+/`],
    ['a 128-character verifier sent as S256', 'a'.repeat(128)],
  ] as const) {
    await t.test(`an S256 challenge of ${name}`, async (t) => {
      const loc = await refusedWithRedirect(t, authParams({ code_challenge: challenge }), 'invalid_request')
      t.match(loc.searchParams.get('error_description'), /43 base64url characters/)
    })
  }
  await t.test('a client configured with allow_plain_pkce and require_pkce false may use plain or nothing', async (t) => {
    const legacy = (over: Record<string, string | undefined>): Record<string, string> =>
      authParams({ client_id: 'legacy', redirect_uri: 'https://legacy.example.com/cb', scope: 'orders:read', prompt: 'none', ...over })
    const verifier = pkce().verifier
    for (const over of [
      { code_challenge: verifier, code_challenge_method: 'plain' },
      { code_challenge: verifier, code_challenge_method: undefined },
      { code_challenge: undefined, code_challenge_method: undefined },
    ]) {
      const res = await get(authorizeUrl(front, legacy(over)), cookie())
      // Accepted: the next step is consent (prompt=none turns it into consent_required).
      t.equal(new URL(res.headers.get('location') ?? '').searchParams.get('error'), 'consent_required')
    }
    const short = await get(authorizeUrl(front, legacy({ code_challenge: 'short', code_challenge_method: 'plain' })), cookie())
    t.equal(new URL(short.headers.get('location') ?? '').searchParams.get('error'), 'invalid_request', 'a plain challenge is still 43-128 characters')
  })
})

t.test('other parameters', async (t) => {
  await t.test('resource must be a known audience (RFC 8707)', async (t) => {
    await refusedWithRedirect(t, authParams({ resource: 'https://unknown.example.com' }), 'invalid_target')
    await refusedWithRedirect(t, [...Object.entries(authParams()), ['resource', API_AUDIENCE], ['resource', front.issuer]], 'invalid_target')
    const res = await get(authorizeUrl(front, authParams({ resource: API_AUDIENCE })), cookie())
    const code = new URL(res.headers.get('location') ?? '').searchParams.get('code') ?? ''
    const taken = await front.store.codes.take(hashToken(code))
    t.equal(taken.status === 'taken' && taken.record.resource, API_AUDIENCE)
  })
  await t.test('prompt values', async (t) => {
    await refusedWithRedirect(t, authParams({ prompt: 'bogus' }), 'invalid_request')
    await refusedWithRedirect(t, authParams({ prompt: 'none login' }), 'invalid_request')
  })
  await t.test('max_age must be whole seconds', async (t) => {
    await refusedWithRedirect(t, authParams({ max_age: '-1' }), 'invalid_request')
    await refusedWithRedirect(t, authParams({ max_age: '1.5' }), 'invalid_request')
  })
  await t.test('only the query response mode', async (t) => {
    await refusedWithRedirect(t, authParams({ response_mode: 'fragment' }), 'invalid_request')
    await refusedWithRedirect(t, authParams({ response_mode: 'form_post' }), 'invalid_request')
  })
  await t.test('a request object that does not verify, and a request_uri of another host, are our page (RFC 9101 6.3)', async (t) => {
    // Its redirect_uri is inside the object, so nothing in it is trusted for a redirect (test/as/par.test.ts has the rest).
    await refusedWithPage(t, authParams({ request: 'eyJhbGciOiJub25lIn0.e30.' }), /request_not_supported/)
    await refusedWithPage(t, authParams({ request_uri: 'https://app.example.com/r' }), /request_uri_not_supported/)
  })
  await t.test('unknown parameters are ignored (RFC 6749 3.1)', async (t) => {
    const res = await get(authorizeUrl(front, authParams({ foo: 'bar' })), cookie())
    t.equal(res.status, 302)
    t.type(new URL(res.headers.get('location') ?? '').searchParams.get('code'), 'string')
  })
})

t.test('success: 302 with code, state and iss; the stored code has everything /token checks', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const { challenge } = pkce()
  const state = 'xyz "quoted" <tag> & + / ? = % é'
  const params = authParams({ state, code_challenge: challenge, scope: 'openid orders:read', nonce: 'nonce-123' })
  const b = new Browser()
  const loginAt = epochSeconds(f.clock)
  const loginMs = f.clock.now()
  const callback = await authorizeAs(b, authorizeUrl(f, params))
  t.equal(callback.origin + callback.pathname, WEB_CALLBACK)
  t.equal(callback.searchParams.get('state'), state, 'state exactly as sent')
  t.equal(callback.searchParams.get('iss'), f.issuer)
  const code = callback.searchParams.get('code') ?? ''
  t.match(code, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  t.same([...callback.searchParams.keys()].sort(), ['code', 'iss', 'state'], 'nothing else on the front channel')

  const taken = await f.store.codes.take(hashToken(code))
  t.equal(taken.status, 'taken')
  if (taken.status !== 'taken') return
  // The session's sid (Back-Channel Logout 1.0), which the id_token will carry.
  const session = await f.store.sessions.get(hashToken(b.cookies.get('bw_session') ?? ''))
  t.match(session?.sid, /^[A-Za-z0-9_-]{43}$/, 'the session has a random sid')
  t.same(taken.record, {
    clientId: 'web',
    redirectUri: WEB_CALLBACK,
    effectiveRedirectUri: WEB_CALLBACK,
    codeChallenge: challenge,
    codeChallengeMethod: 'S256',
    scope: 'openid orders:read',
    sub: 'alice',
    authTime: loginAt,
    amr: ['pwd'],
    acr: 'pwd',
    nonce: 'nonce-123',
    resource: null,
    expiresAt: loginAt + 60,
    issuedAtMs: loginMs,
    sid: session?.sid,
  })
  t.equal((await f.store.codes.take(hashToken(code))).status, 'used', 'single use')

  await t.test('without state, the response has none', async (t) => {
    const res = await get(authorizeUrl(f, authParams({ state: undefined })), [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; '))
    const url = new URL(res.headers.get('location') ?? '')
    t.equal(url.searchParams.has('state'), false)
    t.type(url.searchParams.get('code'), 'string')
  })
  await t.test('the code expires with code_ttl, judged by the injected clock', async (t) => {
    const res = await get(authorizeUrl(f, authParams()), [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; '))
    const fresh = new URL(res.headers.get('location') ?? '').searchParams.get('code') ?? ''
    f.clock.advance(61_000)
    t.equal((await f.store.codes.take(hashToken(fresh))).status, 'missing')
  })
  await t.test('the sub comes from the user (bob has sub user-0002)', async (t) => {
    const bob = new Browser()
    const cb = await authorizeAs(bob, authorizeUrl(f, authParams()), { username: 'bob', password: 'bob-password-0123456789' })
    const r = await f.store.codes.take(hashToken(cb.searchParams.get('code') ?? ''))
    t.equal(r.status === 'taken' && r.record.sub, 'user-0002')
  })
})

t.test('POST /authorize takes the same parameters as a form (OIDC Core 3.1.2.1)', async (t) => {
  const res = await fetch(`${front.url}/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() },
    body: new URLSearchParams(authParams()).toString(),
  })
  t.equal(res.status, 302)
  t.type(new URL(res.headers.get('location') ?? '').searchParams.get('code'), 'string')
  const wrongType = await fetch(`${front.url}/authorize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(wrongType.status, 400)
  t.match(wrongType.headers.get('content-type'), /^text\/html/)
})

t.test('other methods: 405 with Allow', async (t) => {
  for (const [path, allow] of [
    ['/authorize', 'GET, POST'],
    ['/login', 'POST'],
    ['/consent', 'POST'],
    ['/logout', 'GET, POST'],
    ['/device', 'GET, POST'],
    ['/assets/bearward.css', 'GET, HEAD'],
  ] as const) {
    const res = await fetch(`${front.url}${path}`, { method: 'PUT' })
    t.equal(res.status, 405, path)
    t.equal(res.headers.get('allow'), allow, path)
  }
  const get405 = await fetch(`${front.url}/login`)
  t.equal(get405.status, 405)
})

t.test('a store outage: temporarily_unavailable to the verified redirect URI, a 503 page otherwise', async (t) => {
  const f = await startFront()
  await f.store.close()
  t.teardown(() => f.close())
  // A session cookie makes /authorize read the store.
  const res = await get(authorizeUrl(f, authParams()), `bw_session=${'A'.repeat(43)}`)
  t.equal(res.status, 302)
  const location = new URL(res.headers.get('location') ?? '')
  t.equal(location.origin + location.pathname, WEB_CALLBACK)
  t.equal(location.searchParams.get('error'), 'temporarily_unavailable')
  t.equal(location.searchParams.get('state'), authParams().state)
  t.equal(location.searchParams.get('iss'), f.issuer)
  const device = await get(`${f.url}/device?user_code=BCDF-GHJK`)
  t.equal(device.status, 503)
  t.match(device.text, /Temporarily unavailable/)
})
