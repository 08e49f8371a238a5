/**
 * A device approval (RFC 8628 3.3) meets the sign-in policy of a code flow
 * (src/as/interaction/device-mfa.ts): with the device client's `require_mfa`
 * or `mfa.required`, a one-factor session is asked to sign in again (a person
 * with an authenticator app) or to set one up (a person without), and an
 * approval POSTed with it approves nothing; the tokens the device then gets
 * say how the person signed in (`auth_time`, `amr`, `acr`). Without the
 * policy a password is enough, as before.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import * as OTPAuth from 'otpauth'
import { MFA_SETUP } from '../../src/as/interaction/account.js'
import { STRONGER_SIGN_IN_TOTP } from '../../src/as/interaction/authorization-steps.js'
import { DEVICE_CODE_GRANT } from '../../src/as/grants/device-code.js'
import { hashToken } from '../../src/store/hash.js'
import { ALICE_PASSWORD, BOB_PASSWORD, Browser, formWith, frontYaml, parseForms, startFront, type Front } from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'
import { codeAt } from '../helpers/totp-code.js'

const ADMIN_TV = `    - client_id: tv-admin
      name: Admin Console TV
      type: public
      grant_types: [${DEVICE_CODE_GRANT}]
      scopes: [openid, orders:read]
      require_mfa: true
`

const front = await startFront(await frontYaml({ clientsExtra: ADMIN_TV }))
t.teardown(() => front.close())

/** What /device_authorization answers `clientId`. */
async function startDevice(f: Front, clientId: string): Promise<{ deviceCode: string; userCode: string }> {
  const r = await reply(postForm(`${f.url}/device_authorization`, { client_id: clientId, scope: 'openid orders:read' }))
  if (r.status !== 200) throw new Error(`device_authorization: ${r.status} ${r.text}`)
  return { deviceCode: String(r.json?.device_code), userCode: String(r.json?.user_code) }
}

async function poll(f: Front, clientId: string, deviceCode: string): Promise<{ status: number; json: Record<string, unknown> | undefined }> {
  const r = await reply(postForm(`${f.url}/token`, { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode, client_id: clientId }))
  return { status: r.status, json: r.json as Record<string, unknown> | undefined }
}

async function page(f: Front, b: Browser, path: string): Promise<{ status: number; html: string; url: string; location: string | null }> {
  const url = new URL(path, `${f.url}/`).toString()
  const res = await b.get(url)
  return { status: res.status, html: await res.text(), url, location: res.headers.get('location') }
}

/** A browser holding a password-only session of `sub` (one made before the policy, say). */
async function weakSession(f: Front, sub: string, username: string): Promise<Browser> {
  const b = new Browser()
  const sid = `${username.charAt(0).toUpperCase()}`.repeat(43)
  const now = Math.floor(f.clock.now() / 1000)
  await f.store.sessions.put(hashToken(sid), { sub, username, authTime: now, amr: ['pwd'], acr: 'pwd', csrf: 'c'.repeat(43) }, 600)
  b.cookies.set('bw_session', sid)
  return b
}

/** Press Allow on the device confirmation `p`. */
function allow(b: Browser, p: { html: string; url: string }): Promise<Response> {
  return b.submit(formWith(p.html, p.url, 'decision'), { decision: 'allow' })
}

t.test('required and present: a one-factor session signs in again with the code; the tokens say mfa', async (t) => {
  const secret = new OTPAuth.Secret({ size: 20 }).base32
  const now = Math.floor(front.clock.now() / 1000)
  await front.store.totp.put('alice', { secret: front.as.totpSecrets.seal('alice', secret), createdAt: now, confirmedAt: now, recovery: [] })
  const { deviceCode, userCode } = await startDevice(front, 'tv-admin')
  const b = await weakSession(front, 'alice', 'alice')

  const asked = await page(front, b, `device?user_code=${userCode}`)
  t.equal(asked.status, 200)
  t.match(asked.html, STRONGER_SIGN_IN_TOTP, 'the login page asks for the second factor')
  t.notMatch(asked.html, 'name="decision"', 'no confirmation offered')

  // Allow POSTed with the weak session (a form from before) approves nothing.
  const forged = await b.submit(
    { action: `${front.url}/device`, method: 'POST', fields: { csrf: 'c'.repeat(43), user_code: userCode }, buttons: [] },
    { decision: 'allow' },
  )
  t.equal(forged.status, 400)
  t.match(await forged.text(), STRONGER_SIGN_IN_TOTP)
  t.equal((await poll(front, 'tv-admin', deviceCode)).json?.error, 'authorization_pending', 'still pending')

  const afterPassword = await b.submit(formWith(asked.html, asked.url, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(afterPassword.headers.get('location'), 'second-factor')
  const codePage = await page(front, b, 'second-factor')
  const signedIn = await b.submit(formWith(codePage.html, codePage.url, 'code'), { code: codeAt(secret, front.clock.now()) })
  t.equal(signedIn.status, 303)
  t.match(signedIn.headers.get('location') ?? '', /^device\?user_code=/, 'back to the device')
  const confirm = await page(front, b, signedIn.headers.get('location') ?? '')
  t.equal(confirm.status, 200)
  t.equal((await allow(b, confirm)).status, 200)

  front.clock.advance(10_000)
  const tokens = await poll(front, 'tv-admin', deviceCode)
  t.equal(tokens.status, 200)
  const access = decodeJwt(String(tokens.json?.access_token))
  const id = decodeJwt(String(tokens.json?.id_token))
  for (const claims of [access, id]) {
    t.same(claims.amr, ['pwd', 'otp', 'mfa'])
    t.equal(claims.acr, 'mfa')
    t.type(claims.auth_time, 'number')
  }
})

t.test('required and missing: the person sets up an authenticator app and comes back to the device', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: '  mfa: { required: true }\n' }))
  t.teardown(() => f.close())
  const { deviceCode, userCode } = await startDevice(f, 'tv')
  const b = await weakSession(f, 'user-0002', 'bob')

  const sent = await page(f, b, `device?user_code=${userCode}`)
  t.equal(sent.status, 302)
  t.equal(sent.location, `account?mfa=setup&user_code=${encodeURIComponent(userCode)}#totp`)
  let account = await page(f, b, sent.location ?? '')
  t.match(account.html, MFA_SETUP)
  const start = parseForms(account.html, account.url).find((form) => form.fields.action === 'start')
  t.equal(start?.fields.user_code, userCode, 'the set-up carries the device code')
  if (start === undefined) throw new Error('no set-up form')
  const started = await b.submit(start)
  t.equal(started.headers.get('location'), `account?mfa=setup&user_code=${encodeURIComponent(userCode)}#totp`)

  account = await page(f, b, started.headers.get('location') ?? '')
  const secret = (/<code class="secret" id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(account.html)?.[1] ?? '').replaceAll(' ', '')
  const confirmForm = parseForms(account.html, account.url).find((form) => form.fields.action === 'confirm')
  if (confirmForm === undefined) throw new Error('no confirm form')
  const on = await b.submit(confirmForm, { code: codeAt(secret, f.clock.now()) })
  t.equal(on.status, 200)
  const recoveryPage = await on.text()
  const next = /<a href="(device\?user_code=[^"]+)"[^>]*>Continue to connect your device<\/a>/.exec(recoveryPage)?.[1]
  t.equal(next, `device?user_code=${encodeURIComponent(userCode)}`, 'the recovery codes page leads back to the device')

  // Turning the app on does not raise the session (issue #38 item 7): the device asks for a sign-in that uses it.
  t.equal((await f.store.sessions.get(hashToken(b.cookies.get('bw_session') ?? '')))?.acr, 'pwd', 'the session is still one factor')
  const again = await page(f, b, next ?? '')
  t.match(again.html, STRONGER_SIGN_IN_TOTP, 'sign in again, with the new app')
  f.clock.advance(30_000)
  const password = await b.submit(formWith(again.html, again.url, 'password'), { username: 'bob', password: BOB_PASSWORD })
  t.equal(password.headers.get('location'), 'second-factor')
  const codePage = await page(f, b, 'second-factor')
  const signedIn = await b.submit(formWith(codePage.html, codePage.url, 'code'), { code: codeAt(secret, f.clock.now()) })
  t.equal(signedIn.status, 303)
  const confirm = await page(f, b, signedIn.headers.get('location') ?? '')
  t.equal(confirm.status, 200)
  t.match(confirm.html, 'name="decision"', 'now the confirmation')
  t.equal((await allow(b, confirm)).status, 200)
  const tokens = await poll(f, 'tv', deviceCode)
  t.equal(tokens.status, 200)
  const access = decodeJwt(String(tokens.json?.access_token))
  t.same(access.amr, ['pwd', 'otp', 'mfa'])
  t.equal(access.acr, 'mfa')
  t.equal(access.sub, 'user-0002')
})

t.test('not required: a password session approves, and the tokens say pwd', async (t) => {
  const { deviceCode, userCode } = await startDevice(front, 'tv')
  const b = await weakSession(front, 'user-0002', 'bob')
  const confirm = await page(front, b, `device?user_code=${userCode}`)
  t.equal(confirm.status, 200)
  t.equal((await allow(b, confirm)).status, 200)
  front.clock.advance(10_000)
  const tokens = await poll(front, 'tv', deviceCode)
  t.equal(tokens.status, 200)
  const access = decodeJwt(String(tokens.json?.access_token))
  t.same(access.amr, ['pwd'])
  t.equal(access.acr, 'pwd')
  t.type(access.auth_time, 'number')
})
