import t from 'tap'
import { grantIdForCode } from '../../src/as/grant-id.js'
import { startGrant } from '../../src/as/issue.js'
import { verifyOwnAccessToken } from '../../src/as/verify-token.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { hashToken } from '../../src/store/hash.js'
import {
  ALICE_PASSWORD,
  BOB_PASSWORD,
  Browser,
  CLIENT_SECRET,
  WEB_CALLBACK,
  authParams,
  authorizeAs,
  authorizeUrl,
  formWith,
  frontYaml,
  get,
  parseForms,
  pkce,
  startFront,
  type Front,
} from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'

/**
 * GET and POST /account: the applications a person allowed, and withdrawing
 * one (remembered consent forgotten, every grant of that person and client
 * revoked: refresh tokens dead, access tokens on the revocation list).
 */

const yaml = await frontYaml({
  clientsExtra: `    - client_id: branded
      name: Orders Web
      type: public
      redirect_uris: [https://branded.example.com/cb]
      logo_uri: https://cdn.example.com/orders/logo.png
      scopes: [openid, orders:read]
`,
})

const cookieOf = (b: Browser): string => [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')

/** Sign in through the account page itself; returns the browser and the page it lands on. */
async function signInAtAccount(f: Front, username = 'alice', password = ALICE_PASSWORD): Promise<{ b: Browser; page: string }> {
  const b = new Browser()
  const url = `${f.url}/account`
  const login = await b.get(url)
  const form = formWith(await login.text(), url, 'password')
  const sent = await b.submit(form, { username, password })
  if (sent.status !== 303 || sent.headers.get('location') !== 'account') throw new Error(`login did not return to the account page: ${sent.status}`)
  const page = await b.get(url)
  return { b, page: await page.text() }
}

/** Alice allows `web` on the consent page, and the code becomes a grant with tokens (as /token would make it). */
async function allowWeb(f: Front, b: Browser, sub = 'alice'): Promise<{ grantId: string; access: string; refresh: string }> {
  const callback = await authorizeAs(b, authorizeUrl(f, authParams({ prompt: 'consent' })), { decision: 'allow' })
  if (callback.searchParams.get('code') === null) throw new Error('no code')
  const grantId = `grant-${Math.random().toString(36).slice(2)}`
  const client = f.as.clients.get('web')
  if (client === undefined) throw new Error('no web client')
  const tokens = await startGrant(f.as, {
    grant: 'authorization_code',
    client,
    grantId,
    sub,
    scope: 'openid orders:read',
    authTime: Math.floor(f.clock.now() / 1000),
    resource: null,
    audience: f.issuer,
    nonce: null,
    jkt: null,
  })
  return { grantId, access: tokens.access_token, refresh: tokens.refresh_token ?? '' }
}

t.test('not signed in: the login page, which comes back to the account page', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const first = await get(`${f.url}/account`)
  t.equal(first.status, 200)
  t.match(first.text, /to see the applications you allowed/)
  const form = formWith(first.text, `${f.url}/account`, 'password')
  t.equal(form.fields.next, 'account')

  const b = new Browser()
  await b.get(`${f.url}/account`)
  const wrong = await b.submit(formWith(first.text, `${f.url}/account`, 'password'), { username: 'alice', password: 'wrong' })
  // The form came from another browser's page: its token is not this browser's cookie.
  t.equal(wrong.status, 403)
  const own = formWith(await (await b.get(`${f.url}/account`)).text(), `${f.url}/account`, 'password')
  const again = await b.submit(own, { username: 'alice', password: 'wrong' })
  t.equal(again.status, 400)
  const retry = formWith(await again.text(), `${f.url}/login`, 'password')
  t.equal(retry.fields.next, 'account', 'a failed login keeps where it goes next')
  t.equal(retry.fields.username, 'alice')

  const { page } = await signInAtAccount(f)
  t.match(page, /<h1>Your account<\/h1>/)
  t.match(page, /Signed in as <strong>Alice Example<\/strong>/)
  t.match(page, /No application has access to your account\./)
})

t.test('the applications a person allowed: name, logo, scopes in plain words, when', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const { b } = await signInAtAccount(f)
  f.clock.set(Date.UTC(2026, 10, 23, 12, 0, 0))
  await allowWeb(f, b)
  await authorizeAs(
    b,
    authorizeUrl(f, authParams({ client_id: 'branded', redirect_uri: 'https://branded.example.com/cb', scope: 'orders:read', nonce: undefined })),
  )
  const res = await get(`${f.url}/account`, cookieOf(b))
  t.equal(res.status, 200)
  t.match(res.text, /<h3><bdi>Example Web App<\/bdi><\/h3>/)
  t.match(
    res.text,
    /<img class="client-logo" src="https:\/\/cdn\.example\.com\/orders\/logo\.png" alt="" width="32" height="32"[^>]*><h3><bdi>Orders Web<\/bdi><\/h3>/,
  )
  t.match(res.text, /Allowed on <time datetime="2026-11-23T12:00:00\.000Z">23 November 2026<\/time>/)
  t.match(res.text, /<li>Read your orders<span class="scope-name">orders:read<\/span><\/li>/)
  t.equal(
    res.headers.get('content-security-policy'),
    "default-src 'none'; style-src 'self'; img-src 'self' data: https://cdn.example.com; frame-ancestors 'none'; base-uri 'none'",
    'the logos it shows, nothing more',
  )
  const withdrawForms = parseForms(res.text, `${f.url}/account`).filter((x) => x.buttons.some((b) => b.name === 'withdraw'))
  t.same(withdrawForms.map((x) => x.fields.client_id).sort(), ['branded', 'web'])
  t.ok(withdrawForms.every((x) => x.method === 'POST' && x.fields.csrf !== undefined && x.action === `${f.url}/account`))
  const bob = await signInAtAccount(f, 'bob', BOB_PASSWORD)
  t.match(bob.page, /No application has access/, "bob sees none of alice's applications")
})

t.test('withdrawing: consent forgotten, refresh token dead, access token revoked, the person is asked again', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const { b } = await signInAtAccount(f)
  const alice = await allowWeb(f, b)
  const bobBrowser = (await signInAtAccount(f, 'bob', BOB_PASSWORD)).b
  const bob = await allowWeb(f, bobBrowser, 'user-0002')
  t.ok(await verifyOwnAccessToken(f.as, alice.access), 'the access token works before')
  t.ok(await f.store.consents.get('alice', 'web'), 'consent remembered before')

  const page = await get(`${f.url}/account`, cookieOf(b))
  const form = parseForms(page.text, `${f.url}/account`).find((x) => x.fields.client_id === 'web')
  if (form === undefined) throw new Error('no withdraw form for web')
  const res = await b.submit(form)
  t.equal(res.status, 303)
  t.equal(res.headers.get('location'), 'account?withdrawn=web')

  t.equal(await f.store.consents.get('alice', 'web'), null, 'remembered consent forgotten')
  t.equal(await f.store.grants.findRefresh(hashToken(alice.refresh)), null, 'the refresh family is dead')
  t.ok(f.as.revocations.isRevoked(null, alice.grantId), 'the grant is on the revocation list')
  t.equal(await verifyOwnAccessToken(f.as, alice.access), null, 'its access token is refused')
  t.same(
    (await f.store.revocations.list()).filter((e) => e.id === alice.grantId).map((e) => e.kind),
    ['grant'],
    'in the shared list too',
  )

  t.ok(await verifyOwnAccessToken(f.as, bob.access), "bob's access to the same client is untouched")
  t.ok(await f.store.grants.findRefresh(hashToken(bob.refresh)))

  const after = await get(`${f.url}/account?withdrawn=web`, cookieOf(b))
  t.match(after.text, /<p class="notice" role="status">You withdrew the access of <bdi>Example Web App<\/bdi>\.<\/p>/)
  t.notMatch(after.text, /<h3><bdi>Example Web App<\/bdi><\/h3>/)

  const asked = await get(authorizeUrl(f, authParams()), cookieOf(b))
  t.equal(asked.status, 200, 'the next authorization asks again')
  t.match(asked.text, /Allow <bdi>Example Web App<\/bdi> to access your account\?/)
  const callback = await authorizeAs(b, authorizeUrl(f, authParams()), { decision: 'allow' })
  t.equal(callback.origin + callback.pathname, WEB_CALLBACK, 'and allowing again works')
})

t.test('a code issued before "Withdraw access" is refused at /token afterwards: invalid_grant, no tokens, no grant left', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const { b } = await signInAtAccount(f)
  const exchange = (code: string, verifier: string) =>
    reply(
      postForm(
        `${f.url}/token`,
        { grant_type: 'authorization_code', code, redirect_uri: WEB_CALLBACK, code_verifier: verifier },
        { authorization: `Basic ${Buffer.from(`web:${CLIENT_SECRET}`).toString('base64')}` },
      ),
    )
  const codeFor = async (): Promise<{ code: string; verifier: string }> => {
    const { verifier, challenge } = pkce()
    const callback = await authorizeAs(b, authorizeUrl(f, authParams({ prompt: 'consent', code_challenge: challenge })), { decision: 'allow' })
    const code = callback.searchParams.get('code')
    if (code === null) throw new Error('no code')
    return { code, verifier }
  }

  const early = await codeFor()
  f.clock.advance(10_000) // within code_ttl (60 s)
  const page = await get(`${f.url}/account`, cookieOf(b))
  const form = parseForms(page.text, `${f.url}/account`).find((x) => x.fields.client_id === 'web')
  if (form === undefined) throw new Error('no withdraw form for web')
  t.equal((await b.submit(form)).status, 303, 'withdrawn')
  f.clock.advance(1_000)

  const refused = await exchange(early.code, early.verifier)
  t.equal(refused.status, 400)
  t.equal(refused.json?.error, 'invalid_grant')
  t.notOk(refused.json !== null && 'access_token' in refused.json, 'no access token')
  t.notOk(refused.json !== null && 'refresh_token' in refused.json, 'no refresh token')
  t.equal(await f.store.grants.get(grantIdForCode(hashToken(early.code))), null, 'no grant was created')
  t.same(await f.store.allowances.list('alice'), [], 'the account page lists nothing for web again')
  t.equal((await exchange(early.code, early.verifier)).json?.error, 'invalid_grant', 'the code is spent: a second try is refused too')

  const later = await codeFor()
  const ok = await exchange(later.code, later.verifier)
  t.equal(ok.status, 200, 'a code the person gave after withdrawing is exchanged')
  t.type(ok.json?.access_token, 'string')
  t.same(
    (await f.store.allowances.list('alice')).map((a) => [a.clientId, a.grantIds]),
    [['web', [grantIdForCode(hashToken(later.code))]]],
    'and only its grant is listed',
  )
})

t.test('withdraw is a POST with the session, its CSRF token and our origin; anything else changes nothing', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const { b } = await signInAtAccount(f)
  const alice = await allowWeb(f, b)
  const page = await get(`${f.url}/account`, cookieOf(b))
  const form = parseForms(page.text, `${f.url}/account`).find((x) => x.fields.client_id === 'web')
  if (form === undefined) throw new Error('no withdraw form')
  const forged: Array<[string, Promise<{ status: number; headers: Headers }>]> = [
    ['made-up csrf', reply(postForm(form.action, { ...form.fields, csrf: 'A'.repeat(43) }, { cookie: cookieOf(b), origin: f.issuer }))],
    ['no csrf', reply(postForm(form.action, { client_id: 'web' }, { cookie: cookieOf(b), origin: f.issuer }))],
    ['foreign Origin', reply(postForm(form.action, form.fields, { cookie: cookieOf(b), origin: 'https://evil.example' }))],
    ['Origin: null', reply(postForm(form.action, form.fields, { cookie: cookieOf(b), origin: 'null' }))],
    ['Sec-Fetch-Site: cross-site', reply(postForm(form.action, form.fields, { cookie: cookieOf(b), 'sec-fetch-site': 'cross-site' }))],
    ['no session', reply(postForm(form.action, form.fields, { origin: f.issuer }))],
  ]
  for (const [label, sent] of forged) {
    const res = await sent
    t.equal(res.status, 403, label)
    t.equal(res.headers.get('location'), null, `${label}: no redirect`)
  }
  const noClient = await reply(postForm(form.action, { csrf: form.fields.csrf ?? '' }, { cookie: cookieOf(b), origin: f.issuer }))
  t.equal(noClient.status, 400)
  const viaGet = await get(`${f.url}/account?client_id=web&csrf=${form.fields.csrf ?? ''}&withdraw=1`, cookieOf(b))
  t.equal(viaGet.status, 200, 'a GET only shows the page')
  t.ok(await verifyOwnAccessToken(f.as, alice.access), 'the access token still works')
  t.ok(await f.store.grants.findRefresh(hashToken(alice.refresh)), 'the refresh token still works')
  t.ok(await f.store.consents.get('alice', 'web'), 'the consent is still remembered')
})

t.test('the notice never reflects the URL; other methods are 405', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const { b } = await signInAtAccount(f)
  const res = await get(`${f.url}/account?withdrawn=${encodeURIComponent('<script>alert(1)</script>')}`, cookieOf(b))
  t.equal(res.status, 200)
  t.notMatch(res.text, /script|withdrew/)
  const put = await fetch(`${f.url}/account`, { method: 'PUT' })
  t.equal(put.status, 405)
  t.equal(put.headers.get('allow'), 'GET, POST')
})

t.test('the store failing mid-withdrawal: a 503 page, nothing half-done, and sending it again works', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const { b } = await signInAtAccount(f)
  const alice = await allowWeb(f, b)
  const page = await get(`${f.url}/account`, cookieOf(b))
  const form = parseForms(page.text, `${f.url}/account`).find((x) => x.fields.client_id === 'web')
  if (form === undefined) throw new Error('no withdraw form')
  const listAllowances = f.store.allowances.list.bind(f.store.allowances)
  f.store.allowances.list = async () => {
    throw new StoreUnavailableError('store unavailable')
  }
  const down = await b.submit(form)
  t.equal(down.status, 503)
  t.match(await down.text(), /Temporarily unavailable/)
  t.equal(f.as.metrics.storeErrors.get({ face: 'as' }), 1, 'an outage at a page is counted like one at an endpoint')
  t.ok(await f.store.consents.get('alice', 'web'), 'nothing was forgotten')
  t.ok(await verifyOwnAccessToken(f.as, alice.access), 'nothing was revoked')
  f.store.allowances.list = listAllowances
  const again = await b.submit(form)
  t.equal(again.status, 303, 'sent again, it works')
  t.equal(await verifyOwnAccessToken(f.as, alice.access), null)
})

/** The account page's "Sign out everywhere" form, its button pressed (fields as a browser sends them). */
function everywhereForm(page: string, url: string): { action: string; method: string; fields: Record<string, string> } | undefined {
  const form = parseForms(page, url).find((x) => x.buttons.some((b) => b.name === 'sign_out' && b.value === 'everywhere'))
  return form === undefined ? undefined : { action: form.action, method: form.method, fields: { ...form.fields, sign_out: 'everywhere' } }
}

t.test('"Sign out everywhere": every session of the person ends, others keep theirs, listeners hear it once', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const heard: Array<{ sub: string; reason: string; sessions: number; grants: number | null }> = []
  f.as.sessionEnds.on((e) => {
    heard.push({ sub: e.sub, reason: e.reason, sessions: e.sessions.length, grants: e.grantsRevoked })
  })
  const laptop = await signInAtAccount(f)
  const phone = await signInAtAccount(f)
  const bob = await signInAtAccount(f, 'bob', BOB_PASSWORD)
  const alice = await allowWeb(f, laptop.b)
  const form = everywhereForm(laptop.page, `${f.url}/account`)
  if (form === undefined) throw new Error('no "Sign out everywhere" form')
  t.equal(form.method, 'POST')
  t.same(Object.keys(form.fields).sort(), ['csrf', 'sign_out'], 'the session’s CSRF token and the button')

  const res = await reply(postForm(form.action, form.fields, { cookie: cookieOf(laptop.b), origin: f.issuer }))
  t.equal(res.status, 200)
  t.match(res.text, /You have signed out everywhere/)
  t.match(res.headers.get('set-cookie') ?? '', /bw_session=;.*Max-Age=0/i, 'this browser’s cookie is cleared')
  t.match((await get(`${f.url}/account`, cookieOf(laptop.b))).text, /to see the applications you allowed/, 'the laptop is signed out')
  t.match((await get(`${f.url}/account`, cookieOf(phone.b))).text, /to see the applications you allowed/, 'and so is the phone')
  t.match((await get(`${f.url}/account`, cookieOf(bob.b))).text, /<h1>Your account<\/h1>/, 'another person stays signed in')
  t.same(heard, [{ sub: 'alice', reason: 'sign_out_everywhere', sessions: 2, grants: null }], 'the hook heard both sessions, once')
  t.ok(await verifyOwnAccessToken(f.as, alice.access), 'grants stay: signing out is not withdrawing')
})

t.test('"Sign out everywhere" needs the session, its CSRF token and our origin; anything else ends nothing', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const { b, page } = await signInAtAccount(f)
  const form = everywhereForm(page, `${f.url}/account`)
  if (form === undefined) throw new Error('no "Sign out everywhere" form')
  const forged: Array<[string, Promise<{ status: number; headers: Headers }>]> = [
    ['made-up csrf', reply(postForm(form.action, { ...form.fields, csrf: 'A'.repeat(43) }, { cookie: cookieOf(b), origin: f.issuer }))],
    ['no csrf', reply(postForm(form.action, { sign_out: 'everywhere' }, { cookie: cookieOf(b), origin: f.issuer }))],
    ['foreign Origin', reply(postForm(form.action, form.fields, { cookie: cookieOf(b), origin: 'https://evil.example' }))],
    ['Sec-Fetch-Site: cross-site', reply(postForm(form.action, form.fields, { cookie: cookieOf(b), 'sec-fetch-site': 'cross-site' }))],
  ]
  for (const [label, sent] of forged) t.equal((await sent).status, 403, label)
  const viaGet = await get(`${f.url}/account?sign_out=everywhere&csrf=${form.fields.csrf ?? ''}`, cookieOf(b))
  t.match(viaGet.text, /<h1>Your account<\/h1>/, 'a GET only shows the page')
  t.match((await get(`${f.url}/account`, cookieOf(b))).text, /<h1>Your account<\/h1>/, 'still signed in')
})
