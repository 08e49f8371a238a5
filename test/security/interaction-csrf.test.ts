/**
 * Cross-site request forgery and session fixation on the interaction pages
 * (/login, /consent, /device, /logout) of the real binary (RFC 9700 4.7,
 * RFC 6749 10.12, OWASP session management).
 *
 * A forged POST (no token, a made-up token, another browser's token, a
 * foreign or `null` Origin, `Sec-Fetch-Site: cross-site`) gets 403 and
 * changes nothing: no session cookie, no code, no device approval. A session
 * id planted before login is never the one used after it.
 */
import t, { type Test } from 'tap'
import { Browser, parseForms, type HtmlForm } from '../helpers/browser.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { pkce, postForm, startTarget, type Target } from '../helpers/attack.js'

const REDIRECT = 'http://127.0.0.1:5555/callback'

let target: Target

t.before(async () => {
  target = await startTarget()
})
t.teardown(() => target.close())

const { challenge } = pkce()

function authorizeUrl(overrides: Record<string, string> = {}): string {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: REDIRECT,
    scope: 'orders:read',
    state: 'csrf-test',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
  })
  return `${target.url}/authorize?${q}`
}

function cookieHeader(browser: Browser): string {
  return [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
}

/** Submit `form` the way a forger would: chosen fields, cookies, and headers. */
async function forge(
  form: HtmlForm,
  o: { fields?: Record<string, string | null>; cookie?: string; origin?: string | null; headers?: Record<string, string> },
): Promise<Response> {
  const fields: Record<string, string> = {}
  for (const [k, v] of Object.entries({ ...form.fields, ...o.fields })) if (v !== null) fields[k] = v
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', ...o.headers }
  if (o.cookie) headers.cookie = o.cookie
  if (o.origin !== null) headers.origin = o.origin ?? target.url
  return fetch(form.action, { method: 'POST', redirect: 'manual', headers, body: new URLSearchParams(fields) })
}

/** A forged POST was refused and changed nothing visible to the browser. */
async function assertRefused(t: Test, res: Response, label: string): Promise<void> {
  await res.arrayBuffer()
  t.equal(res.status, 403, `${label}: 403`)
  t.equal(res.headers.get('location'), null, `${label}: no redirect`)
  t.notOk(
    res.headers.getSetCookie().some((c) => /^(__Host-)?bw_session=[^;]/.test(c)),
    `${label}: no session cookie`,
  )
}

async function loginForm(browser: Browser, url: string): Promise<HtmlForm> {
  const res = await browser.get(url)
  const form = parseForms(await res.text(), url).find((f) => 'password' in f.fields || 'csrf' in f.fields)
  if (!form) throw new Error(`no login form at ${url}`)
  return form
}

/** Log in (prompt=consent) and stop at the consent page; returns its form. */
async function toConsent(browser: Browser, url: string): Promise<HtmlForm> {
  const form = await loginForm(browser, url)
  const sent = await browser.submit(form, { username: 'alice', password: DEMO_PASSWORD })
  const { res, url: at } = await browser.follow(sent, url, target.url)
  const consent = parseForms(await res.text(), at).find((f) => f.buttons.some((b) => b.name === 'decision'))
  if (!consent) throw new Error(`no consent form (status ${res.status})`)
  return consent
}

t.test('POST /login: forged submissions are 403 and log nobody in', async (t) => {
  const victim = new Browser()
  const url = authorizeUrl()
  const form = await loginForm(victim, url)
  const other = new Browser()
  const otherForm = await loginForm(other, url)
  t.not(otherForm.fields.csrf, form.fields.csrf, 'two browsers get two tokens')
  const creds = { username: 'alice', password: DEMO_PASSWORD }
  const cookie = cookieHeader(victim)

  await assertRefused(t, await forge(form, { fields: { ...creds, csrf: null }, cookie }), 'no csrf field')
  await assertRefused(t, await forge(form, { fields: { ...creds, csrf: '' }, cookie }), 'empty csrf')
  await assertRefused(t, await forge(form, { fields: { ...creds, csrf: 'A'.repeat(43) }, cookie }), 'made-up csrf')
  await assertRefused(t, await forge(form, { fields: { ...creds, csrf: otherForm.fields.csrf ?? '' }, cookie }), "another browser's csrf")
  await assertRefused(t, await forge(form, { fields: creds }), 'valid-looking csrf but no cookie')
  await assertRefused(
    t,
    await forge(form, {
      fields: { ...creds, csrf: otherForm.fields.csrf ?? '' },
      cookie: cookieHeader(other).replace(/bw_csrf=[^;]*/, `bw_csrf=${form.fields.csrf}`),
    }),
    'cookie and field swapped between browsers',
  )
  await assertRefused(t, await forge(form, { fields: creds, cookie, origin: 'https://evil.example' }), 'foreign Origin')
  await assertRefused(t, await forge(form, { fields: creds, cookie, origin: 'null' }), 'Origin: null')
  await assertRefused(t, await forge(form, { fields: creds, cookie, origin: `${target.url}.evil.example` }), 'Origin with our origin as a prefix')
  await assertRefused(t, await forge(form, { fields: creds, cookie, origin: null, headers: { 'sec-fetch-site': 'cross-site' } }), 'Sec-Fetch-Site: cross-site')

  // The same form, sent honestly, works: the refusals were about the forgery only.
  const honest = await victim.submit(form, creds)
  t.equal(honest.status, 303, 'the genuine submission logs in')
  t.ok(victim.cookies.has('bw_session'), 'and sets the session cookie')
})

t.test('session fixation: a session id planted before login is never the session after it', async (t) => {
  const planted = 'P'.repeat(43)
  const browser = new Browser()
  browser.cookies.set('bw_session', planted)
  const url = authorizeUrl({ prompt: 'consent' })
  const form = await loginForm(browser, url)
  const sent = await browser.submit(form, { username: 'alice', password: DEMO_PASSWORD })
  t.equal(sent.status, 303)
  const setCookie = sent.headers.getSetCookie().find((c) => c.startsWith('bw_session='))
  t.ok(setCookie, 'login sets a session cookie')
  t.match(setCookie, /HttpOnly/i, 'HttpOnly')
  t.match(setCookie, /SameSite=(Lax|Strict)/i, 'SameSite')
  const after = browser.cookies.get('bw_session')
  t.not(after, planted, 'the session id after login is not the planted one')
  const withPlanted = await fetch(authorizeUrl({ prompt: 'none' }), { redirect: 'manual', headers: { cookie: `bw_session=${planted}` } })
  t.equal(new URL(withPlanted.headers.get('location') ?? '').searchParams.get('error'), 'login_required', 'the planted id is not logged in')

  // Logging in again (prompt=login) replaces the session; the old id dies.
  const before = browser.cookies.get('bw_session') ?? ''
  const again = await loginForm(browser, authorizeUrl({ prompt: 'login' }))
  await browser.submit(again, { username: 'alice', password: DEMO_PASSWORD })
  const renewed = browser.cookies.get('bw_session') ?? ''
  t.not(renewed, before, 'a second login issues a new id')
  const old = await fetch(authorizeUrl({ prompt: 'none' }), { redirect: 'manual', headers: { cookie: `bw_session=${before}` } })
  t.equal(new URL(old.headers.get('location') ?? '').searchParams.get('error'), 'login_required', 'the previous id no longer works')
})

t.test('POST /consent: forged decisions are 403 and issue no code', async (t) => {
  const victim = new Browser()
  const other = new Browser()
  const url = authorizeUrl({ prompt: 'consent', scope: 'orders:read orders:write' })
  const form = await toConsent(victim, url)
  const otherForm = await toConsent(other, url)
  t.not(otherForm.fields.csrf, form.fields.csrf, 'each session has its own token')
  const cookie = cookieHeader(victim)
  const allow = { decision: 'allow' }

  await assertRefused(t, await forge(form, { fields: { ...allow, csrf: null }, cookie }), 'no csrf')
  await assertRefused(t, await forge(form, { fields: { ...allow, csrf: 'A'.repeat(43) }, cookie }), 'made-up csrf')
  await assertRefused(t, await forge(form, { fields: { ...allow, csrf: otherForm.fields.csrf ?? '' }, cookie }), "another session's csrf")
  await assertRefused(t, await forge(form, { fields: allow }), 'no session cookie')
  await assertRefused(t, await forge(form, { fields: allow, cookie, origin: 'https://evil.example' }), 'foreign Origin')
  await assertRefused(t, await forge(form, { fields: allow, cookie, origin: 'null' }), 'Origin: null')
  await assertRefused(t, await forge(form, { fields: allow, cookie, origin: null, headers: { 'sec-fetch-site': 'cross-site' } }), 'Sec-Fetch-Site: cross-site')

  // With a valid token, a request tampered to send the code elsewhere is still refused without a redirect.
  const tampered = (form.fields.request ?? '').replace(encodeURIComponent(REDIRECT), encodeURIComponent('https://evil.example/cb'))
  const res = await forge(form, { fields: { ...allow, request: tampered }, cookie })
  await res.arrayBuffer()
  t.equal(res.status, 400, 'tampered redirect_uri in the consent form: error page')
  t.equal(res.headers.get('location'), null, 'no redirect anywhere')

  const honest = await victim.submit(form, allow)
  t.equal(honest.status, 302, 'the genuine allow redirects')
  const cb = new URL(honest.headers.get('location') ?? '')
  t.equal(`${cb.origin}${cb.pathname}`, REDIRECT)
  t.ok(cb.searchParams.get('code'), 'with a code')
})

t.test('POST /device: forged entries and decisions are 403 and leave the device pending', async (t) => {
  const start = await postForm(`${target.url}/device_authorization`, { client_id: 'cli', scope: 'orders:read' })
  const { user_code: userCode, device_code: deviceCode } = (await start.json()) as { user_code: string; device_code: string }
  const victim = new Browser()
  const pageUrl = `${target.url}/device?user_code=${encodeURIComponent(userCode)}`
  const login = await loginForm(victim, pageUrl)
  const sent = await victim.submit(login, { username: 'alice', password: DEMO_PASSWORD })
  const { res, url: at } = await victim.follow(sent, pageUrl, target.url)
  const form = parseForms(await res.text(), at).find((f) => f.buttons.some((b) => b.name === 'decision'))
  if (!form) throw new Error('no device confirmation form')
  t.match(res.headers.get('content-security-policy'), /frame-ancestors 'none'/, 'the confirmation page cannot be framed')
  t.equal(res.headers.get('x-frame-options'), 'DENY')
  const cookie = cookieHeader(victim)
  const allow = { decision: 'allow' }

  await assertRefused(t, await forge(form, { fields: { ...allow, csrf: null }, cookie }), 'no csrf')
  await assertRefused(t, await forge(form, { fields: { ...allow, csrf: 'A'.repeat(43) }, cookie }), 'made-up csrf')
  await assertRefused(t, await forge(form, { fields: allow }), 'no session cookie')
  await assertRefused(t, await forge(form, { fields: allow, cookie, origin: 'https://evil.example' }), 'foreign Origin')
  await assertRefused(t, await forge(form, { fields: allow, cookie, origin: 'null' }), 'Origin: null')
  await assertRefused(t, await forge({ ...form, fields: { user_code: userCode } }, { fields: {}, cookie: '' }), 'code entry without the pre-session token')

  const poll = await postForm(`${target.url}/token`, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: deviceCode, client_id: 'cli' })
  t.equal(poll.status, 400)
  t.match(await poll.json(), { error: 'authorization_pending' }, 'the device is still pending: nothing was approved')
})

t.test('POST /logout with a forged token is 403 and the session survives', async (t) => {
  const browser = new Browser()
  const consent = await toConsent(browser, authorizeUrl({ prompt: 'consent' }))
  const cookie = cookieHeader(browser)
  const logoutForm: HtmlForm = { action: `${target.url}/logout`, method: 'POST', fields: {}, buttons: [] }
  await assertRefused(t, await forge(logoutForm, { fields: { csrf: 'A'.repeat(43) }, cookie }), 'made-up csrf')
  await assertRefused(t, await forge(logoutForm, { fields: { csrf: '' }, cookie }), 'empty csrf')
  await assertRefused(t, await forge(logoutForm, { fields: { csrf: consent.fields.csrf ?? '' }, cookie, origin: 'https://evil.example' }), 'foreign Origin')
  await assertRefused(
    t,
    await forge(logoutForm, { fields: { csrf: consent.fields.csrf ?? '' }, cookie, origin: null, headers: { 'sec-fetch-site': 'cross-site' } }),
    'Sec-Fetch-Site: cross-site',
  )
  // Without a csrf field it is a client's logout request: it asks the person, it signs nobody out.
  const asked = await forge(logoutForm, { fields: {}, cookie, origin: 'https://evil.example' })
  t.equal(asked.status, 200, 'a cross-site POST without a token gets the confirmation page')
  t.match(await asked.text(), /Sign out\?/)
  const check = await fetch(authorizeUrl({ prompt: 'none', scope: 'openid profile' }), { redirect: 'manual', headers: { cookie } })
  const error = new URL(check.headers.get('location') ?? '').searchParams.get('error')
  t.not(error, 'login_required', 'still logged in after the forged logouts')
})
