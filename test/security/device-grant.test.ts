/**
 * Attacks on the device authorization grant of the real binary (RFC 8628
 * 3.4, 3.5, 5.1, 5.2): a device code works only for the client it was issued
 * to and only once, polling faster than the interval gets slow_down, and
 * guessing user codes is rate-limited per client address.
 */
import t, { type Test } from 'tap'
import { Browser, parseForms } from '../helpers/browser.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { basic, postForm, startTarget, type Target } from '../helpers/attack.js'

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

let target: Target

t.before(async () => {
  target = await startTarget({
    device: '{ ttl: 60s, interval: 1s }',
    clients: `
    - client_id: tv
      type: public
      grant_types: ["${DEVICE_GRANT}"]
      scopes: [orders:read]
`,
  })
})
t.teardown(() => target.close())

interface DeviceStart {
  device_code: string
  user_code: string
  verification_uri_complete: string
}

async function startDevice(clientId = 'cli'): Promise<DeviceStart> {
  const res = await postForm(`${target.url}/device_authorization`, { client_id: clientId, scope: 'orders:read' })
  if (res.status !== 200) throw new Error(`device_authorization: ${res.status} ${await res.text()}`)
  return (await res.json()) as DeviceStart
}

const poll = (deviceCode: string, clientId = 'cli', auth?: string): Promise<Response> =>
  postForm(
    `${target.url}/token`,
    { grant_type: DEVICE_GRANT, device_code: deviceCode, ...(auth ? {} : { client_id: clientId }) },
    auth ? { authorization: auth } : {},
  )

async function assertPollError(t: Test, res: Response, error: string, label: string, status = 400): Promise<void> {
  const body = (await res.json()) as Record<string, unknown>
  t.equal(res.status, status, `${label}: ${status}`)
  t.equal(body.error, error, `${label}: ${error}`)
  t.notOk('access_token' in body, `${label}: no token`)
}

/** A person opens verification_uri_complete, logs in and allows. */
async function approve(start: DeviceStart): Promise<void> {
  const browser = new Browser()
  const url = start.verification_uri_complete
  let { res, url: at } = await browser.follow(await browser.get(url), url, target.url)
  for (let step = 0; step < 4; step++) {
    const forms = parseForms(await res.text(), at).filter((f) => f.method === 'POST')
    const login = forms.find((f) => 'password' in f.fields || 'username' in f.fields)
    const consent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    if (consent) {
      const done = await browser.submit(consent, { decision: 'allow' })
      if (done.status !== 200) throw new Error(`approval answered ${done.status}`)
      return
    }
    if (!login) throw new Error(`no login or confirmation form (status ${res.status})`)
    ;({ res, url: at } = await browser.follow(await browser.submit(login, { username: 'alice', password: DEMO_PASSWORD }), at, target.url))
  }
  throw new Error('device approval did not finish')
}

t.test("polling with another client's device_code is invalid_grant and does not disturb the owner", async (t) => {
  const start = await startDevice('cli')
  await assertPollError(t, await poll(start.device_code, 'tv'), 'invalid_grant', "tv polls cli's device code")
  await assertPollError(t, await poll(start.device_code, 'web', basic('web', target.secret)), 'unauthorized_client', 'web (no device grant) polls it')
  await assertPollError(t, await poll(start.device_code, 'nosuch'), 'invalid_client', 'an unknown client polls it', 401)
  await assertPollError(t, await poll(start.device_code, 'cli'), 'authorization_pending', 'the owner is still pending, not slowed down')

  await approve(start)
  await new Promise((r) => setTimeout(r, 1050))
  await assertPollError(t, await poll(start.device_code, 'tv'), 'invalid_grant', 'after approval, tv still cannot redeem it')
  const owner = await poll(start.device_code, 'cli')
  t.equal(owner.status, 200, 'the owner gets the tokens')
  await owner.arrayBuffer()
})

t.test('an approved device code is redeemed once', async (t) => {
  const start = await startDevice('cli')
  await approve(start)
  const first = await poll(start.device_code)
  t.equal(first.status, 200, 'first poll after approval: tokens')
  const tokens = (await first.json()) as { access_token: string }
  t.ok(tokens.access_token)
  await assertPollError(t, await poll(start.device_code), 'invalid_grant', 'immediate second poll')
  await new Promise((r) => setTimeout(r, 1050))
  await assertPollError(t, await poll(start.device_code), 'invalid_grant', 'second poll after the interval')
  const page = await fetch(`${target.url}/device?user_code=${encodeURIComponent(start.user_code)}`)
  t.equal(page.status, 400, 'the user code cannot be approved again')
  await page.arrayBuffer()
})

t.test('polling faster than the interval gets slow_down', async (t) => {
  const start = await startDevice('cli')
  await assertPollError(t, await poll(start.device_code), 'authorization_pending', 'first poll')
  await assertPollError(t, await poll(start.device_code), 'slow_down', 'immediate second poll')
})

t.test('forged and malformed device codes', async (t) => {
  const start = await startDevice('cli')
  const [random, exp] = start.device_code.split('.') as [string, string]
  await assertPollError(t, await poll(`${random}.${Number(exp) + 3600}`), 'invalid_grant', 'expiry suffix moved forward')
  // A different last character whatever it was (a fixed 'A' left the code unchanged 1 time in 64).
  const changed = random.endsWith('A') ? 'B' : 'A'
  await assertPollError(t, await poll(`${random.slice(0, -1)}${changed}.${exp}`), 'invalid_grant', 'one character changed')
  await assertPollError(t, await poll(start.user_code), 'invalid_grant', 'the user code as a device code')
  await assertPollError(t, await poll('x'.repeat(5000)), 'invalid_grant', 'very long')
  const missing = await postForm(`${target.url}/token`, { grant_type: DEVICE_GRANT, client_id: 'cli' })
  await assertPollError(t, missing, 'invalid_request', 'no device_code')
  const repeated = await postForm(`${target.url}/token`, [
    ['grant_type', DEVICE_GRANT],
    ['client_id', 'cli'],
    ['device_code', start.device_code],
    ['device_code', start.device_code],
  ])
  await assertPollError(t, repeated, 'invalid_request', 'repeated device_code')
  const svc = await postForm(`${target.url}/device_authorization`, { scope: 'orders:read' }, { authorization: basic('service', target.secret) })
  t.equal(svc.status, 400, 'a client without the device grant cannot start one')
  t.match(await svc.json(), { error: 'unauthorized_client' })
  const wide = await postForm(`${target.url}/device_authorization`, { client_id: 'cli', scope: 'orders:write' })
  t.equal(wide.status, 400, 'a scope the client may not have')
  t.match(await wide.json(), { error: 'invalid_scope' })
  const unknown = await postForm(`${target.url}/device_authorization`, { client_id: 'nosuch', scope: 'orders:read' })
  t.equal(unknown.status, 401)
  t.match(await unknown.json(), { error: 'invalid_client' })
})

t.test('guessing user codes is rate-limited per address, even the right code is then refused (RFC 8628 5.1)', async (t) => {
  const start = await startDevice('cli')
  const browser = new Browser()
  const entryUrl = `${target.url}/device`
  const entry = parseForms(await (await browser.get(entryUrl)).text(), entryUrl).find((f) => 'user_code' in f.fields || 'csrf' in f.fields)
  if (!entry) throw new Error('no code entry form')
  const guesses = ['BCDF-GHJK', 'LMNP-QRST', 'VWXZ-BCDF', 'GHJK-LMNP', 'QRST-VWXZ']
  for (const guess of guesses) {
    if (guess === start.user_code) continue
    const res = await browser.submit(entry, { user_code: guess })
    t.equal(res.status, 400, `wrong code ${guess}: 400`)
    await res.arrayBuffer()
  }
  const limited = await browser.submit(entry, { user_code: 'ZZZZ-ZZZZ' })
  t.equal(limited.status, 429, 'the sixth guess: 429')
  t.ok(limited.headers.get('retry-after'), 'with Retry-After')
  await limited.arrayBuffer()
  const right = await browser.submit(entry, { user_code: start.user_code })
  t.equal(right.status, 429, 'the right code from the same address is refused too (no oracle while locked)')
  t.equal(right.headers.get('location'), null)
  await right.arrayBuffer()
  const viaGet = await fetch(`${target.url}/device?user_code=${encodeURIComponent(start.user_code)}`)
  t.equal(viaGet.status, 429, 'GET /device?user_code= is limited the same way')
  await viaGet.arrayBuffer()
})
