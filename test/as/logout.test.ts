import t, { type Test } from 'tap'
import { issueAccessToken, issueIdToken } from '../../src/as/issue.js'
import { generatePrivateJwk, signingKeyFromJwk } from '../../src/keys/keyset.js'
import { signJwt } from '../../src/keys/sign.js'
import { hashToken } from '../../src/store/hash.js'
import {
  Browser,
  authParams,
  authorizeAs,
  authorizeUrl,
  formWith,
  frontYaml,
  get,
  parseForms,
  setCookies,
  startFront,
  type Front,
} from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'

/**
 * GET and POST /logout: OpenID Connect RP-Initiated Logout 1.0 (id_token_hint,
 * client_id, post_logout_redirect_uri, state), the confirmation a person gives
 * when the request cannot be tied to their session, the plain sign-out, and
 * "Not you?" from the consent page.
 */

const RP_BYE = 'https://rp.example.com/bye'
const RP_BYE_QUERY = 'https://rp.example.com/bye?from=logout'
const yaml = await frontYaml({
  clientsExtra: `    - client_id: rp
      name: Orders Web
      type: public
      redirect_uris: [https://rp.example.com/cb]
      post_logout_redirect_uris: [${RP_BYE}, "${RP_BYE_QUERY}"]
      logo_uri: https://cdn.example.com/rp/logo.png
      scopes: [openid, orders:read]
`,
})
const front = await startFront(yaml)
t.teardown(() => front.close())

/** A browser signed in as `username` (through the skip_consent client, so nothing else is recorded). */
async function signedIn(username = 'alice', password?: string, f: Front = front): Promise<Browser> {
  const b = new Browser()
  const p = authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })
  await authorizeAs(b, authorizeUrl(f, p), { username, ...(password ? { password } : {}) })
  return b
}

const cookieOf = (b: Browser): string => [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
const sessionOf = (b: Browser, f: Front = front) => f.store.sessions.get(hashToken(b.cookies.get('bw_session') ?? ''))

/** An ID token of this server for `sub`, issued to `clientId`. */
function idToken(sub: string, clientId = 'rp', f: Front = front): Promise<string> {
  return issueIdToken(f.as, { sub, clientId, scope: 'openid', authTime: null, nonce: null, accessToken: 'unused' })
}

function logoutUrl(params: Record<string, string> | Array<[string, string]>, f: Front = front): string {
  return `${f.url}/logout?${new URLSearchParams(params).toString()}`
}

/** The request was refused with an error page: 400, no redirect, no cookie change. */
async function assertErrorPage(t: Test, res: { status: number; headers: Headers; text: string }, message: RegExp, label: string): Promise<void> {
  t.equal(res.status, 400, `${label}: 400`)
  t.equal(res.headers.get('location'), null, `${label}: never redirected`)
  t.match(res.headers.get('content-type'), /^text\/html/, `${label}: a page`)
  t.match(res.text, message, label)
  t.same(res.headers.getSetCookie(), [], `${label}: no cookie touched`)
}

t.test('a valid id_token_hint of the signed-in person signs out at once and returns with state', async (t) => {
  const b = await signedIn()
  await front.store.consents.put('alice', 'web', ['openid'], 3600)
  const res = await get(logoutUrl({ id_token_hint: await idToken('alice'), post_logout_redirect_uri: RP_BYE, state: 'st /+?&=%' }), cookieOf(b))
  t.equal(res.status, 303)
  const location = new URL(res.headers.get('location') ?? '')
  t.equal(location.origin + location.pathname, RP_BYE)
  t.equal(location.searchParams.get('state'), 'st /+?&=%', 'state exactly as sent')
  t.match(setCookies(res.headers).get('bw_session')?.attributes, /Max-Age=0/, 'the cookie is cleared')
  t.equal(await sessionOf(b), null, 'the session is gone from the store')
  t.same(await front.store.consents.get('alice', 'web'), ['openid'], 'remembered consent stays')
})

t.test('POST with the same parameters works too; a registered query is kept', async (t) => {
  const b = await signedIn()
  const res = await reply(
    postForm(
      `${front.url}/logout`,
      { id_token_hint: await idToken('alice'), post_logout_redirect_uri: RP_BYE_QUERY, state: 's2' },
      { cookie: cookieOf(b), origin: 'https://rp.example.com' },
    ),
  )
  t.equal(res.status, 303)
  t.equal(res.headers.get('location'), `${RP_BYE_QUERY}&state=s2`)
  t.equal(await sessionOf(b), null)
})

t.test('an expired id_token_hint still ties the request to the session', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const b = await signedIn('alice', undefined, f)
  const hint = await idToken('alice', 'rp', f)
  f.clock.advance(2 * 3600 * 1000) // past the ID token's lifetime, within the session's
  t.ok(await sessionOf(b, f), 'still signed in')
  const res = await get(logoutUrl({ id_token_hint: hint, post_logout_redirect_uri: RP_BYE }, f), cookieOf(b))
  t.equal(res.status, 303)
  t.equal(res.headers.get('location'), RP_BYE)
  t.equal(await sessionOf(b, f), null)
})

t.test('without a hint, a cross-site GET or POST signs nobody out: the person is asked', async (t) => {
  const b = await signedIn()
  const crossSite = { cookie: cookieOf(b), 'sec-fetch-site': 'cross-site', referer: 'https://evil.example/' }
  const viaGet = await fetch(logoutUrl({ client_id: 'rp', post_logout_redirect_uri: RP_BYE, state: 's3' }), { redirect: 'manual', headers: crossSite })
  const page = await viaGet.text()
  t.equal(viaGet.status, 200, 'the confirmation page')
  t.equal(viaGet.headers.get('location'), null)
  t.same(viaGet.headers.getSetCookie(), [], 'no cookie touched')
  t.ok(await sessionOf(b), 'still signed in after the GET')
  t.match(page, /Sign out\?/)
  t.match(page, /<span class="client"><bdi>Orders Web<\/bdi><\/span> asks to sign you out/)
  t.match(page, /You are signed in as <strong>Alice Example<\/strong>/)
  t.match(page, /<img class="client-logo" src="https:\/\/cdn\.example\.com\/rp\/logo\.png"/)
  t.equal(
    viaGet.headers.get('content-security-policy'),
    "default-src 'none'; style-src 'self'; img-src 'self' data: https://cdn.example.com; frame-ancestors 'none'; base-uri 'none'",
    "the CSP allows the client's logo origin and nothing else",
  )
  const viaPost = await reply(postForm(`${front.url}/logout`, { client_id: 'rp' }, { ...crossSite, origin: 'https://evil.example' }))
  t.equal(viaPost.status, 200)
  t.ok(await sessionOf(b), 'still signed in after the POST')

  // The person confirms: the form carries the client, the verified URI and state, never the hint.
  const form = formWith(page, logoutUrl({}), 'csrf')
  t.same(Object.keys(form.fields).sort(), ['client_id', 'csrf', 'post_logout_redirect_uri', 'state'])
  t.same(form.buttons, [
    { name: 'decision', value: 'logout' },
    { name: 'decision', value: 'stay' },
  ])
  const done = await b.submit(form, { decision: 'logout' })
  t.equal(done.status, 303)
  t.equal(done.headers.get('location'), `${RP_BYE}?state=s3`)
  t.equal(await sessionOf(b), null, 'signed out after confirming')
})

t.test('a hint naming someone else is not enough: the signed-in person is asked', async (t) => {
  const b = await signedIn()
  const res = await get(logoutUrl({ id_token_hint: await idToken('user-0002'), post_logout_redirect_uri: RP_BYE }), cookieOf(b))
  t.equal(res.status, 200)
  t.match(res.text, /Sign out\?/)
  t.ok(await sessionOf(b), 'alice is still signed in')
})

t.test('"Stay signed in" keeps the session and goes back to the application', async (t) => {
  const b = await signedIn()
  const res = await get(logoutUrl({ client_id: 'rp', post_logout_redirect_uri: RP_BYE, state: 's4' }), cookieOf(b))
  const stay = await b.submit(formWith(res.text, logoutUrl({}), 'csrf'), { decision: 'stay' })
  t.equal(stay.status, 303)
  t.equal(stay.headers.get('location'), `${RP_BYE}?state=s4`)
  t.ok(await sessionOf(b), 'still signed in')
})

t.test('with no session there is nothing to confirm: straight back to the application', async (t) => {
  const res = await get(logoutUrl({ client_id: 'rp', post_logout_redirect_uri: RP_BYE, state: 's5' }))
  t.equal(res.status, 303)
  t.equal(res.headers.get('location'), `${RP_BYE}?state=s5`)
  const plain = await get(logoutUrl({}))
  t.equal(plain.status, 200)
  t.match(plain.text, /You have signed out/)
})

t.test('a person who came directly: the sign-out page, then signed out', async (t) => {
  const b = await signedIn('bob', 'bob-password-0123456789')
  const res = await get(`${front.url}/logout`, cookieOf(b))
  t.equal(res.status, 200)
  t.match(res.text, /You are signed in as <strong>bob<\/strong>/, 'the username when there is no name claim')
  t.notMatch(res.text, /asks to sign you out/)
  t.equal(res.headers.get('content-security-policy'), "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'")
  const form = formWith(res.text, `${front.url}/logout`, 'csrf')
  t.same(Object.keys(form.fields), ['csrf'])
  const done = await b.submit(form, { decision: 'logout' })
  t.equal(done.status, 200)
  t.match(await done.text(), /You have signed out/)
  t.equal(await sessionOf(b), null)
})

t.test('post_logout_redirect_uri: exact match against the identified client, or an error page', async (t) => {
  const b = await signedIn()
  const hint = await idToken('alice')
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['unregistered', { client_id: 'rp', post_logout_redirect_uri: 'https://evil.example/bye' }, /not registered for this application/],
    ['trailing slash', { client_id: 'rp', post_logout_redirect_uri: `${RP_BYE}/` }, /not registered/],
    ['other case', { client_id: 'rp', post_logout_redirect_uri: RP_BYE.toUpperCase() }, /not registered/],
    ['extra query', { id_token_hint: hint, post_logout_redirect_uri: `${RP_BYE}?x=1` }, /not registered/],
    ['a redirect URI of the client, not a post-logout one', { client_id: 'rp', post_logout_redirect_uri: 'https://rp.example.com/cb' }, /not registered/],
    ["another client's", { client_id: 'web', post_logout_redirect_uri: RP_BYE }, /not registered/],
    ['no client named', { post_logout_redirect_uri: RP_BYE }, /needs the application to be named by id_token_hint or client_id/],
    ['unknown client', { client_id: 'nobody', post_logout_redirect_uri: RP_BYE }, /not registered with this server/],
  ]
  for (const [label, params, message] of cases) {
    await assertErrorPage(t, await get(logoutUrl(params), cookieOf(b)), message, label)
  }
  t.ok(await sessionOf(b), 'no refused request signed anyone out')
})

t.test('client_id must match the id_token_hint; hints that are not our ID tokens are refused', async (t) => {
  const b = await signedIn()
  const mismatched = await get(logoutUrl({ id_token_hint: await idToken('alice', 'rp'), client_id: 'web', post_logout_redirect_uri: RP_BYE }), cookieOf(b))
  await assertErrorPage(t, mismatched, /client_id does not match the id_token_hint/, 'mismatched client_id')

  const foreignKey = await signingKeyFromJwk(await generatePrivateJwk('ES256', front.as.keys.signing.kid))
  const now = Math.floor(front.clock.now() / 1000)
  const claims = { iss: front.issuer, sub: 'alice', aud: 'rp', iat: now, exp: now + 600 }
  const access = await issueAccessToken(front.as, {
    grant: 'authorization_code',
    sub: 'alice',
    clientId: 'rp',
    scope: 'openid',
    grantId: null,
    authTime: null,
    audience: front.issuer,
  })
  const hints: Array<[string, string]> = [
    ['signed by another key with our kid', await signJwt(foreignKey, 'JWT', claims)],
    ['another issuer', await signJwt(front.as.keys.idToken, 'JWT', { ...claims, iss: 'https://other.example' })],
    ['an access token', access.token],
    ['no sub', await signJwt(front.as.keys.idToken, 'JWT', { ...claims, sub: undefined })],
    ['no aud', await signJwt(front.as.keys.idToken, 'JWT', { ...claims, aud: undefined })],
    ['not a JWT', 'not-a-token'],
    ['alg none', `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`],
  ]
  for (const [label, hint] of hints) {
    await assertErrorPage(t, await get(logoutUrl({ id_token_hint: hint }), cookieOf(b)), /not an ID token issued by this server/, label)
  }
  await assertErrorPage(
    t,
    await get(
      logoutUrl([
        ['state', 'a'],
        ['state', 'b'],
      ]),
      cookieOf(b),
    ),
    /state is repeated/,
    'repeated state',
  )
  t.ok(await sessionOf(b), 'still signed in')

  const ignored = await get(logoutUrl({ id_token_hint: await idToken('alice'), logout_hint: 'alice', ui_locales: 'fr' }), cookieOf(b))
  t.equal(ignored.status, 200, 'logout_hint and ui_locales are accepted and ignored')
  t.equal(await sessionOf(b), null)
})

t.test('the confirmation: CSRF token and origin checked, the redirect checked again', async (t) => {
  const b = await signedIn()
  const res = await get(logoutUrl({ client_id: 'rp', post_logout_redirect_uri: RP_BYE }), cookieOf(b))
  const form = formWith(res.text, `${front.url}/logout`, 'csrf')
  const forged = [
    await reply(postForm(form.action, { ...form.fields, csrf: 'A'.repeat(43) }, { cookie: cookieOf(b), origin: front.issuer })),
    await reply(postForm(form.action, form.fields, { cookie: cookieOf(b), origin: 'https://evil.example' })),
    await reply(postForm(form.action, form.fields, { cookie: cookieOf(b), origin: 'null' })),
  ]
  for (const r of forged) {
    t.equal(r.status, 403)
    t.equal(r.headers.get('location'), null)
  }
  const tampered = await b.submit(form, { post_logout_redirect_uri: 'https://evil.example/' })
  t.equal(tampered.status, 400, 'a redirect URI changed in the form is refused')
  t.equal(tampered.headers.get('location'), null)
  t.ok(await sessionOf(b), 'nothing forged or tampered signed out')
})

t.test('"Not you?" on the consent page signs out and returns to the same authorization request', async (t) => {
  const b = await signedIn()
  const params = authParams({ client_id: 'rp', redirect_uri: 'https://rp.example.com/cb', state: 'keep-me', prompt: 'consent' })
  const url = authorizeUrl(front, params)
  const consent = await get(url, cookieOf(b))
  t.equal(consent.status, 200)
  t.match(consent.text, /Signed in as <strong>Alice Example<\/strong>/)
  const forms = parseForms(consent.text, url)
  const whoami = forms.find((f) => f.action.endsWith('/logout'))
  if (whoami === undefined) throw new Error('no "Not you?" form')
  t.same(whoami.buttons, [{ name: 'switch', value: '1' }])
  const aliceId = b.cookies.get('bw_session') ?? ''
  t.ok(await front.store.sessions.get(hashToken(aliceId)))
  const switched = await b.submit(whoami)
  t.equal(switched.status, 303)
  const next = new URL(switched.headers.get('location') ?? '', url)
  t.equal(next.pathname, '/authorize')
  t.same(Object.fromEntries(next.searchParams), params, 'the same request, parameter for parameter')
  t.equal(await front.store.sessions.get(hashToken(aliceId)), null, "alice's session is deleted")
  t.notOk(b.cookies.has('bw_session'), 'the session cookie is cleared')

  const callback = await authorizeAs(b, next.toString(), { username: 'bob', password: 'bob-password-0123456789' })
  t.equal(callback.origin + callback.pathname, 'https://rp.example.com/cb')
  t.equal(callback.searchParams.get('state'), 'keep-me', 'the request was not lost')
  t.type(callback.searchParams.get('code'), 'string')
  t.same((await sessionOf(b))?.username, 'bob', 'now signed in as bob')
})

t.test('"Not you?" on the device approval page returns to that device code', async (t) => {
  const b = await signedIn()
  const start = await front.store.devices.put(hashToken('device-code-for-logout-test-0123456789abcd'), {
    clientId: 'tv',
    userCode: 'BCDFGHJK',
    scope: 'orders:read',
    status: 'pending',
    sub: null,
    authTime: null,
    expiresAt: Math.floor(front.clock.now() / 1000) + 600,
    intervalSec: 5,
    lastPollMs: 0,
  })
  t.ok(start)
  const url = `${front.url}/device?user_code=BCDF-GHJK`
  const page = await get(url, cookieOf(b))
  t.match(page.text, /Signed in as <strong>Alice Example<\/strong>/)
  const whoami = parseForms(page.text, url).find((f) => f.action.endsWith('/logout'))
  if (whoami === undefined) throw new Error('no "Not you?" form')
  const switched = await b.submit(whoami)
  t.equal(switched.status, 303)
  t.equal(switched.headers.get('location'), 'device?user_code=BCDF-GHJK')
  t.equal(await sessionOf(b), null)
})

t.test('other methods: 405 with Allow', async (t) => {
  const res = await fetch(`${front.url}/logout`, { method: 'PUT' })
  t.equal(res.status, 405)
  t.equal(res.headers.get('allow'), 'GET, POST')
})
