import t from 'tap'
import { epochSeconds } from '../../src/clock.js'
import { hashToken } from '../../src/store/hash.js'
import type { DeviceRecord } from '../../src/store/types.js'
import {
  ALICE_PASSWORD,
  Browser,
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
 * The device verification page (RFC 8628 3.3): code entry (forgiving input),
 * login, the confirmation showing the code, approve/deny into the store, and
 * the limits on wrong codes (RFC 8628 5.1). Device requests are created the
 * way /device_authorization creates them: store.putDevice.
 */

const yaml = await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' })
const front = await startFront(yaml)
t.teardown(() => front.close())

let counter = 0
/** A pending device request for `tv`; returns its normalized user code. */
async function pendingDevice(f: Front = front, userCode?: string): Promise<string> {
  counter += 1
  const letters = 'BCDFGHJKLMNPQRSTVWXZ'
  const digits = [3, 2, 1, 0].map((i) => letters[Math.floor(counter / 20 ** i) % 20] ?? 'B').join('')
  const code = userCode ?? `WXYZ${digits}`
  const record: DeviceRecord = {
    clientId: 'tv',
    userCode: code,
    scope: 'openid orders:read',
    status: 'pending',
    sub: null,
    authTime: null,
    expiresAt: epochSeconds(f.clock) + 600,
    intervalSec: 5,
    lastPollMs: 0,
  }
  if (!(await f.store.devices.put(hashToken(`device-code-${counter}`), record))) throw new Error('user code in use')
  return code
}

const pretty = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`

/** The entry page's form and its pre-session cookie. */
async function entry(f: Front = front): Promise<{ form: ReturnType<typeof formWith>; cookie: string }> {
  const res = await get(`${f.url}/device`)
  const c = setCookies(res.headers).get('bw_csrf')
  return { form: formWith(res.text, `${f.url}/device`, 'user_code'), cookie: `bw_csrf=${c?.value ?? ''}` }
}

async function typeCode(typed: string, ip = '192.0.2.1', f: Front = front): Promise<{ status: number; headers: Headers; text: string }> {
  const { form, cookie } = await entry(f)
  return reply(postForm(form.action, { ...form.fields, user_code: typed }, { cookie, origin: f.issuer, 'x-forwarded-for': ip }))
}

/** A browser signed in as alice (through a skip_consent client). */
async function signedIn(f: Front = front): Promise<Browser> {
  const b = new Browser()
  await authorizeAs(b, authorizeUrl(f, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })))
  return b
}

t.test('the entry page', async (t) => {
  const res = await get(`${front.url}/device`)
  t.equal(res.status, 200)
  t.match(res.text, /Enter the code shown on your device/)
  t.match(res.text, /<label for="user_code">Code<\/label>/)
  const form = formWith(res.text, `${front.url}/device`, 'user_code')
  t.equal(form.method, 'POST')
  t.match(form.fields.csrf, /^[A-Za-z0-9_-]{43}$/)
  t.equal(res.headers.get('x-frame-options'), 'DENY')
})

t.test('code entry is forgiving: case, dash and spaces do not matter', async (t) => {
  const code = await pendingDevice()
  const variants = [
    pretty(code),
    code,
    code.toLowerCase(),
    pretty(code).toLowerCase(),
    ` ${code.slice(0, 2)} ${code.slice(2, 6)}  ${code.slice(6)} `,
    `${code.slice(0, 4)}--${code.slice(4)}`,
  ]
  for (const typed of variants) {
    const res = await typeCode(typed)
    t.equal(res.status, 303, JSON.stringify(typed))
    t.equal(res.headers.get('location'), `device?user_code=${pretty(code)}`)
  }
  const viaLink = await get(`${front.url}/device?user_code=${code.toLowerCase()}`)
  t.equal(viaLink.status, 200, 'verification_uri_complete (any case) opens the login')
  t.match(viaLink.text, /name="password"/)
  t.match(viaLink.text, new RegExp(`code <span class="client">${pretty(code)}</span>`), 'the code is shown')
  t.match(viaLink.text, new RegExp(`name="user_code" value="${pretty(code)}"`))
})

t.test('approve: the store records approved with the user', async (t) => {
  const code = await pendingDevice()
  const b = new Browser()
  const url = `${front.url}/device?user_code=${pretty(code)}`
  const loginPage = await b.get(url)
  const loggedIn = await b.submit(formWith(await loginPage.text(), url, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(loggedIn.status, 303, 'the same login as /authorize')
  t.equal(loggedIn.headers.get('location'), `device?user_code=${pretty(code)}`)
  const confirm = await b.get(url)
  const html = await confirm.text()
  t.equal(confirm.status, 200)
  t.match(html, /Check that this code matches the one shown on your device/)
  t.match(html, new RegExp(`<span class="user-code" aria-label="Device code">${pretty(code)}</span>`))
  t.match(html, /Living Room TV/)
  t.match(html, /Read your orders/)
  const form = formWith(html, url, 'decision')
  t.same(
    form.buttons.map((x) => x.value),
    ['allow', 'deny'],
  )
  t.equal((await front.store.devices.getByUserCode(code))?.record.status, 'pending', 'nothing decided by viewing')
  const res = await b.submit(form, { decision: 'allow' })
  t.equal(res.status, 200)
  const result = await res.text()
  t.match(result, /Device connected/)
  t.match(result, /go back to your device/)
  const stored = await front.store.devices.getByUserCode(code)
  t.match(stored?.record, { status: 'approved', sub: 'alice', authTime: epochSeconds(front.clock) })

  await t.test('the code cannot be used again', async (t) => {
    const again = await b.get(url)
    t.equal(again.status, 400)
    t.match(await again.text(), /already been used/)
    const post2 = await b.submit(form, { decision: 'deny' })
    t.equal(post2.status, 400)
    t.equal((await front.store.devices.getByUserCode(code))?.record.status, 'approved', 'unchanged')
  })
})

t.test('deny: the store records denied, without a user', async (t) => {
  const code = await pendingDevice()
  const b = await signedIn()
  const url = `${front.url}/device?user_code=${pretty(code)}`
  const page = await b.get(url)
  const res = await b.submit(formWith(await page.text(), url, 'decision'), { decision: 'deny' })
  t.equal(res.status, 200)
  t.match(await res.text(), /Access denied/)
  t.match((await front.store.devices.getByUserCode(code))?.record, { status: 'denied', sub: null })
})

t.test('the confirmation is shown even to a signed-in person (the code must be checked)', async (t) => {
  const code = await pendingDevice()
  const b = await signedIn()
  const res = await typeCode(pretty(code))
  t.equal(res.status, 303)
  const page = await get(`${front.url}/device?user_code=${pretty(code)}`, [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; '))
  t.match(page.text, /name="decision" value="allow"/)
  t.equal((await front.store.devices.getByUserCode(code))?.record.status, 'pending')
})

t.test('an expired code gets a clear message', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const code = await pendingDevice(f)
  const b = await signedIn(f)
  const url = `${f.url}/device?user_code=${pretty(code)}`
  const page = await b.get(url)
  const form = formWith(await page.text(), url, 'decision')
  f.clock.advance(601_000)
  const viaLink = await get(url)
  t.equal(viaLink.status, 400)
  t.match(viaLink.text, /This code has expired or is not valid/)
  const late = await b.submit(form, { decision: 'allow' })
  t.equal(late.status, 400)
  t.match(await late.text(), /expired/)
  t.equal(await f.store.devices.getByUserCode(code), null)
})

t.test('wrong codes are limited per address (RFC 8628 5.1)', async (t) => {
  const f = await startFront(yaml)
  t.teardown(() => f.close())
  const code = await pendingDevice(f)
  const ip = '203.0.113.7'
  for (const typed of ['ZZZZ-ZZZZ', 'not a code', 'BCDF-GHJ']) {
    const res = await typeCode(typed, ip, f)
    t.equal(res.status, 400, typed)
    t.match(res.text, /This code has expired or is not valid/)
  }
  f.clock.advance(60_000)
  const right = await typeCode(pretty(code), ip, f)
  t.equal(right.status, 429, 'refused even for the right code')
  t.match(right.text, /Too many attempts\. Try again in 4 minutes\./, 'the page says how long')
  t.equal(right.headers.get('retry-after'), '240', 'Retry-After: the rest of the window, not a whole window')
  const link = await fetch(`${f.url}/device?user_code=${pretty(code)}`, { headers: { 'x-forwarded-for': ip } })
  t.equal(link.status, 429, 'verification_uri_complete is limited the same way')
  const other = await typeCode(pretty(code), '203.0.113.8', f)
  t.equal(other.status, 303, 'another address is not affected')
  f.clock.advance(240_000)
  const later = await typeCode(pretty(code), ip, f)
  t.equal(later.status, 303, 'the window passes')
})

t.test('POST /device refusals: 403 for CSRF and Origin, nothing decided', async (t) => {
  const code = await pendingDevice()
  const b = await signedIn()
  const url = `${front.url}/device?user_code=${pretty(code)}`
  const form = formWith(await (await b.get(url)).text(), url, 'decision')
  const session = `bw_session=${b.cookies.get('bw_session') ?? ''}`
  const cases: Array<[string, Record<string, string>, Record<string, string>]> = [
    ['no token', { ...form.fields, csrf: '', decision: 'allow' }, { cookie: session, origin: front.issuer }],
    ['a wrong token', { ...form.fields, csrf: 'C'.repeat(43), decision: 'allow' }, { cookie: session, origin: front.issuer }],
    ['a foreign Origin', { ...form.fields, decision: 'allow' }, { cookie: session, origin: 'https://evil.example' }],
    ['no session', { ...form.fields, decision: 'allow' }, { origin: front.issuer }],
  ]
  for (const [name, fields, headers] of cases) {
    const res = await reply(postForm(form.action, fields, headers))
    t.equal(res.status, 403, name)
    t.equal((await front.store.devices.getByUserCode(code))?.record.status, 'pending', `${name}: still pending`)
  }
  const { form: entryForm } = await entry()
  const noCookie = await reply(postForm(entryForm.action, { ...entryForm.fields, user_code: code }, { origin: front.issuer }))
  t.equal(noCookie.status, 403, 'the entry form needs its CSRF cookie too')
  const badDecision = await reply(postForm(form.action, { ...form.fields, decision: 'maybe' }, { cookie: session, origin: front.issuer }))
  t.equal(badDecision.status, 400)
  t.equal((await front.store.devices.getByUserCode(code))?.record.status, 'pending')
})

t.test('a device login that fails shows the device login again', async (t) => {
  const code = await pendingDevice()
  const b = new Browser()
  const url = `${front.url}/device?user_code=${pretty(code)}`
  const page = await b.get(url)
  const res = await b.submit(formWith(await page.text(), url, 'password'), { username: 'alice', password: 'wrong' })
  t.equal(res.status, 400)
  const html = await res.text()
  t.match(html, /The username or password is incorrect/)
  t.match(html, new RegExp(`name="user_code" value="${pretty(code)}"`))
})
