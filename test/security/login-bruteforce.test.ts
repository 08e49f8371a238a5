/**
 * Password guessing at POST /login of the real binary (ASVS 5.0 6.1,
 * CWE-645, RFC 6819 5.1.4.2.3). Guessing is throttled per (username,
 * address) and per address; one username guessed from many addresses is
 * slowed by a doubling wait (capped at `login_delay_max`) that a browser
 * which signed in as that user before does not share, so nobody can lock
 * the owner out. The answer never tells which usernames exist, and the
 * client address is the peer unless the peer is a trusted proxy (so an
 * attacker cannot reset the per-address count by inventing X-Forwarded-For
 * values).
 *
 * bearward trusts 127.0.0.1 as a proxy here; requests from 127.0.0.2 are an
 * untrusted peer (all of 127/8 is local on Linux). The binary runs on the
 * system clock, so these tests assert what happens at once and bound what
 * real time allows; the waits themselves are walked through on a manual
 * clock in test/as/login.test.ts and test/e2e/login-throttle.test.ts.
 */
import t, { type Test } from 'tap'
import { Browser, parseForms, type HtmlForm } from '../helpers/browser.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { demoPasswordHash, pkce, send, startTarget, type SentResponse, type Target } from '../helpers/attack.js'

let target: Target
let form: HtmlForm
let cookie: string

t.before(async () => {
  const hash = await demoPasswordHash()
  const users = ['bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'].map((u) => `    - username: ${u}\n      password_hash: "${hash}"\n`).join('')
  target = await startTarget({
    users,
    gateway: '{ trusted_proxies: [127.0.0.1] }',
    rateLimit: '{ login_max_failures: 5, login_address_max_failures: 8, login_delay_max: 1m, client_auth_max_failures: 1000, window: 15m }',
  })
  // One login form and its pre-session CSRF cookie, reused for every attempt.
  const browser = new Browser()
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: 'http://127.0.0.1:5555/callback',
    scope: 'orders:read',
    state: 's',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  })
  const url = `${target.url}/authorize?${q}`
  const page = await browser.get(url)
  const found = parseForms(await page.text(), url).find((f) => 'csrf' in f.fields)
  if (!found) throw new Error('no login form')
  form = found
  cookie = [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
})
t.teardown(() => target.close())

/**
 * One login attempt, as seen from `from` (source address) with an optional
 * X-Forwarded-For, from a browser holding the optional known-browser cookie.
 */
function attempt(username: string, password: string, o: { xff?: string; from?: string; known?: string } = {}): Promise<SentResponse> {
  const body = new URLSearchParams({ ...form.fields, username, password }).toString()
  return send(`${target.url}/login`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: o.known ? `${cookie}; ${o.known}` : cookie,
      origin: target.url,
      ...(o.xff ? { 'x-forwarded-for': o.xff } : {}),
    },
    ...(o.from ? { localAddress: o.from } : {}),
  })
}

/** The page without the echoed username, so two answers can be compared byte for byte. */
function withoutEcho(body: string, username: string): string {
  return body.replaceAll(`value="${username}"`, 'value="…"')
}

function assertLoggedIn(t: Test, res: SentResponse, label: string): void {
  t.equal(res.status, 303, `${label}: 303 onwards`)
  t.ok(
    res.cookies.some((c) => c.startsWith('bw_session=')),
    `${label}: session cookie set`,
  )
}

/** The known-browser cookie (`bw_known=...`) a successful sign-in set. */
function knownCookie(res: SentResponse): string {
  const line = res.cookies.find((c) => c.startsWith('bw_known='))
  if (line === undefined) throw new Error(`no known-browser cookie (status ${res.status})`)
  return line.slice(0, line.indexOf(';'))
}

const LOCKED = /Too many failed sign-in attempts from this browser or network\. Try again in \d+ minutes?\./
const SLOWED = /sign-in from new browsers is slowed down\. Try again in \d+ seconds?\. A browser you have signed in with before is not affected\./

/** Refused for the rest of the window (this address, or this username from this address). */
function assertLocked(t: Test, res: SentResponse, label: string): void {
  t.equal(res.status, 429, `${label}: 429`)
  const retryAfter = Number(res.headers['retry-after'])
  t.ok(retryAfter > 800 && retryAfter <= 900, `${label}: Retry-After is the rest of the 15 minute window (${retryAfter})`)
  t.match(res.body, LOCKED, `${label}: the page says why and for how long`)
  t.notOk(
    res.cookies.some((c) => c.startsWith('bw_session=')),
    `${label}: no session`,
  )
  t.equal(res.headers.location, undefined, `${label}: no redirect`)
}

/** Told to wait its turn: a bounded delay, at most login_delay_max (1m). */
function assertSlowed(t: Test, res: SentResponse, label: string): void {
  t.equal(res.status, 429, `${label}: 429`)
  const retryAfter = Number(res.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 60, `${label}: Retry-After between 1 and 60 s (${retryAfter})`)
  t.match(res.body, SLOWED, `${label}: the page says why, how long, and that a known browser is not affected`)
  t.notOk(
    res.cookies.some((c) => c.startsWith('bw_session=')),
    `${label}: no session`,
  )
}

t.test('no username enumeration: an unknown user and a wrong password get the same answer', async (t) => {
  const wrong = await attempt('alice', 'not the password', { xff: '10.0.0.1' })
  const unknown = await attempt('mallory', 'not the password', { xff: '10.0.0.2' })
  t.equal(wrong.status, 400)
  t.equal(unknown.status, wrong.status, 'same status')
  t.equal(withoutEcho(unknown.body, 'mallory'), withoutEcho(wrong.body, 'alice'), 'same page apart from the echoed username')
  t.same(unknown.cookies, wrong.cookies, 'same cookies')
  const emptyUser = await attempt('', 'x', { xff: '10.0.0.3' })
  t.equal(emptyUser.status, 400, 'an empty username is a plain 400 page')
})

t.test(
  'regression: five wrong passwords from anywhere locked the account; now an attack from many addresses is slowed and the owner still signs in',
  async (t) => {
    // bob signed in from his own browser before the attack.
    const bobsBrowser = knownCookie(await attempt('bob', DEMO_PASSWORD, { xff: '10.1.9.1' }))
    // The first wait starts after the fifth failure: timing from before it bounds the turns safely.
    const started = Date.now()
    for (let i = 1; i <= 5; i++) {
      const res = await attempt('bob', `guess-${i}`, { xff: `10.1.0.${i}` })
      t.equal(res.status, 400, `guess ${i} from 10.1.0.${i}: wrong password`)
    }
    assertSlowed(t, await attempt('bob', DEMO_PASSWORD, { xff: '10.1.0.99' }), 'bob, right password, new browser, fresh address')
    assertSlowed(t, await attempt('BOB', DEMO_PASSWORD, { xff: '10.1.0.98' }), 'BOB (case variant), fresh address')

    // The attack goes on from 40 more addresses; in the middle of it bob signs in.
    let checked = 0
    let slowed = 0
    let owner: SentResponse | null = null
    for (let i = 1; i <= 40; i++) {
      const res = await attempt('bob', `guess-more-${i}`, { xff: `10.1.1.${i}` })
      if (res.status === 400) checked++
      else if (res.status === 429 && SLOWED.test(res.body)) slowed++
      if (i === 20) owner = await attempt('bob', DEMO_PASSWORD, { xff: '10.1.9.2', known: bobsBrowser })
    }
    const elapsedSec = (Date.now() - started) / 1000
    // Waits of 1, 2, 4 ... s: in E seconds at most log2(E + 1) turns come round.
    const bound = Math.floor(Math.log2(elapsedSec + 1))
    t.ok(checked <= bound, `${checked} of 40 guesses were checked in ${elapsedSec.toFixed(1)} s (at most ${bound} allowed)`)
    t.equal(checked + slowed, 40, 'every other guess was told to wait')
    t.equal(owner?.status, 303, 'bob, from the browser he used before, signed in during the attack')
    t.ok(
      owner?.cookies.some((c) => c.startsWith('bw_session=')),
      'with a session',
    )

    // A waiting unknown user looks exactly like a waiting real one (each asked
    // right after its fifth failure, well within the first 1 s wait).
    for (let i = 1; i <= 5; i++) await attempt('nosuchuser', `guess-${i}`, { xff: `10.1.2.${i}` })
    const slowedUnknown = await attempt('nosuchuser', 'x', { xff: '10.1.2.99' })
    for (let i = 1; i <= 5; i++) await attempt('heidi', `guess-${i}`, { xff: `10.1.3.${i}` })
    const slowedKnown = await attempt('heidi', 'x', { xff: '10.1.3.99' })
    assertSlowed(t, slowedUnknown, 'unknown user')
    assertSlowed(t, slowedKnown, 'real user')
    t.equal(withoutEcho(slowedUnknown.body, 'nosuchuser'), withoutEcho(slowedKnown.body, 'heidi'), 'waiting unknown and real users look the same')

    const carol = await attempt('carol', DEMO_PASSWORD, { xff: '10.1.0.96' })
    assertLoggedIn(t, carol, 'another user is not affected')
  },
)

t.test('one address guessing one username is locked out for the window; the owner in a known browser there is not', async (t) => {
  const davesBrowser = knownCookie(await attempt('dave', DEMO_PASSWORD, { xff: '10.2.1.1' }))
  for (let i = 1; i <= 5; i++) t.equal((await attempt('dave', `guess-${i}`, { xff: '10.2.1.1' })).status, 400, `guess ${i}`)
  assertLocked(t, await attempt('dave', DEMO_PASSWORD, { xff: '10.2.1.1' }), 'dave, right password, new browser, that address')
  assertLoggedIn(t, await attempt('dave', DEMO_PASSWORD, { xff: '10.2.1.1', known: davesBrowser }), "dave's own browser at that address")
})

t.test('per-address lockout: one address trying many usernames is locked out', async (t) => {
  for (let i = 1; i <= 8; i++) {
    const res = await attempt(`user${i}`, 'guess', { xff: '10.2.0.1' })
    t.equal(res.status, 400, `guess ${i} from 10.2.0.1`)
  }
  // grace has no failures of her own: the previous test left dave in a wait
  // for new browsers, which would make this outcome depend on the clock.
  assertLocked(t, await attempt('grace', DEMO_PASSWORD, { xff: '10.2.0.1' }), 'grace, right password, locked address')
  assertLoggedIn(t, await attempt('grace', DEMO_PASSWORD, { xff: '10.2.0.2' }), 'grace from another address')
})

t.test('behind a trusted proxy, only the right-most untrusted X-Forwarded-For entry counts (prepended values are ignored)', async (t) => {
  for (let i = 1; i <= 8; i++) {
    const res = await attempt(`probe${i}`, 'guess', { xff: `198.51.100.${i}, 10.3.0.1` })
    t.equal(res.status, 400, `guess ${i}, spoofed left-most entry`)
  }
  assertLocked(t, await attempt('erin', DEMO_PASSWORD, { xff: '203.0.113.77, 10.3.0.1' }), 'still the same client: locked')
})

t.test('from an untrusted peer, X-Forwarded-For is ignored: rotating it does not reset the per-address count', async (t) => {
  for (let i = 1; i <= 8; i++) {
    const res = await attempt(`spoof${i}`, 'guess', { from: '127.0.0.2', xff: `10.4.0.${i}` })
    t.equal(res.status, 400, `guess ${i} from 127.0.0.2 claiming 10.4.0.${i}`)
  }
  assertLocked(t, await attempt('frank', DEMO_PASSWORD, { from: '127.0.0.2', xff: '10.4.0.200' }), 'a new X-Forwarded-For does not help')
  assertLocked(t, await attempt('frank', DEMO_PASSWORD, { from: '127.0.0.2' }), 'nor does dropping it')
  assertLoggedIn(t, await attempt('grace', DEMO_PASSWORD, { xff: '10.4.0.201' }), 'other clients can still log in')
})
