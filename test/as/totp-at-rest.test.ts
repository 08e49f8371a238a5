/**
 * Authenticator-app secrets at rest (src/as/totp/secrets.ts): on Redis the
 * record holds the secret sealed (AES-256-GCM under
 * `mfa.totp_encryption_key`), never the secret itself; a sealed secret
 * copied onto another person opens nowhere and an instance with the wrong key
 * checks no code (the code page says so, 503, logged; never a 500 page); a
 * record written before sealing (the secret plain) still signs in and is
 * sealed at that use, as is one sealed by a previous key.
 */
import t from 'tap'
import * as OTPAuth from 'otpauth'
import { CODE_UNCHECKABLE } from '../../src/as/interaction/second-factor.js'
import { ManualClock } from '../../src/clock.js'
import { parseConfig } from '../../src/config/load.js'
import { RedisStore } from '../../src/store/redis.js'
import { hashToken } from '../../src/store/hash.js'
import { ALICE_PASSWORD, BOB_PASSWORD, Browser, formWith, frontYaml, parseForms } from '../helpers/as-front.js'
import { askRedis, startRedis } from '../helpers/redis.js'
import { serveRuntime, type ServedRuntime } from '../helpers/serve-runtime.js'
import { codeAt } from '../helpers/totp-code.js'

const KEY_A = 'totp-key-a-0123456789abcdefghijklmnopqrstuv'
const KEY_B = 'totp-key-b-0123456789abcdefghijklmnopqrstuv'
const BOB_SUB = 'user-0002'

const redis = await startRedis()
t.teardown(() => redis.stop())
// Redis judges the used-code TTLs by its own clock: the manual clocks start at real time.
const start = Date.now()

function mfaYaml(keys: string): Promise<string> {
  return frontYaml({ asExtra: `  mfa: { ${keys} }\n` })
}

async function instance(keys: string): Promise<ServedRuntime> {
  const served = await serveRuntime(await mfaYaml(keys), {
    clock: new ManualClock(start),
    store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
  })
  t.teardown(() => served.close())
  return served
}

const rawKey = (sub: string): string => `${redis.prefix}totp:{${encodeURIComponent(sub)}}`
const raw = (sub: string): Promise<string | null> => askRedis(redis.port, (c) => c.get(rawKey(sub)))

async function page(s: ServedRuntime, b: Browser, path: string): Promise<{ status: number; html: string; url: string }> {
  const url = `${s.url}/${path}`
  const res = await b.get(url)
  return { status: res.status, html: await res.text(), url }
}

/** The password at the account page; the answer to the login POST. */
async function password(s: ServedRuntime, b: Browser, username: string, pw: string): Promise<Response> {
  const p = await page(s, b, 'account')
  return b.submit(formWith(p.html, p.url, 'password'), { username, password: pw })
}

/** A fresh browser's sign-in with the password and then `code`; the answer to the code POST. */
async function signIn(s: ServedRuntime, username: string, pw: string, code: (now: number) => string): Promise<{ b: Browser; res: Response }> {
  const b = new Browser()
  const first = await password(s, b, username, pw)
  if (first.headers.get('location') !== 'second-factor') throw new Error(`no code asked after the password: ${first.status}`)
  const p = await page(s, b, 'second-factor')
  const res = await b.submit(formWith(p.html, p.url, 'code'), { code: code(s.clock.now()) })
  return { b, res }
}

/** Whether `b` holds a real (not pending) session. */
async function signedIn(s: ServedRuntime, b: Browser): Promise<boolean> {
  const sid = b.cookies.get('bw_session')
  if (sid === undefined) return false
  const session = await s.store.sessions.get(hashToken(sid))
  return session !== null && session.pending === undefined
}

function logged(s: ServedRuntime, event: string): Record<string, unknown>[] {
  return s.logs.filter((l) => l.event === event)
}

const a = await instance(`totp_encryption_key: "${KEY_A}"`)
let secret = ''

t.test('the store holds the secret sealed, never as is', async (t) => {
  const b = new Browser()
  t.equal((await password(a, b, 'alice', ALICE_PASSWORD)).status, 303)
  let account = await page(a, b, 'account')
  const start = parseForms(account.html, account.url).find((f) => f.fields.action === 'start')
  if (start === undefined) throw new Error('no set-up form')
  await b.submit(start)
  account = await page(a, b, 'account')
  secret = (/<code class="secret" id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(account.html)?.[1] ?? '').replaceAll(' ', '')
  t.equal(secret.length, 32, 'the page shows the key while it is set up')
  const pending = await raw('alice')
  t.notMatch(pending ?? '', secret, 'the raw Redis value does not hold it while being set up')

  const confirm = parseForms(account.html, account.url).find((f) => f.fields.action === 'confirm')
  if (confirm === undefined) throw new Error('no confirm form')
  t.equal((await b.submit(confirm, { code: codeAt(secret, a.clock.now()) })).status, 200, 'a first code turns it on')
  const stored = await raw('alice')
  t.ok(stored !== null)
  t.notMatch(stored ?? '', secret, 'nor once it is on')
  t.notMatch(stored ?? '', secret.toLowerCase())
  const record = JSON.parse(stored ?? '{}') as { secret: string; confirmedAt: number }
  t.match(record.secret, /^sealed\.v1\.[A-Za-z0-9_-]{12}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/, 'sealed: key id, nonce, ciphertext and tag')
  t.type(record.confirmedAt, 'number')

  a.clock.advance(60_000)
  const { b: next, res } = await signIn(a, 'alice', ALICE_PASSWORD, (now) => codeAt(secret, now))
  t.equal(res.status, 303, 'a code from the app signs in')
  t.ok(await signedIn(a, next))
})

t.test("a sealed secret moved onto another person's record opens nowhere", async (t) => {
  const alices = await raw('alice')
  await askRedis(redis.port, (c) => c.set(rawKey(BOB_SUB), alices ?? ''))
  a.clock.advance(60_000)
  const { b, res } = await signIn(a, 'bob', BOB_PASSWORD, (now) => codeAt(secret, now))
  t.equal(res.status, 503, 'the code page says the code cannot be checked')
  const html = await res.text()
  t.match(html, CODE_UNCHECKABLE)
  t.match(html, 'name="recovery_code"', 'a recovery code is still offered')
  t.notOk(await signedIn(a, b), 'bob is not signed in with alice’s code')
  t.match(logged(a, 'totp_secret_unreadable').at(-1), { sub: BOB_SUB, reason: 'not_authentic' }, 'logged, with why')
  await askRedis(redis.port, (c) => c.del(rawKey(BOB_SUB)))
})

t.test('an instance with another key refuses the code, logged, not a 500 page', async (t) => {
  const wrong = await instance(`totp_encryption_key: "${KEY_B}"`)
  wrong.clock.advance(180_000)
  const { b, res } = await signIn(wrong, 'alice', ALICE_PASSWORD, (now) => codeAt(secret, now))
  t.equal(res.status, 503)
  t.match(await res.text(), CODE_UNCHECKABLE)
  t.notOk(await signedIn(wrong, b), 'not signed in')
  t.match(logged(wrong, 'totp_secret_unreadable').at(-1), { sub: 'alice', reason: 'unknown_key' })
  t.equal(wrong.logs.filter((l) => l.level === 50 && l.event !== 'totp_secret_unreadable').length, 0, 'no other error logged')
})

t.test('rotation: the previous key opens, the next use seals with the new key', async (t) => {
  const before = JSON.parse((await raw('alice')) ?? '{}') as { secret: string }
  const rotated = await instance(`totp_encryption_key: "${KEY_B}", totp_previous_keys: ["${KEY_A}"]`)
  rotated.clock.advance(240_000)
  const { b, res } = await signIn(rotated, 'alice', ALICE_PASSWORD, (now) => codeAt(secret, now))
  t.equal(res.status, 303, 'signed in through the previous key')
  t.ok(await signedIn(rotated, b))
  const after = JSON.parse((await raw('alice')) ?? '{}') as { secret: string }
  t.not(after.secret.split('.')[2], before.secret.split('.')[2], 'sealed again, under the new key id')
  t.equal(logged(rotated, 'totp_secret_resealed').length, 1)
  // Only the new key now: what the previous one sealed is gone from the store.
  const onlyNew = await instance(`totp_encryption_key: "${KEY_B}"`)
  onlyNew.clock.advance(300_000)
  t.equal((await signIn(onlyNew, 'alice', ALICE_PASSWORD, (now) => codeAt(secret, now))).res.status, 303)
})

t.test('a record stored before sealing (the secret plain) signs in and is sealed at that use', async (t) => {
  const plain = new OTPAuth.Secret({ size: 20 }).base32
  const now = Math.floor(a.clock.now() / 1000)
  await a.store.totp.put(BOB_SUB, { secret: plain, createdAt: now, confirmedAt: now, recovery: [] })
  a.clock.advance(360_000)
  const { b, res } = await signIn(a, 'bob', BOB_PASSWORD, (at) => codeAt(plain, at))
  t.equal(res.status, 303)
  t.ok(await signedIn(a, b))
  t.equal(logged(a, 'totp_secret_plain').length >= 1, true, 'the plain record is logged')
  const stored = await raw(BOB_SUB)
  t.notMatch(stored ?? '', plain, 'and no longer plain in the store')
  t.match((JSON.parse(stored ?? '{}') as { secret: string }).secret, /^sealed\.v1\./)
  a.clock.advance(60_000)
  t.equal((await signIn(a, 'bob', BOB_PASSWORD, (at) => codeAt(plain, at))).res.status, 303, 'the sealed record signs in the same')
})

t.test('without a configured key, the secret is sealed with a key derived from the signing key', async (t) => {
  const derived = await serveRuntime(await frontYaml(), { clock: new ManualClock(start) })
  t.teardown(() => derived.close())
  const b = new Browser()
  await password(derived, b, 'alice', ALICE_PASSWORD)
  const account = await page(derived, b, 'account')
  const startForm = parseForms(account.html, account.url).find((f) => f.fields.action === 'start')
  if (startForm === undefined) throw new Error('no set-up form')
  await b.submit(startForm)
  const stored = await derived.store.totp.get('alice')
  t.match(stored?.secret, /^sealed\.v1\./)
  const shown = (/<code class="secret" id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec((await page(derived, b, 'account')).html)?.[1] ?? '').replaceAll(' ', '')
  t.equal(shown.length, 32, 'and opened again for the set-up page')
})

t.test('the keys are checked at load', async (t) => {
  const bad = async (keys: string): Promise<string> => {
    try {
      parseConfig((await mfaYaml(keys)).replace('${PUBLIC_URL}', 'http://127.0.0.1:8080'), 'gw.yaml', {})
      return ''
    } catch (err) {
      return (err as Error).message
    }
  }
  t.match(await bad('totp_encryption_key: short'), /gw\.yaml:\d+:\d+.*at least 32 characters/s)
  t.equal(await bad(`totp_encryption_key: "${KEY_A}", totp_previous_keys: ["${KEY_B}"]`), '')
  t.match(await bad(`totp_previous_keys: ["${KEY_A}"]`), /give the key that seals now as `totp_encryption_key`/)
})
