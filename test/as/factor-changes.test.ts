/**
 * Adding, replacing and removing a way of signing in (issue #38 item 7): the
 * password alone used to be enough. A stranger with alice's password (her
 * second factor a passkey) signed in with it, added their own authenticator
 * app at `POST /totp`, which rewrote the session to `acr: mfa`, or added
 * their own passkey, which then signed in alone with `acr: phr`. Now a factor
 * changes only after a recent sign-in with the person's strongest factor
 * (`session.factor_change_max_age`), adding one never raises the session,
 * `/totp` honours `mfa.methods`, and the account page and the log tell of a
 * factor added. The passkey ceremonies themselves run in Chromium
 * (test/browser/factor-changes.test.ts).
 */
import t from 'tap'
import * as OTPAuth from 'otpauth'
import { CONFIRM_NEEDED } from '../../src/as/interaction/factors.js'
import { hashToken } from '../../src/store/hash.js'
import { randomToken } from '../../src/crypto/random.js'
import type { CredentialChange } from '../../src/as/credential-changes.js'
import type { PasskeyRecord, SessionRecord } from '../../src/store/types.js'
import {
  ALICE_PASSWORD,
  authorizeUrl,
  authParams,
  BOB_PASSWORD,
  Browser,
  formWith,
  frontYaml,
  parseForms,
  startFront,
  type Front,
} from '../helpers/as-front.js'

const WEBAUTHN = '  webauthn: { rp_id: localhost, origins: ["http://localhost:8080"] }\n'
const front: Front = await startFront(await frontYaml({ asExtra: WEBAUTHN }))
t.teardown(() => front.close())

function passkeyOf(sub: string, credentialId: string): PasskeyRecord {
  return {
    credentialId,
    sub,
    username: sub,
    name: `${sub}'s key`,
    publicKey: 'AA',
    counter: 7,
    transports: ['internal'],
    deviceType: 'singleDevice',
    backedUp: false,
    createdAt: Math.floor(front.clock.now() / 1000) - 90 * 86_400,
    lastUsedAt: null,
  }
}
await front.store.passkeys.add(passkeyOf('alice', 'alice-key'))

/** A password sign-in through a client that asks for nothing more (`first`: no consent, no acr): the session it leaves. */
async function passwordSession(f: Front, username: string, password: string): Promise<Browser> {
  const b = new Browser()
  const url = authorizeUrl(f, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb' }))
  const res = await b.submit(formWith(await (await b.get(url)).text(), url, 'password'), { username, password })
  if (res.status !== 303 || !(res.headers.get('location') ?? '').startsWith('https://first.example.com/cb')) throw new Error(`sign-in: ${res.status}`)
  return b
}

/** A browser holding a session of `username` signed in with `amr`/`acr` at `authTime` (what a passkey sign-in leaves, say). */
async function sessionOf(f: Front, username: string, sub: string, strength: Pick<SessionRecord, 'amr' | 'acr'>, authTime: number): Promise<Browser> {
  const b = new Browser()
  const sid = Buffer.from(`${username}-${authTime}-${String(strength.acr)}`)
    .toString('base64url')
    .padEnd(43, 'x')
    .slice(0, 43)
  await f.store.sessions.put(hashToken(sid), { sub, username, authTime, csrf: 'c'.repeat(43), ...strength }, 3600)
  b.cookies.set('bw_session', sid)
  return b
}

const session = async (f: Front, b: Browser): Promise<SessionRecord | null> => f.store.sessions.get(hashToken(b.cookies.get('bw_session') ?? ''))

async function account(f: Front, b: Browser, query = ''): Promise<{ html: string; csrf: string; url: string }> {
  const url = `${f.url}/account${query}`
  const html = await (await b.get(url)).text()
  return { html, csrf: formWith(html, url, 'decision').fields.csrf ?? '', url }
}

function post(f: Front, b: Browser, path: string, fields: Record<string, string>): Promise<Response> {
  return b.submit({ action: `${f.url}/${path}`, method: 'POST', fields, buttons: [] })
}

const now = (): number => Math.floor(front.clock.now() / 1000)

t.test('the attack: a password-only session of a passkey owner adds no authenticator app and no passkey', async (t) => {
  const b = await passwordSession(front, 'alice', ALICE_PASSWORD)
  const before = await session(front, b)
  t.equal(before?.acr, 'pwd', 'the stranger holds a one-factor session')

  const page = await account(front, b)
  t.match(page.html, 'Confirm it’s you')
  t.match(page.html, 'sign in again with your passkey first')
  t.notOk(
    parseForms(page.html, page.url).some((f) => ['start', 'add', 'remove', 'confirm'].includes(f.fields.action ?? '')),
    'no form that changes a factor',
  )

  const start = await post(front, b, 'totp', { csrf: page.csrf, action: 'start' })
  t.equal(start.status, 303)
  t.equal(start.headers.get('location'), CONFIRM_NEEDED)
  t.equal(await front.store.totp.get('alice'), null, 'no authenticator app was set up')
  const confirm = await post(front, b, 'totp', { csrf: page.csrf, action: 'confirm', code: '123456' })
  t.equal(confirm.headers.get('location'), CONFIRM_NEEDED)

  const options = await fetch(`${front.url}/passkey-options`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `bw_session=${b.cookies.get('bw_session')}` },
    body: new URLSearchParams({ purpose: 'register', csrf: page.csrf }),
  })
  t.equal(options.status, 403, 'no registration challenge for it')
  const add = await post(front, b, 'passkeys', { csrf: page.csrf, action: 'add', name: 'mine', credential: '{}' })
  t.equal(add.headers.get('location'), CONFIRM_NEEDED)
  const remove = await post(front, b, 'passkeys', { csrf: page.csrf, action: 'remove', credential_id: 'alice-key' })
  t.equal(remove.headers.get('location'), CONFIRM_NEEDED)
  t.same(
    (await front.store.passkeys.list('alice')).map((p) => p.credentialId),
    ['alice-key'],
    'her passkeys are as they were',
  )
  t.same(await session(front, b), before, 'the session is as it was: still pwd')
  t.ok(front.logs.some((l) => l.event === 'factor_change_refused' && l.need === 'passkey'))
  const refused = await account(front, b, '?confirm=needed')
  t.match(refused.html, 'Nothing was changed.')
})

t.test('her password at the account page asks for her passkey next', async (t) => {
  const b = new Browser()
  const url = `${front.url}/account`
  const res = await b.submit(formWith(await (await b.get(url)).text(), url, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(res.status, 303)
  t.equal(res.headers.get('location'), 'second-factor')
  t.match(await (await b.get(`${front.url}/second-factor`)).text(), '<h1>Use your passkey</h1>')
  t.notMatch(await (await b.get(url)).text(), 'Your account', 'the password alone opens no account page')
})

t.test('proved with her passkey: she adds an authenticator app; her session keeps its acr', async (t) => {
  const b = await sessionOf(front, 'alice', 'alice', { amr: ['hwk', 'user', 'mfa'], acr: 'phr' }, now())
  let page = await account(front, b)
  t.notMatch(page.html, 'Confirm it’s you')
  const started = await post(front, b, 'totp', { csrf: page.csrf, action: 'start' })
  t.equal(started.headers.get('location'), 'account?#totp')
  page = await account(front, b)
  const secret = (/id="totp-secret">([A-Z2-7 ]+)</.exec(page.html)?.[1] ?? '').replaceAll(' ', '')
  const code = OTPAuth.TOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), timestamp: front.clock.now() })
  const on = await post(front, b, 'totp', { csrf: page.csrf, action: 'confirm', code })
  t.equal(on.status, 200, 'the recovery codes')
  t.type((await front.store.totp.get('alice'))?.confirmedAt, 'number')
  t.equal((await session(front, b))?.acr, 'phr', 'unchanged')
  t.ok(front.logs.some((l) => l.event === 'factor_added' && l.factor === 'totp' && l.sub === 'alice' && l.level === 30))
  t.notOk(
    front.logs.some((l) => JSON.stringify(l).includes(secret)),
    'the secret is in no log line',
  )
  page = await account(front, b)
  t.match(page.html, /An authenticator app was added to your account on <time/, 'the account page tells of it')
  t.match(page.html, 'If that was not you, remove it and change your password.')

  // Past session.factor_change_max_age (10 minutes) the same session changes nothing.
  front.clock.advance(11 * 60_000)
  page = await account(front, b)
  t.match(page.html, 'Confirm it’s you')
  t.equal((await post(front, b, 'totp', { csrf: page.csrf, action: 'remove' })).headers.get('location'), CONFIRM_NEEDED)
  t.type((await front.store.totp.get('alice'))?.confirmedAt, 'number', 'the app is still on')
  await front.store.totp.delete('alice')
})

t.test('a person with an authenticator app only: a password-and-code sign-in may add a passkey; a password session may not', async (t) => {
  const secret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'
  await front.store.totp.put('user-0002', { secret: front.as.totpSecrets.seal('user-0002', secret), createdAt: now(), confirmedAt: now(), recovery: [] })
  const weak = await sessionOf(front, 'bob', 'user-0002', { amr: ['pwd'], acr: 'pwd' }, now())
  const weakPage = await account(front, weak)
  t.match(weakPage.html, 'sign in again with your password and a code from your authenticator app first')
  t.equal((await post(front, weak, 'totp', { csrf: weakPage.csrf, action: 'remove' })).headers.get('location'), CONFIRM_NEEDED)
  t.equal((await post(front, weak, 'passkeys', { csrf: weakPage.csrf, action: 'add', credential: '{}' })).headers.get('location'), CONFIRM_NEEDED)

  const strong = await sessionOf(front, 'bob', 'user-0002', { amr: ['pwd', 'otp', 'mfa'], acr: 'mfa' }, now())
  const page = await account(front, strong)
  const add = await post(front, strong, 'passkeys', { csrf: page.csrf, action: 'add', credential: '{}' })
  t.equal(add.headers.get('location'), 'account?passkey=failed', 'past the gate (this made-up credential is then refused)')
  const removed = await post(front, strong, 'totp', { csrf: page.csrf, action: 'remove' })
  t.equal(removed.headers.get('location'), 'account?totp=off')
  t.equal(await front.store.totp.get('user-0002'), null)
})

t.test('a person with no factor but the password sets up the first one with a fresh password sign-in; it does not raise the session', async (t) => {
  const b = await passwordSession(front, 'bob', BOB_PASSWORD)
  let page = await account(front, b)
  t.notMatch(page.html, 'Confirm it’s you')
  t.equal((await post(front, b, 'totp', { csrf: page.csrf, action: 'start' })).status, 303)
  page = await account(front, b)
  const secret = (/id="totp-secret">([A-Z2-7 ]+)</.exec(page.html)?.[1] ?? '').replaceAll(' ', '')
  const code = OTPAuth.TOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), timestamp: front.clock.now() })
  t.equal((await post(front, b, 'totp', { csrf: page.csrf, action: 'confirm', code })).status, 200)
  const s = await session(front, b)
  t.same(s?.amr, ['pwd'], 'amr unchanged')
  t.equal(s?.acr, 'pwd', 'acr unchanged: the next sign-in with a code is mfa')
  // A stale password-only session of such a person changes nothing either.
  const stale = await sessionOf(front, 'alice', 'alice', { amr: ['pwd'], acr: 'pwd' }, now() - 3600)
  await front.store.passkeys.remove('alice', 'alice-key')
  const stalePage = await account(front, stale)
  t.match(stalePage.html, 'sign in again with your password first')
  t.equal((await post(front, stale, 'totp', { csrf: stalePage.csrf, action: 'start' })).headers.get('location'), CONFIRM_NEEDED)
  t.equal(await front.store.totp.get('alice'), null)
  await front.store.passkeys.add(passkeyOf('alice', 'alice-key'))
  await front.store.totp.delete('user-0002')
})

t.test('mfa.methods without totp: no set-up on the account page, /totp refuses to start one', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: `${WEBAUTHN}  mfa: { methods: [passkey] }\n` }))
  t.teardown(() => f.close())
  const b = await passwordSession(f, 'bob', BOB_PASSWORD)
  const page = await account(f, b)
  t.notMatch(page.html, 'Authenticator app')
  const start = await post(f, b, 'totp', { csrf: page.csrf, action: 'start' })
  t.equal(start.status, 400)
  t.equal(await f.store.totp.get('user-0002'), null)
})

t.test('each factor change is told once to the credential-change hook (the Shared Signals transmitter listens to it)', async (t) => {
  const heard: CredentialChange[] = []
  const off = front.as.credentialChanges.on((c) => {
    heard.push(c)
  })
  t.teardown(off)
  // An authenticator app turned on by bob's fresh password sign-in, then off by his password-and-code session.
  // (Earlier tests left him one, and used this time step's code: start from none, a step later.)
  await front.store.totp.delete('user-0002')
  front.clock.advance(60_000)
  const b = await passwordSession(front, 'bob', BOB_PASSWORD)
  let page = await account(front, b)
  await post(front, b, 'totp', { csrf: page.csrf, action: 'start' })
  page = await account(front, b)
  const secret = (/id="totp-secret">([A-Z2-7 ]+)</.exec(page.html)?.[1] ?? '').replaceAll(' ', '')
  const code = OTPAuth.TOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), timestamp: front.clock.now() })
  t.equal((await post(front, b, 'totp', { csrf: page.csrf, action: 'confirm', code })).status, 200)
  t.same(heard, [{ sub: 'user-0002', credentialType: 'app', changeType: 'create' }], 'turned on: told once')
  const strong = await sessionOf(front, 'bob', 'user-0002', { amr: ['pwd', 'otp', 'mfa'], acr: 'mfa' }, now())
  page = await account(front, strong)
  t.equal((await post(front, strong, 'totp', { csrf: page.csrf, action: 'remove' })).headers.get('location'), 'account?totp=off')
  t.same(heard.slice(1), [{ sub: 'user-0002', credentialType: 'app', changeType: 'delete' }], 'turned off: told once')

  // A passkey removed by alice's passkey session: its kind (from its transports) and name.
  await front.store.passkeys.add({ ...passkeyOf('alice', 'alice-usb'), transports: ['usb'], name: 'Desk key' })
  const alice = await sessionOf(front, 'alice', 'alice', { amr: ['hwk', 'user', 'mfa'], acr: 'phr' }, now())
  page = await account(front, alice)
  t.equal(
    (await post(front, alice, 'passkeys', { csrf: page.csrf, action: 'remove', credential_id: 'alice-usb' })).headers.get('location'),
    'account?passkey=removed',
  )
  t.same(heard.slice(2), [{ sub: 'alice', credentialType: 'fido2-roaming', changeType: 'delete', friendlyName: 'Desk key' }], 'removed: told once')
  // A refused change tells nothing.
  await post(front, alice, 'passkeys', { csrf: page.csrf, action: 'remove', credential_id: 'alice-usb' })
  t.equal(heard.length, 3, 'removing it again (refused) told nothing')
})

t.test('a password set through an admin’s password link is told to the credential-change hook once', async (t) => {
  const heard: CredentialChange[] = []
  const off = front.as.credentialChanges.on((c) => {
    heard.push(c)
  })
  t.teardown(off)
  const at = now()
  await front.store.people.create({
    username: 'dora',
    sub: 'dora-sub',
    claims: {},
    passwordHash: null,
    disabled: false,
    createdAt: at,
    updatedAt: at,
    version: 1,
  })
  const token = randomToken()
  await front.store.people.putPasswordLink(hashToken(token), { username: 'dora', expiresAtMs: front.clock.now() + 3_600_000 })
  const b = new Browser()
  const url = `${front.url}/set-password?token=${token}`
  const html = await (await b.get(url)).text()
  const csrf = formWith(html, url, 'token').fields.csrf ?? ''
  const set = await post(front, b, 'set-password', { csrf, token, password: 'a-long-new-password-1', confirm: 'a-long-new-password-1' })
  t.equal(set.status, 200, 'the password is set')
  t.same(heard, [{ sub: 'dora-sub', credentialType: 'password', changeType: 'create' }], 'a first password: credential-change create, told once')
  const again = await post(front, b, 'set-password', { csrf, token, password: 'another-long-password-2', confirm: 'another-long-password-2' })
  t.equal(again.status, 410, 'the link is used up')
  t.equal(heard.length, 1, 'a refused post tells nothing')
})
