/**
 * Password guessing at POST /login of the real binary (OWASP ASVS 2.2.1,
 * RFC 6819 5.1.4.2.3): failures are limited per username and per client
 * address, the answer never tells which usernames exist, and the client
 * address is the peer unless the peer is a trusted proxy (so an attacker
 * cannot reset the per-address count by inventing X-Forwarded-For values).
 *
 * bearward trusts 127.0.0.1 as a proxy here; requests from 127.0.0.2 are an
 * untrusted peer (all of 127/8 is local on Linux).
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
  const users = ['bob', 'carol', 'dave', 'erin', 'frank', 'grace'].map((u) => `    - username: ${u}\n      password_hash: "${hash}"\n`).join('')
  target = await startTarget({
    users,
    gateway: '{ trusted_proxies: [127.0.0.1] }',
    rateLimit: '{ login_max_failures: 5, client_auth_max_failures: 1000, window: 15m }',
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

/** One login attempt, as seen from `from` (source address) with an optional X-Forwarded-For. */
function attempt(username: string, password: string, o: { xff?: string; from?: string } = {}): Promise<SentResponse> {
  const body = new URLSearchParams({ ...form.fields, username, password }).toString()
  return send(`${target.url}/login`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie,
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
  t.ok(res.cookies.some((c) => c.startsWith('bw_session=')), `${label}: session cookie set`)
}

function assertLocked(t: Test, res: SentResponse, label: string): void {
  t.equal(res.status, 429, `${label}: 429`)
  t.ok(res.headers['retry-after'], `${label}: Retry-After`)
  t.notOk(res.cookies.some((c) => c.startsWith('bw_session=')), `${label}: no session`)
  t.equal(res.headers.location, undefined, `${label}: no redirect`)
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

t.test('per-username lockout: guesses from many addresses lock the account, even for the right password', async (t) => {
  for (let i = 1; i <= 5; i++) {
    const res = await attempt('bob', `guess-${i}`, { xff: `10.1.0.${i}` })
    t.equal(res.status, 400, `guess ${i} from 10.1.0.${i}: wrong password`)
  }
  assertLocked(t, await attempt('bob', DEMO_PASSWORD, { xff: '10.1.0.99' }), 'bob, right password, fresh address')
  assertLocked(t, await attempt('BOB', DEMO_PASSWORD, { xff: '10.1.0.98' }), 'BOB (case variant), fresh address')

  // A locked unknown user looks exactly like a locked real one.
  for (let i = 1; i <= 5; i++) await attempt('nosuchuser', `guess-${i}`, { xff: `10.1.1.${i}` })
  const lockedUnknown = await attempt('nosuchuser', 'x', { xff: '10.1.1.99' })
  const lockedKnown = await attempt('bob', 'x', { xff: '10.1.0.97' })
  t.equal(lockedUnknown.status, 429)
  t.equal(withoutEcho(lockedUnknown.body, 'nosuchuser'), withoutEcho(lockedKnown.body, 'bob'), 'locked unknown and locked known users look the same')

  assertLoggedIn(t, await attempt('carol', DEMO_PASSWORD, { xff: '10.1.0.96' }), 'another user is not affected')
})

t.test('per-address lockout: one address trying many usernames is locked out', async (t) => {
  for (let i = 1; i <= 5; i++) {
    const res = await attempt(`user${i}`, 'guess', { xff: '10.2.0.1' })
    t.equal(res.status, 400, `guess ${i} from 10.2.0.1`)
  }
  assertLocked(t, await attempt('dave', DEMO_PASSWORD, { xff: '10.2.0.1' }), 'dave, right password, locked address')
  assertLoggedIn(t, await attempt('dave', DEMO_PASSWORD, { xff: '10.2.0.2' }), 'dave from another address')
})

t.test('behind a trusted proxy, only the right-most untrusted X-Forwarded-For entry counts (prepended values are ignored)', async (t) => {
  for (let i = 1; i <= 5; i++) {
    const res = await attempt(`probe${i}`, 'guess', { xff: `198.51.100.${i}, 10.3.0.1` })
    t.equal(res.status, 400, `guess ${i}, spoofed left-most entry`)
  }
  assertLocked(t, await attempt('erin', DEMO_PASSWORD, { xff: '203.0.113.77, 10.3.0.1' }), 'still the same client: locked')
})

t.test('from an untrusted peer, X-Forwarded-For is ignored: rotating it does not reset the per-address count', async (t) => {
  for (let i = 1; i <= 5; i++) {
    const res = await attempt(`spoof${i}`, 'guess', { from: '127.0.0.2', xff: `10.4.0.${i}` })
    t.equal(res.status, 400, `guess ${i} from 127.0.0.2 claiming 10.4.0.${i}`)
  }
  assertLocked(t, await attempt('frank', DEMO_PASSWORD, { from: '127.0.0.2', xff: '10.4.0.200' }), 'a new X-Forwarded-For does not help')
  assertLocked(t, await attempt('frank', DEMO_PASSWORD, { from: '127.0.0.2' }), 'nor does dropping it')
  assertLoggedIn(t, await attempt('grace', DEMO_PASSWORD, { xff: '10.4.0.201' }), 'other clients can still log in')
})
