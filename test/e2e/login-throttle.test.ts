/**
 * Throttling end to end, on the whole App (both faces, real listeners) with a
 * manual clock, once with the embedded store and once with two instances
 * sharing a real redis-server: the counters live in the store, so an attack
 * spread over instances is throttled as one, and the waits are walked through
 * by moving the clock, not by sleeping.
 *
 * - an attacker guessing one username from many addresses is slowed (one
 *   guess per turn), the owner in a browser that signed in before signs in
 *   during the attack, and a new browser signs in once its bounded wait ends;
 * - a stranger's wrong client secrets (issue 16 item 4) lock only the
 *   stranger's address: the real client, from its own address, gets tokens.
 *
 * 127.0.0.1 is a trusted proxy, so X-Forwarded-For names the client address.
 */
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import { App } from '../../src/app.js'
import { ManualClock } from '../../src/clock.js'
import { asConfigYaml, DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import { basic, openLoginForm, postLogin, send, type SentResponse } from '../helpers/attack.js'
import { tempConfig } from '../helpers/bin.js'
import type { ConfigTree } from '../helpers/config-tree.js'
import { startRedis } from '../helpers/redis.js'
import { freePort } from '../helpers/http.js'

/** Start one App on `store` with the e2e config; its base URL and a way to stop it. */
async function startApp(t: Test, clock: ManualClock, store: string | ConfigTree): Promise<string> {
  const port = await freePort()
  const yaml = await asConfigYaml({
    port,
    upstream: 'http://127.0.0.1:9',
    store,
    override: {
      gateway: { trusted_proxies: ['127.0.0.1'] },
      authorization_server: { rate_limit: { login_max_failures: 5, login_delay_max: '1m', client_auth_max_failures: 10, window: '15m' } },
    },
  })
  const cfg = await tempConfig(yaml)
  const quiet = new Writable({ write: (_c, _e, done) => done() })
  const app = await App.start({ configPath: cfg.file, clock, watch: false, logDestination: quiet })
  t.teardown(async () => {
    await app.close()
    await cfg.cleanup()
  })
  return `http://127.0.0.1:${port}`
}

/** One sign-in attempt from `ip`, optionally from a browser holding `known` (a `bw_known=...` pair). */
async function signIn(base: string, username: string, password: string, ip: string, known?: string): Promise<SentResponse> {
  return postLogin(base, await openLoginForm(base), username, password, ip, known)
}

function knownCookie(res: SentResponse): string {
  const line = res.cookies.find((c) => c.startsWith('bw_known='))
  if (!line) throw new Error(`no known-browser cookie (${res.status})`)
  return line.slice(0, line.indexOf(';'))
}

function clientCredentials(base: string, secret: string, ip: string): Promise<SentResponse> {
  return send(`${base}/token`, {
    method: 'POST',
    body: 'grant_type=client_credentials',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('service', secret), 'x-forwarded-for': ip },
  })
}

/**
 * The scenarios, against `attackBase` (where the attacker sends) and
 * `ownerBase` (where the owner and the real client go: another instance when
 * the store is shared).
 */
async function scenarios(t: Test, clock: ManualClock, attackBase: string, ownerBase: string): Promise<void> {
  await t.test('an attack on one username from many addresses: slowed, the owner signs in from a known browser, a new browser after its wait', async (t) => {
    const ownBrowser = knownCookie(await signIn(ownerBase, 'alice', DEMO_PASSWORD, '192.0.2.1'))
    for (let i = 1; i <= 5; i++) t.equal((await signIn(attackBase, 'alice', `guess-${i}`, `10.0.0.${i}`)).status, 400, `guess ${i}`)
    const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => signIn(attackBase, 'alice', `burst-${i}`, `10.0.1.${i + 1}`)))
    t.equal(burst.filter((r) => r.status === 400).length, 0, 'of 30 guesses from 30 addresses during the first 1 s wait, none was checked')
    t.ok(
      burst.every((r) => r.status === 429 && r.headers['retry-after'] === '1'),
      'each was told to retry after 1 s',
    )

    const owner = await signIn(ownerBase, 'alice', DEMO_PASSWORD, '198.51.100.50', ownBrowser)
    t.equal(owner.status, 303, 'the owner, from the browser she used before, signs in during the attack')
    t.ok(
      owner.cookies.some((c) => c.startsWith('bw_session=')),
      'with a session',
    )

    const fresh = await signIn(ownerBase, 'alice', DEMO_PASSWORD, '198.51.100.51')
    t.equal(fresh.status, 429, 'a new browser with the right password is told to wait')
    t.equal(fresh.headers['retry-after'], '1')
    t.match(fresh.body, /Try again in 1 second\. A browser you have signed in with before is not affected\./)
    clock.advance(1000)
    const after = await signIn(ownerBase, 'alice', DEMO_PASSWORD, '198.51.100.51')
    t.equal(after.status, 303, 'after the 1 s wait, the new browser signs in')

    // The attacker's next guesses: one per turn, the turns doubling.
    t.equal((await signIn(attackBase, 'alice', 'again', '10.0.2.1')).status, 429, 'the success took the turn: the attacker waits')
    clock.advance(2000)
    t.equal((await signIn(attackBase, 'alice', 'again', '10.0.2.2')).status, 400, 'one guess after the 2 s wait')
    const next = await signIn(attackBase, 'alice', 'again', '10.0.2.3')
    t.equal(next.status, 429)
    t.equal(next.headers['retry-after'], '2', 'the wait doubles per failure (the success in between was none): 2 s again')
    clock.advance(2000)
    t.equal((await signIn(attackBase, 'alice', 'again', '10.0.2.4')).status, 400, 'one guess after it')
    t.equal((await signIn(attackBase, 'alice', 'again', '10.0.2.5')).headers['retry-after'], '4', 'then 4 s')
    clock.advance(15 * 60_000)
  })

  await t.test("a stranger's wrong client secrets lock only the stranger's address (issue 16 item 4)", async (t) => {
    for (let i = 1; i <= 10; i++) t.equal((await clientCredentials(attackBase, `wrong-${i}`, '203.0.113.9')).status, 401, `wrong secret ${i}`)
    const attacker = await clientCredentials(attackBase, DEMO_SECRET, '203.0.113.9')
    t.equal(attacker.status, 429, 'the guessing address is refused even the right secret')
    t.equal(attacker.headers['retry-after'], '900', 'for the rest of the 15 minute window')
    t.match(JSON.parse(attacker.body), { error: 'invalid_client' })
    const real = await clientCredentials(ownerBase, DEMO_SECRET, '192.0.2.99')
    t.equal(real.status, 200, 'the real client, from its own address, gets a token')
    t.ok((JSON.parse(real.body) as { access_token?: string }).access_token)
    clock.advance(900_000)
    t.equal((await clientCredentials(attackBase, DEMO_SECRET, '203.0.113.9')).status, 200, 'the window passes')
  })
}

t.test('embedded store', async (t) => {
  const clock = new ManualClock(Date.now())
  const base = await startApp(t, clock, 'memory')
  await scenarios(t, clock, base, base)
})

t.test('two instances sharing a real redis-server', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const clock = new ManualClock(Date.now())
  const store = { url: redis.url, key_prefix: redis.prefix }
  const g1 = await startApp(t, clock, store)
  const g2 = await startApp(t, clock, store)
  await scenarios(t, clock, g1, g2)
})
