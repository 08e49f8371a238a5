/**
 * The attacker's pass on the sign-in pages and second factors as #38 changed
 * them (docs/people.md, docs/throttling.md): the per-person guess limit at
 * /second-factor and the known-browser cookie that is exempt from it, the
 * factor-change rule, and the set-up that leads back to an authorization.
 */
import t, { type Test } from 'tap'
import * as OTPAuth from 'otpauth'
import { hashSecret } from '../../src/crypto/secret.js'
import { ManualClock } from '../../src/clock.js'
import { hashToken } from '../../src/store/hash.js'
import { RedisStore } from '../../src/store/redis.js'
import type { Store } from '../../src/store/types.js'
import { askRedis, startRedis } from '../helpers/redis.js'
import { newRecoveryCodes } from '../../src/as/totp/codes.js'
import { ALICE_PASSWORD, BOB_PASSWORD, authParams, formWith, frontYaml } from '../helpers/as-front.js'
import { serveRuntime, type ServedRuntime } from '../helpers/serve-runtime.js'
import { PageClient, TOTP_SECRET, wrongCodeAt } from '../helpers/page-client.js'

async function serve(t: Test, o: { redis?: boolean } = {}): Promise<ServedRuntime> {
  const yaml = await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' })
  if (o.redis !== true) {
    const served = await serveRuntime(yaml)
    t.teardown(() => served.close())
    return served
  }
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  // Redis judges TTLs by its own clock: start the manual clock at real time and move it only forward.
  const clock = new ManualClock(Date.now())
  const served = await serveRuntime(yaml, { clock, store: (c: ManualClock): Store => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock: c }) })
  t.teardown(() => served.close())
  return served
}

async function turnOnApp(served: ServedRuntime): Promise<void> {
  const now = Math.floor(served.clock.now() / 1000)
  await served.store.totp.put('alice', { secret: served.as.totpSecrets.seal('alice', TOTP_SECRET), createdAt: now, confirmedAt: now, recovery: [] })
}

async function knownBeforeTheApp(t: Test, served: ServedRuntime): Promise<void> {
  const max = served.as.as.rateLimit.loginMaxFailures
  const jars: PageClient[] = []
  for (let i = 0; i < 3; i++) {
    const jar = new PageClient(served.url, '203.0.113.7')
    t.equal((await jar.password()).status, 303, `jar ${i}: the password alone signs in (no second factor yet)`)
    t.ok(jar.cookies.get('bw_known'), `jar ${i}: known after that complete sign-in`)
    jar.cookies.delete('bw_session')
    jars.push(jar)
  }
  served.clock.advance(60_000)
  await turnOnApp(served)

  let checked = 0
  for (const jar of jars) {
    t.equal((await jar.password()).status, 303, 'the password leads to the code page')
    for (let guess = 0; guess < max; guess++) {
      const r = await jar.code(wrongCodeAt(served.clock.now()))
      if (r.status === 400) checked += 1
      else t.equal(r.status, 429, 'refused unchecked')
    }
  }
  t.equal(checked, max, `${max} codes checked in the window, not ${max} per jar known before the app`)
}

t.test('browsers known from password sign-ins before the app was on get no code guesses of their own', async (t) => {
  // A stranger who had alice's password while she had no second factor signed in from many cookie jars:
  // each password sign-in was complete then, so each jar got a known-browser cookie (90 days). Alice
  // turns on an authenticator app (the usual answer to a leaked password). Each of those cookies had its
  // own count of code guesses, none shared with the per-person count: N jars gave N x login_max_failures
  // guesses per window, from one address, not the per-person limit docs/throttling.md promises.
  await t.test('memory store', async (t) => knownBeforeTheApp(t, await serve(t)))
  await t.test('Redis', async (t) => knownBeforeTheApp(t, await serve(t, { redis: true })))
  await t.test('Redis: a cookie remembered before the time was kept counts as known before the app', async (t) => {
    const redis = await startRedis()
    t.teardown(() => redis.stop())
    const clock = new ManualClock(Date.now())
    const served = await serveRuntime(await frontYaml(), { clock, store: (c) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock: c }) })
    t.teardown(() => served.close())
    const jar = new PageClient(served.url, '203.0.113.7')
    await jar.password()
    const token = jar.cookies.get('bw_known') ?? ''
    t.same(await served.store.knownBrowsers.remembered(hashToken(token)), { sub: 'alice', atMs: served.clock.now() })
    // The earlier format of the same key: the sub alone.
    await askRedis(redis.port, async (c) => {
      const [key = ''] = await c.keys(`${redis.prefix}kbc*`)
      await c.set(key, JSON.stringify({ v: 'alice', e: clock.now() + 3_600_000 }), 'PX', 3_600_000)
    })
    t.same(await served.store.knownBrowsers.remembered(hashToken(token)), { sub: 'alice', atMs: 0 })
    t.equal(await served.store.knownBrowsers.get(hashToken(token)), 'alice', 'still known for the login throttle')
  })
})

t.test("the account page's withdrawal notice never names a client a stranger registered", async (t) => {
  // `/account?withdrawn=<client_id>` says "You withdrew the access of <name>" for a client no longer
  // listed. The name was looked up among every client, registered ones included: a stranger registers
  // a client whose name is a message of their choosing and sends people the link; the account page then
  // shows that text, as if bearward said it, to a person who withdrew nothing.
  const registration =
    '  registration: { enabled: true, scopes: [orders:read], client_ttl: 1h, max_clients: 100, rate_limit: { per_address: 100, window: 10m } }\n'
  const served = await serveRuntime(await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }', asExtra: registration }))
  t.teardown(() => served.close())
  const message = 'Your account is locked. Call 555-0100'
  const reg = await fetch(`${served.url}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: message,
      redirect_uris: ['http://127.0.0.1:33418/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
    }),
  })
  t.equal(reg.status, 201)
  const clientId = String(((await reg.json()) as { client_id?: unknown }).client_id)

  const alice = new PageClient(served.url, '192.0.2.10')
  t.equal((await alice.password()).status, 303, 'alice is signed in')
  const page = await alice.get(`account?withdrawn=${encodeURIComponent(clientId)}`)
  t.equal(page.status, 200)
  t.notMatch(page.html, message, "the stranger's text is not on the page")
  t.notMatch(page.html, 'You withdrew', 'no withdrawal is claimed')
  t.equal(await served.store.allowances.list('alice').then((a) => a.length), 0, 'and alice allowed nothing')
})

t.test('recovery codes are guesses like codes: the per-person count holds them, and the right one waits past it', async (t) => {
  const served = await serve(t)
  const max = served.as.as.rateLimit.loginMaxFailures
  const [right = ''] = newRecoveryCodes()
  const now = Math.floor(served.clock.now() / 1000)
  const recovery = [{ hash: await hashSecret(right), usedAt: null }]
  await served.store.totp.put('alice', { secret: served.as.totpSecrets.seal('alice', TOTP_SECRET), createdAt: now, confirmedAt: now, recovery })
  let checked = 0
  for (let jar = 0; jar < 3; jar++) {
    const stranger = new PageClient(served.url, `198.51.100.${jar + 1}`)
    t.equal((await stranger.password()).status, 303)
    for (const wrong of newRecoveryCodes().slice(0, max)) {
      const r = await stranger.code(wrong, 'recovery_code')
      if (r.status === 400) checked += 1
      else t.equal(r.status, 429)
    }
  }
  t.equal(checked, max, `${max} recovery codes checked in the window, whatever the jars and addresses`)
  const lucky = new PageClient(served.url, '192.0.2.99')
  await lucky.password()
  t.equal((await lucky.code(right, 'recovery_code')).status, 429, 'the right recovery code is refused unchecked past the limit')
  t.equal((await served.store.totp.get('alice'))?.recovery[0]?.usedAt, null, 'and not used up')
})

t.test("another person's known-browser cookie gives no allowance of its own at /second-factor", async (t) => {
  const served = await serve(t)
  const max = served.as.as.rateLimit.loginMaxFailures
  await turnOnApp(served)
  // The stranger is bob: his own complete sign-in (he has only a password) makes his browser known for him.
  const bob = new PageClient(served.url, '203.0.113.9')
  t.equal((await bob.password('bob', BOB_PASSWORD)).status, 303)
  const bobKnown = bob.cookies.get('bw_known') ?? ''
  t.ok(bobKnown, "bob's browser is known for bob")
  let checked = 0
  for (let jar = 0; jar < 3; jar++) {
    const stranger = new PageClient(served.url, '203.0.113.9')
    stranger.cookies.set('bw_known', bobKnown)
    t.equal((await stranger.password()).status, 303, "alice's password, in a jar with bob's known cookie")
    for (let guess = 0; guess < max; guess++) {
      const r = await stranger.code(wrongCodeAt(served.clock.now()))
      if (r.status === 400) checked += 1
      else t.equal(r.status, 429)
    }
  }
  t.equal(checked, max, "bob's cookie counts for nothing at alice's code page")
})

/** The session's CSRF token, from the account page's forms. */
function csrfOf(html: string): string {
  return /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
}

t.test('an authenticator-app set-up in progress is neither shown to nor confirmed by another session', async (t) => {
  // A person with only a password may add a first factor with a recent password sign-in (docs/people.md).
  // While she sets up her app (the secret stays unconfirmed until her first code), a stranger who has
  // her password signed in too: the account page showed him her secret's QR code and key, and his code
  // from it confirmed the set-up. She then turned on an app whose secret the stranger holds, and saw
  // nothing amiss: the notice says an app was added, which she did.
  const served = await serve(t)
  const owner = new PageClient(served.url, '192.0.2.10')
  t.equal((await owner.password()).status, 303)
  const ownerPage = await owner.get('account')
  const started = await owner.post('totp', { csrf: csrfOf(ownerPage.html), action: 'start' })
  t.equal(started.status, 303, 'she starts the set-up')
  const record = await served.store.totp.get('alice')
  const secret = record === null ? null : served.as.totpSecrets.secretOf(served.as.log, 'alice', record)?.secret
  t.ok(secret, 'an unconfirmed secret is kept')
  const shown = (secret ?? '-').replace(/(.{4})(?=.)/g, '$1 ')
  t.match((await owner.get('account')).html, shown, 'her page shows her the key')

  const stranger = new PageClient(served.url, '203.0.113.7')
  t.equal((await stranger.password()).status, 303, 'the stranger signs in with the password alone')
  const page = await stranger.get('account')
  t.equal(page.status, 200)
  t.notMatch(page.html, shown, "her key is not on the stranger's page")
  const code = OTPAuth.TOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret ?? ''), timestamp: served.clock.now() })
  const confirm = await stranger.post('totp', { csrf: csrfOf(page.html), action: 'confirm', code })
  await confirm.arrayBuffer()
  t.not(confirm.status, 200, 'no recovery codes for the stranger')
  t.equal((await served.store.totp.get('alice'))?.confirmedAt, null, 'the set-up is not confirmed by him')
})

t.test('what the set-up carries back leads only to /authorize, validated again; next= names only the account page', async (t) => {
  const served = await serve(t)
  const alice = new PageClient(served.url, '192.0.2.10')
  t.equal((await alice.password()).status, 303)
  const setUp = await alice.get(
    `account?mfa=setup&request=${encodeURIComponent(new URLSearchParams(authParams({ redirect_uri: 'https://evil.example/cb' })).toString())}`,
  )
  t.equal((await alice.post('totp', { csrf: csrfOf(setUp.html), action: 'start' })).status, 303)
  const record = await served.store.totp.get('alice')
  const secret = record === null ? '' : (served.as.totpSecrets.secretOf(served.as.log, 'alice', record)?.secret ?? '')
  const evilRequest = new URLSearchParams(authParams({ redirect_uri: 'https://evil.example/cb' })).toString()
  for (const carried of [evilRequest, '//evil.example/x', 'https://evil.example/', '\\\\evil.example']) {
    served.clock.advance(30_000)
    await served.store.totp.put('alice', { ...(record ?? { secret: '', createdAt: 0, recovery: [] }), confirmedAt: null })
    const code = OTPAuth.TOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), timestamp: served.clock.now() })
    const page = await alice.get('account')
    const done = await alice.post('totp', { csrf: csrfOf(page.html), action: 'confirm', code, request: carried })
    const html = await done.text()
    t.equal(done.status, 200, `recovery codes (carried ${JSON.stringify(carried.slice(0, 20))})`)
    const href = /href="([^"]*authorize[^"]*)"/.exec(html)?.[1]?.replaceAll('&amp;', '&') ?? ''
    t.match(href, /^authorize\?/, 'the link back is to our /authorize, relative')
    const followed = await alice.get(href)
    t.not(followed.location?.startsWith('https://evil.example'), true, 'never a redirect to the forged redirect_uri')
    t.notMatch(followed.location ?? '', /^\/\/|^https?:\/\/evil/, 'nor anywhere else off-site')
  }
  // The login form's next= names only the account page: anything else is refused with a page.
  const login = await alice.get('account?sign_in=again')
  const csrf = formWith(login.html, `${served.url}/account`, 'password').fields.csrf ?? ''
  for (const next of ['//evil.example', 'https://evil.example/', '/account', 'account/../authorize']) {
    const res = await alice.post('login', { csrf, username: 'alice', password: ALICE_PASSWORD, next })
    await res.arrayBuffer()
    t.equal(res.status, 400, `next=${next}: refused`)
    t.equal(res.headers.get('location'), null, 'no redirect')
  }
})

t.test('a strong sign-in past factor_change_max_age changes no factor, to the second', async (t) => {
  const served = await serveRuntime(
    await frontYaml({ asExtra: '  webauthn: { rp_id: localhost, origins: ["http://localhost:8080"] }\n  session: { factor_change_max_age: 10m }\n' }),
  )
  t.teardown(() => served.close())
  const now = Math.floor(served.clock.now() / 1000)
  await served.store.passkeys.add({
    credentialId: 'alice-key',
    sub: 'alice',
    username: 'alice',
    name: "alice's key",
    publicKey: 'AA',
    counter: 7,
    transports: ['internal'],
    deviceType: 'singleDevice',
    backedUp: false,
    createdAt: now - 86_400,
    lastUsedAt: null,
  })
  const withPasskeyAt = async (authTime: number): Promise<PageClient> => {
    const c = new PageClient(served.url, '192.0.2.10')
    const id = `s${authTime}`.padEnd(43, 'x')
    await served.store.sessions.put(
      hashToken(id),
      { sub: 'alice', username: 'alice', authTime, amr: ['hwk', 'user', 'mfa'], acr: 'phr', csrf: 'c'.repeat(43) },
      3600,
    )
    c.cookies.set('bw_session', id)
    return c
  }
  const stale = await withPasskeyAt(now - 601)
  const start = await stale.post('totp', { csrf: 'c'.repeat(43), action: 'start' })
  t.equal(start.headers.get('location'), 'account?confirm=needed#confirm', 'a passkey sign-in 10 min 1 s ago: no app set-up')
  t.equal(await served.store.totp.get('alice'), null, 'nothing started')
  const remove = await stale.post('passkeys', { csrf: 'c'.repeat(43), action: 'remove', credential_id: 'alice-key' })
  t.equal(remove.headers.get('location'), 'account?confirm=needed#confirm', 'nor a passkey removed')
  t.equal((await served.store.passkeys.list('alice')).length, 1)
  const options = await stale.post('passkey-options', { csrf: 'c'.repeat(43), purpose: 'register' })
  t.equal(options.status, 403, 'no registration ceremony either')
  await options.arrayBuffer()

  const fresh = await withPasskeyAt(now - 600)
  t.match((await fresh.post('totp', { csrf: 'c'.repeat(43), action: 'start' })).headers.get('location'), /^account\??#totp$/, 'at 10 min exactly: allowed')
  t.not(await served.store.totp.get('alice'), null)
})
