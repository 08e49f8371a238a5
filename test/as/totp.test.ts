/**
 * An authenticator app (TOTP, RFC 6238) over HTTP: set up on the account
 * page (QR code as inline SVG under the pages' CSP, the key in text,
 * confirmed by a first code), ten recovery codes shown once and stored
 * hashed; after the password a person with the app gives a code (a wrong
 * one, or one used already, is refused; guesses are throttled), or a
 * recovery code (each once; the account page counts them); the sign-in is
 * then `mfa` and meets acr_values=mfa.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { CODE_FAILED, CODE_REUSED, RECOVERY_FAILED } from '../../src/as/interaction/second-factor.js'
import { STRONGER_SIGN_IN_TOTP } from '../../src/as/interaction/authorization-steps.js'
import { hashToken } from '../../src/store/hash.js'
import {
  ALICE_PASSWORD,
  authorizeUrl,
  authParams,
  Browser,
  CLIENT_SECRET,
  formWith,
  frontYaml,
  parseForms,
  pkce,
  startFront,
  type Front,
} from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'
import { codeAt } from '../helpers/totp-code.js'

const front: Front = await startFront(await frontYaml())
t.teardown(() => front.close())

async function page(b: Browser, path: string): Promise<{ status: number; html: string; headers: Headers; url: string }> {
  const url = `${front.url}/${path}`
  const res = await b.get(url)
  return { status: res.status, html: await res.text(), headers: res.headers, url }
}

/** Sign in at the account page with the password; the answer to the login POST. */
async function passwordAtAccount(b: Browser): Promise<Response> {
  const p = await page(b, 'account')
  return b.submit(formWith(p.html, p.url, 'password'), { username: 'alice', password: ALICE_PASSWORD })
}

/** The form of a page whose hidden `action` is `action`. */
function actionForm(p: { html: string; url: string }, action: string) {
  const form = parseForms(p.html, p.url).find((f) => f.fields.action === action)
  if (form === undefined) throw new Error(`no ${action} form`)
  return form
}

let secret = ''
let recoveryCodes: string[] = []

t.test('set up on the account page: QR code and key, a first code turns it on, recovery codes shown once', async (t) => {
  const b = new Browser()
  t.equal((await passwordAtAccount(b)).status, 303)
  let account = await page(b, 'account')
  t.match(account.html, 'You have not set up an authenticator app.')
  t.equal((await b.submit(actionForm(account, 'start'))).status, 303)

  account = await page(b, 'account')
  t.match(account.html, /<svg role="img" aria-label="QR code for your authenticator app" xmlns="http:\/\/www.w3.org\/2000\/svg"/)
  const csp = account.headers.get('content-security-policy') ?? ''
  t.notMatch(csp, /unsafe-inline/, 'the inline SVG needs no loosened CSP')
  t.notMatch(account.html, /<script(?! src="assets\/passkeys.js")|style=/, 'no inline script or style came with it')
  secret = (/<code class="secret" id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(account.html)?.[1] ?? '').replaceAll(' ', '')
  t.equal(secret.length, 32, 'a 160-bit key in base32')
  const stored = await front.store.totp.get('alice')
  t.equal(stored?.confirmedAt, null, 'not on before a code confirms it')

  const wrong = String((Number(codeAt(secret, front.clock.now())) + 1) % 1_000_000).padStart(6, '0')
  const refused = await b.submit(actionForm(account, 'confirm'), { code: wrong })
  t.equal(refused.status, 303)
  account = await page(b, new URL(refused.headers.get('location') ?? '', front.url).pathname.slice(1) + '?totp=wrong')
  t.match(account.html, 'That code is not right.')
  t.equal((await front.store.totp.get('alice'))?.confirmedAt, null)

  const on = await b.submit(actionForm(account, 'confirm'), { code: codeAt(secret, front.clock.now()) })
  t.equal(on.status, 200)
  const html = await on.text()
  recoveryCodes = [...html.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((m) => m[1] ?? '')
  t.equal(recoveryCodes.length, 10, 'ten recovery codes')
  t.equal(new Set(recoveryCodes).size, 10)
  const record = await front.store.totp.get('alice')
  t.type(record?.confirmedAt, 'number')
  t.equal(record?.recovery.length, 10)
  t.ok(
    record?.recovery.every((r) => r.hash.startsWith('scrypt$') && !recoveryCodes.some((c) => r.hash.includes(c))),
    'only hashes are kept',
  )
  account = await page(b, 'account')
  t.match(account.html, '10 of 10 recovery codes unused.')
  t.notMatch(account.html, recoveryCodes[0] ?? '-', 'never shown again')
  t.notMatch(account.html, /<svg/, 'nor the key')
})

t.test('after the password: a code, refused when wrong or used already; the sign-in is mfa', async (t) => {
  front.clock.advance(60_000)
  const b = new Browser()
  const afterPassword = await passwordAtAccount(b)
  t.equal(afterPassword.status, 303)
  t.equal(afterPassword.headers.get('location'), 'second-factor')
  const notYet = await page(b, 'account')
  t.match(notYet.html, 'name="password"', 'the password alone signs nobody in')

  let p = await page(b, 'second-factor')
  t.equal(p.status, 200)
  t.match(p.html, 'autocomplete="one-time-code"')
  const wrong = String((Number(codeAt(secret, front.clock.now())) + 7) % 1_000_000).padStart(6, '0')
  const refused = await b.submit(formWith(p.html, p.url, 'code'), { code: wrong })
  t.equal(refused.status, 400)
  t.match(await refused.text(), CODE_FAILED)

  const code = codeAt(secret, front.clock.now())
  const ok = await b.submit(formWith(p.html, p.url, 'code'), { code })
  t.equal(ok.status, 303)
  t.equal(ok.headers.get('location'), 'account')
  const sid = b.cookies.get('bw_session') ?? ''
  const session = await front.store.sessions.get(hashToken(sid))
  t.same(session?.amr, ['pwd', 'otp', 'mfa'])
  t.equal(session?.acr, 'mfa')
  t.equal(session?.pending, undefined)
  t.match((await page(b, 'account')).html, 'Signed in as')

  // Someone who saw that code types it in its window, after the password: refused.
  const other = new Browser()
  await passwordAtAccount(other)
  p = await page(other, 'second-factor')
  const again = await other.submit(formWith(p.html, p.url, 'code'), { code })
  t.equal(again.status, 400)
  t.match(await again.text(), CODE_REUSED)
})

t.test('a recovery code signs in once; the account page counts it', async (t) => {
  // A new window: each code typed in a browser that never completed a sign-in counts against alice (as/throttle.ts).
  front.clock.advance(5 * 60_000)
  const b = new Browser()
  await passwordAtAccount(b)
  const p = await page(b, 'second-factor')
  const ok = await b.submit(formWith(p.html, p.url, 'recovery_code'), { recovery_code: (recoveryCodes[3] ?? '').toUpperCase() })
  t.equal(ok.status, 303)
  const account = await page(b, 'account')
  t.match(account.html, '9 of 10 recovery codes unused; one was last used on')

  const b2 = new Browser()
  await passwordAtAccount(b2)
  const p2 = await page(b2, 'second-factor')
  const reused = await b2.submit(formWith(p2.html, p2.url, 'recovery_code'), { recovery_code: recoveryCodes[3] ?? '' })
  t.equal(reused.status, 400)
  t.match(await reused.text(), RECOVERY_FAILED)
})

t.test('guesses are throttled: after three wrong codes even the right one waits (429, Retry-After)', async (t) => {
  // A new window: the wrong codes above count against alice (per person, whatever the browser) in theirs.
  front.clock.advance(5 * 60_000)
  const b = new Browser()
  await passwordAtAccount(b)
  const p = await page(b, 'second-factor')
  for (let i = 0; i < 3; i++) {
    const r = await b.submit(formWith(p.html, p.url, 'code'), { code: '000000' === codeAt(secret, front.clock.now()) ? '111111' : '000000' })
    t.equal(r.status, 400)
  }
  const limited = await b.submit(formWith(p.html, p.url, 'code'), { code: codeAt(secret, front.clock.now()) })
  t.equal(limited.status, 429)
  t.ok(Number(limited.headers.get('retry-after')) > 0)
  t.notOk(b.cookies.has('bw_session') && (await front.store.sessions.get(hashToken(b.cookies.get('bw_session') ?? '')))?.pending === undefined, 'not signed in')
  front.clock.advance(6 * 60_000)
})

t.test('acr_values=mfa: a password session is asked again; password and code meet it; the tokens say mfa', async (t) => {
  front.clock.advance(60_000)
  const b = new Browser()
  await passwordAtAccount(b)
  const p = await page(b, 'second-factor')
  await b.submit(formWith(p.html, p.url, 'code'), { code: codeAt(secret, front.clock.now()) })
  const { verifier, challenge } = pkce()
  const url = authorizeUrl(
    front,
    authParams({ code_challenge: challenge, acr_values: 'mfa', client_id: 'first', redirect_uri: 'https://first.example.com/cb' }),
  )
  const res = await b.get(url)
  t.equal(res.status, 302, 'the mfa session meets it at once')
  const code = new URL(res.headers.get('location') ?? '').searchParams.get('code') ?? ''
  const basic = { authorization: `Basic ${Buffer.from(`first:${CLIENT_SECRET}`).toString('base64')}` }
  const tokens = await reply(
    postForm(`${front.url}/token`, { grant_type: 'authorization_code', code, redirect_uri: 'https://first.example.com/cb', code_verifier: verifier }, basic),
  )
  const id = decodeJwt(String(tokens.json?.id_token))
  t.same(id.amr, ['pwd', 'otp', 'mfa'])
  t.equal(id.acr, 'mfa')

  // A password-only session of the same person (made before the app was on, say) is asked for more.
  const weak = new Browser()
  const sid = 'A'.repeat(43)
  await front.store.sessions.put(
    hashToken(sid),
    { sub: 'alice', username: 'alice', authTime: Math.floor(front.clock.now() / 1000), amr: ['pwd'], acr: 'pwd', csrf: 'c'.repeat(43) },
    600,
  )
  weak.cookies.set('bw_session', sid)
  const asked = await weak.get(authorizeUrl(front, authParams({ acr_values: 'mfa' })))
  t.equal(asked.status, 200)
  t.match(await asked.text(), STRONGER_SIGN_IN_TOTP)
})
