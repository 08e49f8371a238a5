import t, { type Test } from 'tap'
import { epochSeconds } from '../../src/clock.js'
import { hashToken } from '../../src/store/hash.js'
import {
  ALICE_PASSWORD,
  BOB_PASSWORD,
  Browser,
  WEB_CALLBACK,
  authParams,
  authorizeAs,
  authorizeUrl,
  formWith,
  frontYaml,
  get,
  setCookies,
  startFront,
  type Front,
} from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'

/**
 * POST /login: the same answer for a wrong password and an unknown user, the
 * per-username and per-address limits, CSRF and Origin checks, and the session
 * cookie. Client addresses come from X-Forwarded-For (127.0.0.1 is a trusted
 * proxy in this config) so the two limits can be told apart.
 */

const yaml = await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' })
const front = await startFront(yaml)
t.teardown(() => front.close())

interface LoginPage {
  form: { action: string; fields: Record<string, string> }
  cookie: string
}

/** Open /authorize without a session: the login page and its pre-session cookie. */
async function openLogin(f: Front = front, params = authParams()): Promise<LoginPage> {
  const url = authorizeUrl(f, params)
  const res = await get(url)
  if (res.status !== 200) throw new Error(`no login page: ${res.status}`)
  const csrf = setCookies(res.headers).get('bw_csrf') ?? setCookies(res.headers).get('__Host-bw_csrf')
  const name = setCookies(res.headers).has('bw_csrf') ? 'bw_csrf' : '__Host-bw_csrf'
  return { form: formWith(res.text, url, 'password'), cookie: `${name}=${csrf?.value ?? ''}` }
}

async function attempt(
  page: LoginPage,
  username: string,
  password: string,
  o: { ip?: string; origin?: string | null; fields?: Record<string, string>; f?: Front } = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const headers: Record<string, string> = { cookie: page.cookie, 'x-forwarded-for': o.ip ?? '192.0.2.1' }
  if (o.origin !== null) headers.origin = o.origin ?? (o.f ?? front).issuer
  return reply(postForm(page.form.action, { ...page.form.fields, username, password, ...o.fields }, headers))
}

t.test('the login page', async (t) => {
  const res = await get(authorizeUrl(front, authParams()))
  t.equal(res.status, 200)
  t.match(res.text, /<form method="post" action="login">/)
  t.match(res.text, /name="username"/)
  t.match(res.text, /name="password" type="password"/)
  t.match(res.text, /<label for="username">Username<\/label>/, 'labelled fields')
  t.match(res.text, /Example Web App/, 'names the application')
  t.match(res.text, /name="csrf" value="[A-Za-z0-9_-]{43}"/)
  t.notMatch(res.text, /<script/i, 'no script at all')
  t.equal(res.headers.get('content-security-policy'), "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'")
  t.equal(res.headers.get('x-frame-options'), 'DENY')
  t.equal(res.headers.get('referrer-policy'), 'same-origin', 'the origin stays on our own form posts, nothing goes to other sites')
  t.equal(res.headers.get('cache-control'), 'no-store')
  const csrf = setCookies(res.headers).get('bw_csrf')
  t.ok(csrf, 'pre-session CSRF cookie')
  t.match(csrf?.attributes, /HttpOnly/)
  t.match(csrf?.attributes, /SameSite=Lax/)
  t.match(res.text, new RegExp(`name="csrf" value="${csrf?.value ?? 'none'}"`), 'the form echoes the cookie (double submit)')

  const hinted = await get(authorizeUrl(front, authParams({ login_hint: 'bob"><b>x' })))
  t.match(hinted.text, /value="bob&quot;&gt;&lt;b&gt;x"/, 'login_hint prefilled, escaped')
})

t.test('a wrong password and an unknown user get the same answer, and no session', async (t) => {
  const page = await openLogin()
  const wrong = await attempt(page, 'alice', 'not the password', { ip: '198.51.100.1' })
  const unknown = await attempt(page, 'mallory', 'whatever', { ip: '198.51.100.2' })
  for (const res of [wrong, unknown]) {
    t.equal(res.status, 400)
    t.match(res.text, /The username or password is incorrect\./)
    t.equal(setCookies(res.headers).has('bw_session'), false, 'no session cookie')
    t.match(res.text, /name="password"/, 'the form is shown again')
  }
  const strip = (s: string): string => s.replace(/value="[^"]*"/g, '')
  t.equal(strip(wrong.text), strip(unknown.text), 'identical pages apart from the typed username')
  const empty = await attempt(page, 'alice', '', { ip: '198.51.100.3' })
  t.equal(empty.status, 400)
  t.match(empty.text, /Enter your username and password/)
})

/** A throttled answer: 429, a Retry-After of `retryAfter` seconds, a page saying how long to wait, no session. */
function assertThrottled(t: Test, res: { status: number; headers: Headers; text: string }, o: { retryAfter: number; text: RegExp }, label: string): void {
  t.equal(res.status, 429, `${label}: 429`)
  t.equal(res.headers.get('retry-after'), String(o.retryAfter), `${label}: Retry-After ${o.retryAfter}`)
  t.match(res.text, o.text, `${label}: the page says why and how long`)
  t.match(res.text, /name="password"/, `${label}: the form is shown again`)
  t.equal(setCookies(res.headers).has('bw_session'), false, `${label}: no session`)
}

const SLOWED = /sign-in from new browsers is slowed down\. Try again in (\d+ seconds?|1 minute)\. A browser you have signed in with before is not affected\./
const LOCKED = /Too many failed sign-in attempts from this browser or network\. Try again in \d+ minutes?\./

/** Sign in as `username` once, from `ip`, and return the known-browser cookie that browser now holds. */
async function knownBrowser(username: string, password: string, ip: string): Promise<string> {
  const res = await attempt(await openLogin(), username, password, { ip })
  if (res.status !== 303) throw new Error(`sign-in as ${username}: ${res.status}`)
  const known = setCookies(res.headers).get('bw_known')
  if (!known) throw new Error('no known-browser cookie')
  return `bw_known=${known.value}`
}

t.test('a known-browser cookie is set at each successful sign-in', async (t) => {
  front.clock.advance(5 * 60_000)
  const res = await attempt(await openLogin(), 'alice', ALICE_PASSWORD, { ip: '192.0.2.40' })
  t.equal(res.status, 303)
  const known = setCookies(res.headers).get('bw_known')
  t.match(known?.value, /^[A-Za-z0-9_-]{43}$/, 'one random token')
  t.match(known?.attributes, /HttpOnly/)
  t.match(known?.attributes, /SameSite=Strict/, 'only our own form needs it')
  t.match(known?.attributes, /Max-Age=7776000/, 'known_browser_ttl, 90 days by default')
  t.equal(await front.store.knownBrowsers.get(hashToken(known?.value ?? '')), 'alice', 'the store knows whom it was issued for')

  // The same browser signing in as bob keeps alice's token too (a shared computer).
  const page = await openLogin()
  const again = await attempt({ ...page, cookie: `${page.cookie}; bw_known=${known?.value ?? ''}` }, 'bob', BOB_PASSWORD, { ip: '192.0.2.40' })
  const both = setCookies(again.headers).get('bw_known')?.value.split('.') ?? []
  t.equal(both.length, 2, 'two tokens')
  t.equal(both[1], known?.value, "alice's token kept, after bob's")
  t.equal(await front.store.knownBrowsers.get(hashToken(both[0] ?? '')), 'user-0002', "bob's sub")
})

t.test('one username guessed from many addresses: unknown browsers wait a doubling delay, capped; the owner is never locked out', async (t) => {
  front.clock.advance(5 * 60_000)
  const ownBrowser = await knownBrowser('alice', ALICE_PASSWORD, '192.0.2.50')
  const page = await openLogin()
  // login_max_failures is 3 here: three guesses from three addresses are plain failures.
  for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) t.equal((await attempt(page, 'alice', 'guess', { ip })).status, 400, `guess from ${ip}`)

  await t.test('during the wait the right password from a new browser is refused without being checked', async (t) => {
    const right = await attempt(page, 'alice', ALICE_PASSWORD, { ip: '203.0.113.4' })
    assertThrottled(t, right, { retryAfter: 1, text: SLOWED }, 'right password, new browser, new address')
    t.match(right.text, /value="alice"/, 'the username is kept')
  })

  await t.test('the owner in a browser that signed in before is not slowed down', async (t) => {
    const res = await attempt({ ...page, cookie: `${page.cookie}; ${ownBrowser}` }, 'alice', ALICE_PASSWORD, { ip: '198.51.100.200' })
    t.equal(res.status, 303, 'signed in at once, from an address never seen before')
    t.ok(setCookies(res.headers).has('bw_session'))
  })

  await t.test('the waits double with each further failure and stop at login_delay_max (1m)', async (t) => {
    const waits: number[] = []
    for (let i = 0; i < 7; i++) {
      const early = await attempt(page, 'alice', 'guess', { ip: `203.0.113.${20 + i}` })
      t.equal(early.status, 429, `attempt ${i + 1} before the wait is over: 429`)
      const wait = Number(early.headers.get('retry-after'))
      waits.push(wait)
      front.clock.advance(wait * 1000)
      t.equal((await attempt(page, 'alice', 'guess', { ip: `203.0.113.${40 + i}` })).status, 400, `attempt ${i + 1} after ${wait} s: checked (wrong)`)
    }
    t.same(waits, [1, 2, 4, 8, 16, 32, 60], 'seconds waited before each turn')
  })

  await t.test('one turn per wait, however many addresses try at once', async (t) => {
    front.clock.advance(60_000)
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => attempt(page, 'alice', 'guess', { ip: `203.0.114.${i + 1}` })))
    t.equal(burst.filter((r) => r.status === 400).length, 1, 'exactly one of 20 simultaneous guesses was checked')
    t.equal(burst.filter((r) => r.status === 429).length, 19, 'the other 19 were told to wait')
  })

  await t.test('a new browser signs in once its wait is over', async (t) => {
    const refused = await attempt(page, 'alice', ALICE_PASSWORD, { ip: '203.0.113.90' })
    assertThrottled(t, refused, { retryAfter: 60, text: SLOWED }, 'still waiting')
    t.match(refused.text, /Try again in 1 minute\./)
    front.clock.advance(60_000)
    const res = await attempt(page, 'alice', ALICE_PASSWORD, { ip: '203.0.113.90' })
    t.equal(res.status, 303, 'after the bounded wait, the right password signs in')
    t.ok(setCookies(res.headers).has('bw_known'), 'and that browser is known from now on')
  })

  await t.test('an unknown username is slowed down exactly the same way (no enumeration)', async (t) => {
    for (const ip of ['203.0.113.11', '203.0.113.12', '203.0.113.13']) await attempt(page, 'mallory', 'guess', { ip })
    const unknown = await attempt(page, 'mallory', 'guess', { ip: '203.0.113.14' })
    for (const ip of ['203.0.113.61', '203.0.113.62', '203.0.113.63']) await attempt(page, 'bob', 'guess', { ip })
    const known = await attempt(page, 'bob', 'guess', { ip: '203.0.113.64' })
    assertThrottled(t, unknown, { retryAfter: 1, text: SLOWED }, 'unknown user')
    assertThrottled(t, known, { retryAfter: 1, text: SLOWED }, 'known user')
    const strip = (s: string): string => s.replace(/value="[^"]*"/g, '')
    t.equal(strip(unknown.text), strip(known.text), 'identical pages apart from the typed username')
  })
})

t.test('a known-browser cookie helps only the user it was issued for', async (t) => {
  front.clock.advance(5 * 60_000)
  const bobsBrowser = await knownBrowser('bob', BOB_PASSWORD, '192.0.2.60')
  const page = await openLogin()
  for (const ip of ['203.0.115.1', '203.0.115.2', '203.0.115.3']) await attempt(page, 'alice', 'guess', { ip })
  const res = await attempt({ ...page, cookie: `${page.cookie}; ${bobsBrowser}` }, 'alice', ALICE_PASSWORD, { ip: '203.0.115.4' })
  assertThrottled(t, res, { retryAfter: 1, text: SLOWED }, "bob's browser signing in as alice is a new browser for alice")
  const forged = await attempt({ ...page, cookie: `${page.cookie}; bw_known=${'A'.repeat(43)}` }, 'alice', ALICE_PASSWORD, { ip: '203.0.115.5' })
  assertThrottled(t, forged, { retryAfter: 1, text: SLOWED }, 'a made-up token is no known browser')
})

t.test('a known browser is limited by its own counter only', async (t) => {
  front.clock.advance(5 * 60_000)
  const own = await knownBrowser('bob', BOB_PASSWORD, '192.0.2.70')
  const page = await openLogin()
  const mine = { ...page, cookie: `${page.cookie}; ${own}` }
  for (let i = 1; i <= 3; i++) t.equal((await attempt(mine, 'bob', `typo ${i}`, { ip: '192.0.2.70' })).status, 400, `typo ${i}`)
  const locked = await attempt(mine, 'bob', BOB_PASSWORD, { ip: '192.0.2.71' })
  assertThrottled(t, locked, { retryAfter: 300, text: LOCKED }, 'that browser, after login_max_failures typos, even elsewhere')
  t.equal(await front.store.rateLimits.count(`login:user:${hashToken('bob')}`), 0, "its failures are not counted against bob's username")
  const fresh = await attempt(page, 'bob', BOB_PASSWORD, { ip: '192.0.2.70' })
  t.equal(fresh.status, 303, 'another browser at the same address is not affected')
  front.clock.advance(300_000)
  t.equal((await attempt(mine, 'bob', BOB_PASSWORD, { ip: '192.0.2.70' })).status, 303, 'the window passes')
})

t.test('one address guessing one username is locked out for the window, even with the right password', async (t) => {
  front.clock.advance(5 * 60_000)
  const page = await openLogin()
  const ip = '203.0.116.1'
  for (let i = 1; i <= 3; i++) t.equal((await attempt(page, 'bob', `guess ${i}`, { ip })).status, 400)
  front.clock.advance(10_000)
  const right = await attempt(page, 'bob', BOB_PASSWORD, { ip })
  assertThrottled(t, right, { retryAfter: 290, text: LOCKED }, '(bob, 203.0.116.1), right password')
  t.match(right.text, /Try again in 5 minutes\./, 'the wait in minutes, rounded up')
  const elsewhere = await attempt(page, 'bob', BOB_PASSWORD, { ip: '203.0.116.2' })
  t.equal(elsewhere.status, 303, "from another address bob's own turn comes at once (the 1 s wait has passed)")
  t.equal(await front.store.rateLimits.count(`login:pair:${hashToken('bob')}:203.0.116.1`), 3, "bob's success elsewhere does not unlock the guessing address")
})

t.test('one address guessing many usernames is locked out for the window (login_address_max_failures)', async (t) => {
  front.clock.advance(5 * 60_000)
  const page = await openLogin()
  const ip = '203.0.117.1'
  // login_address_max_failures is 6 here; every username differs, so no per-username wait starts.
  for (let i = 1; i <= 6; i++) t.equal((await attempt(page, `user${i}`, 'guess', { ip })).status, 400, `user${i}`)
  assertThrottled(t, await attempt(page, 'bob', BOB_PASSWORD, { ip }), { retryAfter: 300, text: LOCKED }, 'bob from that address')
  t.equal((await attempt(page, 'bob', BOB_PASSWORD, { ip: '203.0.117.2' })).status, 303, 'bob from elsewhere')
  const own = await knownBrowser('alice', ALICE_PASSWORD, '203.0.117.3')
  const mine = { ...page, cookie: `${page.cookie}; ${own}` }
  t.equal((await attempt(mine, 'alice', ALICE_PASSWORD, { ip })).status, 303, 'a known browser behind the locked address still signs in')
})

t.test('CSRF and Origin: refused with 403 and nothing changes', async (t) => {
  const page = await openLogin()
  const ip = '192.0.2.77'
  const cases: Array<[string, () => Promise<{ status: number; headers: Headers; text: string }>]> = [
    ['no token', () => attempt(page, 'alice', ALICE_PASSWORD, { ip, fields: { csrf: '' } })],
    ['a wrong token', () => attempt(page, 'alice', ALICE_PASSWORD, { ip, fields: { csrf: 'A'.repeat(43) } })],
    ['no cookie', () => reply(postForm(page.form.action, { ...page.form.fields, username: 'alice', password: ALICE_PASSWORD }, { origin: front.issuer }))],
    ['a foreign Origin', () => attempt(page, 'alice', ALICE_PASSWORD, { ip, origin: 'https://evil.example' })],
    ['Origin null', () => attempt(page, 'alice', ALICE_PASSWORD, { ip, origin: 'null' })],
    [
      'Sec-Fetch-Site: cross-site without Origin',
      () =>
        reply(
          postForm(
            page.form.action,
            { ...page.form.fields, username: 'alice', password: ALICE_PASSWORD },
            { cookie: page.cookie, 'x-forwarded-for': ip, 'sec-fetch-site': 'cross-site' },
          ),
        ),
    ],
  ]
  for (const [name, send] of cases) {
    await t.test(name, async (t) => {
      const res = await send()
      t.equal(res.status, 403)
      t.match(res.headers.get('content-type'), /^text\/html/)
      t.match(res.text, /not sent from this site, or it has expired/)
      t.equal(setCookies(res.headers).has('bw_session'), false, 'no session')
    })
  }
  t.equal(await front.store.rateLimits.count('login:ip:192.0.2.77'), 0, 'refused before counting: not even a failure was recorded')
  const ok = await attempt(page, 'alice', ALICE_PASSWORD, { ip, origin: null })
  t.equal(ok.status, 303, 'without Origin (older clients) the token alone decides')
})

t.test('success: a new session in an HttpOnly, SameSite=Lax cookie; 303 onwards', async (t) => {
  const page = await openLogin()
  const res = await attempt(page, 'alice', ALICE_PASSWORD, { ip: '192.0.2.10' })
  t.equal(res.status, 303)
  t.match(res.headers.get('location'), /^authorize\?/, 'back to /authorize for consent')
  const session = setCookies(res.headers).get('bw_session')
  t.ok(session)
  t.match(session?.value, /^[A-Za-z0-9_-]{43}$/)
  t.match(session?.attributes, /HttpOnly/)
  t.match(session?.attributes, /SameSite=Lax/)
  t.match(session?.attributes, /Max-Age=28800/, 'session.ttl (8h default)')
  t.match(session?.attributes, /Path=\//)
  t.notMatch(session?.attributes, /Secure/, 'no Secure over plain http')
  const record = await front.store.sessions.get(hashToken(session?.value ?? ''))
  t.match(record, { sub: 'alice', username: 'alice', authTime: epochSeconds(front.clock) })
  t.match(record?.csrf, /^[A-Za-z0-9_-]{43}$/)
  t.equal(await front.store.sessions.get(session?.value ?? ''), null, 'stored under the hash only')

  await t.test('the next authorization skips the login', async (t) => {
    const next = await get(authorizeUrl(front, authParams()), `bw_session=${session?.value ?? ''}`)
    t.equal(next.status, 200)
    t.match(next.text, /name="decision" value="allow"/, 'consent page, not login')
    t.notMatch(next.text, /name="password"/)
  })
  await t.test('a skip_consent client gets its code straight from the login POST', async (t) => {
    const p = await openLogin(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' }))
    const r = await attempt(p, 'alice', ALICE_PASSWORD, { ip: '192.0.2.11' })
    t.equal(r.status, 303, '303: the POST carried a password (RFC 9700 4.11)')
    const url = new URL(r.headers.get('location') ?? '')
    t.equal(url.origin + url.pathname, 'https://first.example.com/cb')
    t.type(url.searchParams.get('code'), 'string')
    t.equal(url.searchParams.get('iss'), front.issuer)
  })
})

t.test('session fixation: a login always mints a new session id and deletes the old one', async (t) => {
  const b = new Browser()
  await authorizeAs(b, authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })))
  const first = b.cookies.get('bw_session') ?? ''
  t.ok(await front.store.sessions.get(hashToken(first)))
  // prompt=login asks again although a session exists
  const url = authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read', prompt: 'login' }))
  const page = await b.get(url)
  const html = await page.text()
  t.match(html, /name="password"/, 'prompt=login shows the login page')
  const res = await b.submit(formWith(html, url, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(res.status, 303)
  t.equal(new URL(res.headers.get('location') ?? '').searchParams.has('code'), true, 'login satisfied prompt=login: straight to the client')
  const second = b.cookies.get('bw_session') ?? ''
  t.not(second, first)
  t.equal(await front.store.sessions.get(hashToken(first)), null, 'old session deleted')
  t.ok(await front.store.sessions.get(hashToken(second)))
})

t.test('max_age: a login older than max_age asks again', async (t) => {
  const b = new Browser()
  const params = authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })
  await authorizeAs(b, authorizeUrl(front, params))
  front.clock.advance(120_000)
  const cookie = `bw_session=${b.cookies.get('bw_session') ?? ''}`
  const fresh = await get(authorizeUrl(front, { ...params, max_age: '600' }), cookie)
  t.equal(fresh.status, 302, 'within max_age: no login')
  const stale = await get(authorizeUrl(front, { ...params, max_age: '60' }), cookie)
  t.equal(stale.status, 200)
  t.match(stale.text, /name="password"/)
  const none = await get(authorizeUrl(front, { ...params, max_age: '60', prompt: 'none' }), cookie)
  t.equal(new URL(none.headers.get('location') ?? '').searchParams.get('error'), 'login_required')
  const callback = await authorizeAs(b, authorizeUrl(front, { ...params, max_age: '0' }))
  t.type(callback.searchParams.get('code'), 'string', 'max_age=0 is satisfied by the login it forces')
  const taken = await front.store.codes.take(hashToken(callback.searchParams.get('code') ?? ''))
  t.equal(taken.status === 'taken' && taken.record.authTime, epochSeconds(front.clock), 'auth_time of the new login')
})

t.test('prompt=none without a session: login_required at the redirect URI', async (t) => {
  const res = await get(authorizeUrl(front, authParams({ prompt: 'none' })))
  t.equal(res.status, 302)
  const url = new URL(res.headers.get('location') ?? '')
  t.equal(url.origin + url.pathname, WEB_CALLBACK)
  t.equal(url.searchParams.get('error'), 'login_required')
  t.equal(url.searchParams.get('state'), authParams().state)
  t.equal(url.searchParams.get('iss'), front.issuer)
})

t.test('the pending request is validated again at login', async (t) => {
  const page = await openLogin()
  const evil = new URLSearchParams(authParams({ redirect_uri: 'https://evil.example/cb' })).toString()
  const res = await attempt(page, 'alice', ALICE_PASSWORD, { ip: '192.0.2.50', fields: { request: evil } })
  t.equal(res.status, 400, 'a tampered redirect_uri is an error page')
  t.equal(res.headers.get('location'), null)
  t.equal(setCookies(res.headers).has('bw_session'), false, 'no session either')
  const missing = await reply(
    postForm(
      page.form.action,
      { csrf: page.form.fields.csrf ?? '', username: 'alice', password: ALICE_PASSWORD },
      { cookie: page.cookie, origin: front.issuer },
    ),
  )
  t.equal(missing.status, 400)
  const repeated = await reply(
    postForm(page.form.action, [...Object.entries(page.form.fields), ['username', 'alice'], ['username', 'bob'], ['password', 'x']], {
      cookie: page.cookie,
      origin: front.issuer,
    }),
  )
  t.equal(repeated.status, 400)
  t.match(repeated.text, /username is repeated/)
})

t.test('with an https public_url: __Host- cookies with Secure', async (t) => {
  const f = await startFront(yaml, { publicUrl: 'https://as.example.com' })
  t.teardown(() => f.close())
  const page = await openLogin(f)
  t.match(page.cookie, /^__Host-bw_csrf=/)
  const res = await attempt(page, 'alice', ALICE_PASSWORD, { f, ip: '192.0.2.60' })
  t.equal(res.status, 303)
  const session = setCookies(res.headers).get('__Host-bw_session')
  t.ok(session)
  t.match(session?.attributes, /Secure/)
  t.match(session?.attributes, /HttpOnly/)
  t.match(session?.attributes, /SameSite=Lax/)
  t.match(session?.attributes, /Path=\//)
  t.notMatch(session?.attributes, /Domain/)
  const foreign = await attempt(page, 'alice', ALICE_PASSWORD, { f, ip: '192.0.2.61', origin: f.url })
  t.equal(foreign.status, 403, 'the served address is not the public origin')
})

t.test('logout ends the session', async (t) => {
  const b = new Browser()
  await authorizeAs(b, authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })))
  const id = b.cookies.get('bw_session') ?? ''
  const record = await front.store.sessions.get(hashToken(id))
  const refused = await reply(postForm(`${front.url}/logout`, { csrf: 'wrong' }, { cookie: `bw_session=${id}`, origin: front.issuer }))
  t.equal(refused.status, 403)
  t.ok(await front.store.sessions.get(hashToken(id)), 'still there')
  const res = await reply(postForm(`${front.url}/logout`, { csrf: record?.csrf ?? '' }, { cookie: `bw_session=${id}`, origin: front.issuer }))
  t.equal(res.status, 200)
  t.match(res.text, /signed out/)
  t.match(setCookies(res.headers).get('bw_session')?.attributes, /Max-Age=0/)
  t.equal(await front.store.sessions.get(hashToken(id)), null)
})

t.test('a store outage at login: temporarily_unavailable to the client, or a 503 page for a device', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const page = await openLogin(f)
  await f.store.close()
  const res = await attempt(page, 'alice', ALICE_PASSWORD, { f })
  t.equal(res.status, 303)
  const url = new URL(res.headers.get('location') ?? '')
  t.equal(url.origin + url.pathname, WEB_CALLBACK)
  t.equal(url.searchParams.get('error'), 'temporarily_unavailable')
  t.equal(url.searchParams.get('iss'), f.issuer)
  const device = await attempt(page, 'alice', ALICE_PASSWORD, { f, fields: { request: '', user_code: 'BCDF-GHJK' } })
  t.equal(device.status, 503)
  t.match(device.text, /Temporarily unavailable/)
  t.equal(device.headers.get('location'), null)
})

t.test('prompt=login and max_age=0 do not loop: after the login comes consent, then the code', async (t) => {
  const b = new Browser()
  const url = authorizeUrl(front, authParams({ prompt: 'login consent', max_age: '0' }))
  const first = await b.get(url)
  const login = await b.submit(formWith(await first.text(), url, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(login.status, 303)
  const next = login.headers.get('location') ?? ''
  t.match(next, /^authorize\?/)
  const params = new URLSearchParams(next.slice('authorize?'.length))
  t.equal(params.get('prompt'), 'consent', 'login is satisfied, consent is still asked for')
  t.equal(params.has('max_age'), false)
  t.equal(params.get('state'), authParams().state)
  const callback = await authorizeAs(b, new URL(next, url).toString())
  t.type(callback.searchParams.get('code'), 'string')
})
