import t from 'tap'
import { hashToken } from '../../src/store/hash.js'
import {
  Browser,
  WEB_CALLBACK,
  authParams,
  authorizeAs,
  authorizeUrl,
  countCodes,
  formWith,
  frontYaml,
  get,
  startFront,
  type Front,
} from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'

/**
 * The consent page and POST /consent: what the person is shown, deny and
 * allow, remembered consent, prompt=consent/none, and CSRF.
 */

const front = await startFront()
t.teardown(() => front.close())
const codes = countCodes(front.store)

/** A browser logged in as `username` (through a skip_consent client, so no consent is recorded). */
async function signedIn(f: Front = front, username = 'alice', password?: string): Promise<Browser> {
  const b = new Browser()
  const p = authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })
  await authorizeAs(b, authorizeUrl(f, p), { username, ...(password ? { password } : {}) })
  return b
}

const cookieOf = (b: Browser): string => [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')

/** Open the consent page for `params`; returns the page and its form. */
async function consentPage(b: Browser, params: Record<string, string>, f: Front = front) {
  const url = authorizeUrl(f, params)
  const res = await get(url, cookieOf(b))
  if (res.status !== 200) throw new Error(`no consent page: ${res.status} ${res.headers.get('location') ?? ''}`)
  return { res, form: formWith(res.text, url, 'decision') }
}

t.test('the consent page: the client, the scopes in plain words, allow and deny', async (t) => {
  const b = await signedIn()
  const { res, form } = await consentPage(b, authParams({ scope: 'openid orders:read orders:write' }))
  t.match(res.text, /Allow <bdi>Example Web App<\/bdi> to access your account\?/)
  t.match(res.text, /Read your orders/)
  t.match(res.text, /Change or cancel your orders/)
  t.match(res.text, /<span class="scope-name">orders:write<\/span>/)
  t.match(res.text, /Signed in as <strong>Alice Example<\/strong>/, 'the name claim, not the username')
  t.match(res.text, /https:\/\/app\.example\.com/, 'where the browser goes next')
  t.same(form.buttons, [
    { name: 'decision', value: 'allow' },
    { name: 'decision', value: 'deny' },
  ])
  t.match(form.action, /\/consent$/)
  t.equal(form.fields.csrf, (await front.store.sessions.get(hashToken(b.cookies.get('bw_session') ?? '')))?.csrf, 'the session’s CSRF token')
  t.equal(res.headers.get('x-frame-options'), 'DENY', 'cannot be framed (clickjacking)')
  t.match(res.headers.get('content-security-policy'), /frame-ancestors 'none'/)
})

t.test('deny: access_denied with state and iss, no code, nothing remembered', async (t) => {
  const b = await signedIn(front, 'bob', 'bob-password-0123456789')
  const before = codes.count
  const callback = await authorizeAs(b, authorizeUrl(front, authParams()), { decision: 'deny' })
  t.equal(callback.origin + callback.pathname, WEB_CALLBACK)
  t.equal(callback.searchParams.get('error'), 'access_denied')
  t.equal(callback.searchParams.get('state'), authParams().state)
  t.equal(callback.searchParams.get('iss'), front.issuer)
  t.equal(callback.searchParams.get('code'), null)
  t.equal(codes.count, before, 'no code stored')
  t.equal(await front.store.consents.get('user-0002', 'web'), null, 'no consent remembered')
})

t.test('allow: a code, and the consent is remembered per user, client and scopes', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const b = await signedIn(f)
  const { form } = await consentPage(b, authParams({ scope: 'openid orders:read' }), f)
  const res = await b.submit(form, { decision: 'allow' })
  t.equal(res.status, 302, 'SPEC: after consent, 302 to the redirect URI')
  const callback = new URL(res.headers.get('location') ?? '')
  t.type(callback.searchParams.get('code'), 'string')
  t.equal(callback.searchParams.get('state'), authParams().state)
  t.same(await f.store.consents.get('alice', 'web'), ['openid', 'orders:read'])

  const subset = await get(authorizeUrl(f, authParams({ scope: 'orders:read' })), cookieOf(b))
  t.equal(subset.status, 302, 'a subset of what was allowed: no page')
  t.type(new URL(subset.headers.get('location') ?? '').searchParams.get('code'), 'string')

  const wider = await get(authorizeUrl(f, authParams({ scope: 'orders:read orders:write' })), cookieOf(b))
  t.equal(wider.status, 200, 'a new scope: asked again')
  t.match(wider.text, /Change or cancel your orders/)
  await b.submit(formWith(wider.text, authorizeUrl(f, authParams()), 'decision'), { decision: 'allow' })
  t.same(await f.store.consents.get('alice', 'web'), ['openid', 'orders:read', 'orders:write'], 'the union is remembered')

  const forced = await get(authorizeUrl(f, authParams({ scope: 'orders:read', prompt: 'consent' })), cookieOf(b))
  t.equal(forced.status, 200, 'prompt=consent asks although remembered')
  t.match(forced.text, /name="decision"/)

  const otherUser = await signedIn(f, 'bob', 'bob-password-0123456789')
  const bob = await get(authorizeUrl(f, authParams({ scope: 'orders:read' })), cookieOf(otherUser))
  t.equal(bob.status, 200, 'consent is per user')

  const otherClient = await get(
    authorizeUrl(f, authParams({ client_id: 'spa', redirect_uri: 'https://spa.example.com/cb', scope: 'orders:read' })),
    cookieOf(b),
  )
  t.equal(otherClient.status, 200, 'consent is per client')

  f.clock.advance(31 * 86400_000)
  const lapsed = await get(authorizeUrl(f, authParams({ scope: 'orders:read' })), cookieOf(await signedIn(f)))
  t.equal(lapsed.status, 200, 'remembered consent lapses after consent.ttl (30d)')
})

t.test('prompt=none: consent_required when the page would be needed; a code when it would not', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const b = await signedIn(f)
  const before = await get(authorizeUrl(f, authParams({ prompt: 'none' })), cookieOf(b))
  const url = new URL(before.headers.get('location') ?? '')
  t.equal(url.searchParams.get('error'), 'consent_required')
  t.equal(url.searchParams.get('state'), authParams().state)
  t.equal(url.searchParams.get('iss'), f.issuer)
  await authorizeAs(b, authorizeUrl(f, authParams()))
  const after = await get(authorizeUrl(f, authParams({ prompt: 'none' })), cookieOf(b))
  t.type(new URL(after.headers.get('location') ?? '').searchParams.get('code'), 'string')
})

t.test('consent.remember: false asks every time', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: '  consent: { remember: false }' }))
  t.teardown(() => f.close())
  const b = await signedIn(f)
  await authorizeAs(b, authorizeUrl(f, authParams()))
  t.equal(await f.store.consents.get('alice', 'web'), null)
  const again = await get(authorizeUrl(f, authParams()), cookieOf(b))
  t.equal(again.status, 200)
  t.match(again.text, /name="decision"/)
})

t.test('a skip_consent client never shows the page', async (t) => {
  const b = await signedIn()
  const res = await get(
    authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'openid orders:read' })),
    cookieOf(b),
  )
  t.equal(res.status, 302)
  t.type(new URL(res.headers.get('location') ?? '').searchParams.get('code'), 'string')
})

t.test('POST /consent refusals: 403 for CSRF and Origin, nothing stored', async (t) => {
  const b = await signedIn(front, 'bob', 'bob-password-0123456789')
  const { form } = await consentPage(b, authParams())
  const session = `bw_session=${b.cookies.get('bw_session') ?? ''}`
  const allow = { ...form.fields, decision: 'allow' }
  const cases: Array<[string, Record<string, string>, Record<string, string>]> = [
    ['no token', { ...allow, csrf: '' }, { cookie: session, origin: front.issuer }],
    ['a wrong token', { ...allow, csrf: 'B'.repeat(43) }, { cookie: session, origin: front.issuer }],
    ['a foreign Origin', allow, { cookie: session, origin: 'https://evil.example' }],
    ['no session', allow, { origin: front.issuer }],
    [
      'another session’s token',
      { ...allow, csrf: (await front.store.sessions.get(hashToken((await signedIn()).cookies.get('bw_session') ?? '')))?.csrf ?? '' },
      { cookie: session, origin: front.issuer },
    ],
  ]
  for (const [name, fields, headers] of cases) {
    await t.test(name, async (t) => {
      const before = codes.count
      const res = await reply(postForm(form.action, fields, headers))
      t.equal(res.status, 403)
      t.equal(res.headers.get('location'), null)
      t.match(res.text, /not sent from this site, or it has expired/)
      t.equal(codes.count, before, 'no code')
      t.equal(await front.store.consents.get('user-0002', 'web'), null, 'no consent')
    })
  }
  await t.test('no decision', async (t) => {
    const res = await reply(postForm(form.action, form.fields, { cookie: session, origin: front.issuer }))
    t.equal(res.status, 400)
    t.match(res.text, /Choose Allow or Deny/)
  })
  await t.test('a tampered request is validated again: a foreign redirect_uri is an error page', async (t) => {
    const evil = new URLSearchParams(authParams({ redirect_uri: 'https://evil.example/cb' })).toString()
    const res = await reply(postForm(form.action, { ...allow, request: evil }, { cookie: session, origin: front.issuer }))
    t.equal(res.status, 400)
    t.equal(res.headers.get('location'), null)
    t.equal(await front.store.consents.get('user-0002', 'web'), null)
  })
  await t.test('a tampered scope is validated again', async (t) => {
    const wide = new URLSearchParams(authParams({ scope: 'orders:delete' })).toString()
    const res = await reply(postForm(form.action, { ...allow, request: wide }, { cookie: session, origin: front.issuer }))
    t.equal(res.status, 302)
    t.equal(new URL(res.headers.get('location') ?? '').searchParams.get('error'), 'invalid_scope')
    t.equal(await front.store.consents.get('user-0002', 'web'), null)
  })
})

t.test('every value is escaped: a hostile client name and state', async (t) => {
  const state = '"><script>alert(1)</script>'
  const params = authParams({ client_id: 'hostile', redirect_uri: 'https://hostile.example.com/cb', scope: 'orders:read', state })
  const login = await get(authorizeUrl(front, params))
  t.equal(login.status, 200)
  t.notMatch(login.text, /<script/i)
  t.notMatch(login.text, /<b>Evil/)
  t.match(login.text, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt; &amp; &lt;b&gt;Evil&lt;\/b&gt;/)
  const b = await signedIn()
  const consent = await get(authorizeUrl(front, params), cookieOf(b))
  t.equal(consent.status, 200)
  t.notMatch(consent.text, /<script/i)
  t.notMatch(consent.text, /<b>Evil/)
  t.match(consent.text, /Allow <bdi>&lt;script&gt;/)
  const form = formWith(consent.text, authorizeUrl(front, params), 'decision')
  const res = await b.submit(form, { decision: 'allow' })
  t.equal(new URL(res.headers.get('location') ?? '').searchParams.get('state'), state, 'state still reaches the client unchanged')
})

t.test('the stylesheet', async (t) => {
  const res = await fetch(`${front.url}/assets/bearward.css`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/css; charset=utf-8')
  t.equal(res.headers.get('cache-control'), 'public, max-age=3600')
  const css = await res.text()
  t.match(css, /prefers-color-scheme: dark/)
  t.match(css, /:focus-visible/)
  const etag = res.headers.get('etag') ?? ''
  const again = await fetch(`${front.url}/assets/bearward.css`, { headers: { 'if-none-match': etag } })
  t.equal(again.status, 304)
  const page = await get(authorizeUrl(front, authParams()))
  t.match(page.text, /<link rel="stylesheet" href="assets\/bearward.css">/)
  t.match(page.text, /<meta name="viewport" content="width=device-width, initial-scale=1">/)
})

t.test('a store outage at the consent POST goes to the client as temporarily_unavailable', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const b = await signedIn(f)
  const { form } = await consentPage(b, authParams(), f)
  await f.store.close()
  const res = await b.submit(form, { decision: 'allow' })
  t.equal(res.status, 302)
  const url = new URL(res.headers.get('location') ?? '')
  t.equal(url.origin + url.pathname, WEB_CALLBACK)
  t.equal(url.searchParams.get('error'), 'temporarily_unavailable')
  t.equal(url.searchParams.get('state'), authParams().state)
  t.equal(url.searchParams.get('iss'), f.issuer)
})
