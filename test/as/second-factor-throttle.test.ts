/**
 * Guesses at a person's authenticator-app code are counted per person, across
 * sign-ins, browsers and addresses (issue #38 item 6). A stranger who has the
 * password used to drop the browser's cookies, sign in again and get a fresh
 * allowance of guesses each time (35 wrong codes from one address in one
 * window, then the right one accepted). Now they get `login_max_failures`
 * guesses per person per window whatever they do, even from addresses all
 * over one /64 and from other networks, and then even the right code is
 * refused; the owner's browser that completed a sign-in before still signs
 * in. A browser becomes known only after the whole sign-in, never after the
 * password alone. Run on the memory store and on a real Redis.
 */
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { RedisStore } from '../../src/store/redis.js'
import { hashToken } from '../../src/store/hash.js'
import type { Store } from '../../src/store/types.js'
import { BOB_PASSWORD, formWith, frontYaml, setCookies } from '../helpers/as-front.js'
import { startRedis } from '../helpers/redis.js'
import { serveRuntime, type ServedRuntime } from '../helpers/serve-runtime.js'
import { codeAt, PageClient, TOTP_SECRET, wrongCodeAt } from '../helpers/page-client.js'

async function serve(t: Test, store?: (clock: ManualClock) => Store, clock?: ManualClock): Promise<ServedRuntime> {
  const yaml = await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' })
  const served = await serveRuntime(yaml, { ...(clock ? { clock } : {}), ...(store ? { store } : {}) })
  t.teardown(() => served.close())
  const now = Math.floor(served.clock.now() / 1000)
  await served.store.totp.put('alice', { secret: served.as.totpSecrets.seal('alice', TOTP_SECRET), createdAt: now, confirmedAt: now, recovery: [] })
  return served
}

/** Addresses a stranger rotates through: one IPv4, three in one /64, one in another /64, another IPv4. */
const ADDRESSES = ['203.0.113.7', '2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:db8:1:2:abcd:1:2:3', '2001:db8:77:1::1', '198.51.100.20']

async function attackAndOwner(t: Test, served: ServedRuntime): Promise<void> {
  const max = served.as.as.rateLimit.loginMaxFailures
  const base = served.url

  // The owner completed a sign-in (password and code) in her usual browser before.
  const owner = new PageClient(base, '192.0.2.10')
  const first = await owner.password()
  t.equal(first.status, 303)
  t.equal(first.headers.get('location'), 'second-factor')
  t.notOk(setCookies(first.headers).has('bw_known'), 'the password alone makes no browser known')
  const done = await owner.code(codeAt(served.clock.now()))
  t.equal(done.status, 303, 'her whole sign-in')
  const known = setCookies(done.res.headers).get('bw_known')?.value ?? ''
  t.ok(known, 'the complete sign-in makes her browser known')
  t.equal(await served.store.knownBrowsers.get(hashToken(known)), 'alice')
  owner.cookies.delete('bw_session')
  // That was before: a new window (her sign-in from a browser not yet known counted one attempt in the old one).
  served.clock.advance(served.as.as.rateLimit.windowSec * 1000)

  // The stranger has the password: each round drops every cookie, signs in again and guesses.
  let checked = 0
  let refused = 0
  let lastRefusal: { status: number; html: string; res: Response } | null = null
  for (let round = 0; round < 12; round++) {
    const stranger = new PageClient(base, ADDRESSES[round % ADDRESSES.length] ?? '')
    const signedIn = await stranger.password()
    t.equal(signedIn.status, 303, `round ${round}: the password is right`)
    t.notOk(setCookies(signedIn.headers).has('bw_known'), `round ${round}: no known-browser cookie for the password alone`)
    for (let guess = 0; guess < 3; guess++) {
      const r = await stranger.code(wrongCodeAt(served.clock.now()))
      if (r.status === 400) checked += 1
      else if (r.status === 429) {
        refused += 1
        lastRefusal = r
      } else t.fail(`round ${round}: unexpected ${r.status}`)
    }
  }
  t.equal(checked, max, `${max} codes checked in the window, whatever the sign-ins, browsers and addresses`)
  t.equal(refused, 12 * 3 - max, 'every other guess refused unchecked')
  t.equal(lastRefusal?.res.headers.get('retry-after'), String(served.as.as.rateLimit.windowSec), 'Retry-After: the rest of the window')
  t.match(lastRefusal?.html ?? '', 'Too many wrong codes have been entered for this account. Try again in 5 minutes.')

  // The next code (the owner used this step's), from a new browser on a fresh address: refused too, unchecked.
  served.clock.advance(30_000)
  const lucky = new PageClient(base, '2001:db8:ffff:1::1')
  await lucky.password()
  const right = codeAt(served.clock.now())
  const locked = await lucky.code(right)
  t.equal(locked.status, 429, 'the right code waits while the person is locked')
  t.equal(await served.store.sessions.get(hashToken(lucky.cookies.get('bw_session') ?? '')).then((s) => s?.pending !== undefined), true, 'still pending')

  // The owner's known browser is judged by its own count: she signs in, with that same code.
  owner.address = ADDRESSES[1] ?? ''
  t.equal((await owner.password()).status, 303, "her password from the stranger's network")
  const mine = await owner.code(right)
  t.equal(mine.status, 303, 'the owner signs in while strangers are locked out')
  t.equal(mine.res.headers.get('location'), 'account')
  const session = await served.store.sessions.get(hashToken(owner.cookies.get('bw_session') ?? ''))
  t.equal(session?.acr, 'mfa')
  t.equal(session?.pending, undefined)

  // A new window: the stranger's guesses are counted afresh.
  served.clock.advance(served.as.as.rateLimit.windowSec * 1000)
  const later = new PageClient(base, ADDRESSES[0] ?? '')
  await later.password()
  t.equal((await later.code(wrongCodeAt(served.clock.now()))).status, 400, 'checked again in the next window')
}

/** Wrong codes sent all at once from one pending sign-in: no more are checked than the limit allows. */
async function burst(t: Test, served: ServedRuntime): Promise<void> {
  served.clock.advance(served.as.as.rateLimit.windowSec * 1000)
  const stranger = new PageClient(served.url, '203.0.113.50')
  await stranger.password()
  const csrf = await stranger.codeCsrf()
  const wrong = wrongCodeAt(served.clock.now())
  const answers = await Promise.all(Array.from({ length: 25 }, () => stranger.post('second-factor', { csrf, code: wrong })))
  const statuses = answers.map((r) => r.status)
  await Promise.all(answers.map((r) => r.arrayBuffer()))
  t.equal(statuses.filter((s) => s === 400).length, served.as.as.rateLimit.loginMaxFailures, 'only the allowed number were checked')
  t.equal(statuses.filter((s) => s === 429).length, 25 - served.as.as.rateLimit.loginMaxFailures, 'the rest refused unchecked')
}

t.test('memory store: a stranger with the password gets login_max_failures code guesses per person per window', async (t) => {
  const served = await serve(t)
  await attackAndOwner(t, served)
  await burst(t, served)
})

t.test('Redis: the same limit holds across instances sharing the store', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  // Redis judges TTLs by its own clock: start the manual clock at real time and move it only forward.
  const clock = new ManualClock(Date.now())
  const store = (c: ManualClock): Store => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock: c })
  const served = await serve(t, store, clock)
  await attackAndOwner(t, served)
  await burst(t, served)
})

t.test("right codes from browsers not yet known never use up the person's allowance", async (t) => {
  // The count is taken before the code is checked (so a burst cannot overshoot it); a right code gives
  // its attempt back. Without that, a person signing in from fresh browsers (private windows, a new
  // laptop) was locked out of her own account after login_max_failures right codes in one window.
  for (const [name, store] of [['memory', undefined] as const, ['Redis', 'redis'] as const]) {
    await t.test(name, async (t) => {
      let clock: ManualClock | undefined
      let makeStore: ((c: ManualClock) => Store) | undefined
      if (store === 'redis') {
        const redis = await startRedis()
        t.teardown(() => redis.stop())
        clock = new ManualClock(Date.now())
        makeStore = (c) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock: c })
      }
      const served = await serve(t, makeStore, clock)
      const max = served.as.as.rateLimit.loginMaxFailures
      for (let i = 0; i < max + 3; i++) {
        served.clock.advance(30_000) // each sign-in with the next code (a code is taken once)
        const fresh = new PageClient(served.url, '192.0.2.44')
        t.equal((await fresh.password()).status, 303)
        const done = await fresh.code(codeAt(served.clock.now()))
        t.equal(done.status, 303, `sign-in ${i + 1} of ${max + 3} from a new browser`)
      }
      const key = `2fa:person:${hashToken('alice')}`
      t.equal(await served.store.rateLimits.count(key), 0, "the person's count holds none of her right codes")
      // A wrong guess still counts: the allowance is the limit's, not more.
      const stranger = new PageClient(served.url, '198.51.100.99')
      await stranger.password()
      t.equal((await stranger.code(wrongCodeAt(served.clock.now()))).status, 400)
      t.equal(await served.store.rateLimits.count(key), 1)
    })
  }
})

t.test('the per-address count takes a /64 as one address, whatever the people', async (t) => {
  const yaml = (await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' })).replace(
    'rate_limit: { login_max_failures: 3, login_address_max_failures: 6,',
    'rate_limit: { login_max_failures: 5, login_address_max_failures: 6,',
  )
  const served = await serveRuntime(yaml)
  t.teardown(() => served.close())
  const now = Math.floor(served.clock.now() / 1000)
  for (const sub of ['alice', 'user-0002']) {
    await served.store.totp.put(sub, { secret: served.as.totpSecrets.seal(sub, TOTP_SECRET), createdAt: now, confirmedAt: now, recovery: [] })
  }
  const wrong = wrongCodeAt(served.clock.now())
  // Five wrong codes for alice from addresses all over 2001:db8:5:6::/64.
  for (let i = 1; i <= 5; i++) {
    const c = new PageClient(served.url, `2001:db8:5:6::${i.toString(16)}`)
    await c.password()
    t.equal((await c.code(wrong)).status, 400)
  }
  const bobFrom = async (address: string): Promise<number> => {
    const c = new PageClient(served.url, address)
    const page = await c.get('account')
    const csrf = formWith(page.html, `${served.url}/account`, 'password').fields.csrf ?? ''
    t.equal((await c.post('login', { csrf, username: 'bob', password: BOB_PASSWORD, next: 'account' })).status, 303)
    return (await c.code(wrong)).status
  }
  t.equal(await bobFrom('2001:db8:5:6:ffff::1'), 400, "bob's first wrong code from that /64: the sixth for it")
  t.equal(await bobFrom('2001:db8:5:6:1:2:3:4'), 429, 'then that /64 is refused, whatever the address in it and the person')
  t.equal(await bobFrom('2001:db8:5:7::1'), 400, 'the next /64 is not')
})
