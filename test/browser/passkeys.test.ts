import t from 'tap'
import { Redis } from 'ioredis'
import type { Page, Request } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { addAuthenticator } from '../helpers/webauthn.js'
import { startBrowserAs, submitAndWait, type BrowserAs } from '../helpers/browser-as.js'
import { DEMO_PASSWORD, type DemoConfig } from '../helpers/as-config.js'
import { startRedis } from '../helpers/redis.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * Passkeys in Chromium, with its virtual authenticator (DevTools protocol
 * WebAuthn domain: a CTAP2 platform authenticator holding discoverable
 * credentials, with user verification): a signed-in person adds and names a
 * passkey on instance A's account page, signs in with it alone on instance B
 * (both on one Redis, both RP ID `localhost`), removes it there, and is then
 * refused with it. A replayed sign-in and a cloned authenticator (a signature
 * counter going backwards) are refused. Every page passes PageChecker.check
 * (axe, CSP, console, screenshots at both widths).
 */

const PERSON = 'leo'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** The instance on `localhost` (an RP ID must be a domain) with the shared Redis store. */
function onLocalhost(redisUrl: string, prefix: string): (config: DemoConfig) => void {
  return (config) => {
    config.public_url = `http://localhost:${new URL(String(config.public_url)).port}`
    config.store = { url: redisUrl, key_prefix: prefix }
  }
}

t.test('passkeys in Chromium across two instances', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 })
  t.teardown(() => raw.disconnect())
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const a: BrowserAs = await startBrowserAs(onLocalhost(redis.url, redis.prefix))
  t.teardown(() => a.close())
  const b: BrowserAs = await startBrowserAs(onLocalhost(redis.url, redis.prefix))
  t.teardown(() => b.close())
  // bin.url is where it listens (127.0.0.1); the pages are served under public_url, on localhost.
  const A = a.issuer.replace('//127.0.0.1:', '//localhost:')
  const B = b.issuer.replace('//127.0.0.1:', '//localhost:')
  const stable = (issuer: string): Record<string, string> => ({ [new URL(issuer).host]: 'localhost:8080' })
  const passkeyKeys = async (): Promise<string[]> => (await raw.keys(`${redis.prefix}pk*`)).filter((k) => !k.startsWith(`${redis.prefix}pkc:`))

  await t.test('add a passkey on A, sign in with it alone on B, remove it', async (t) => {
    const person = PERSON
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const { cdp, authenticatorId } = await addAuthenticator(page)

    await page.goto(`${A}/account`)
    t.equal(await heading(page), 'Sign in')
    await t.resolves(page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor({ timeout: 10_000 }), 'the login page offers a passkey')
    t.equal(await page.getByLabel('Username').getAttribute('autocomplete'), 'username webauthn', "the username field asks for the browser's passkey autofill")
    await checker.check(t, 'login-passkey', { replace: stable(A) })
    await page.getByLabel('Username').fill(person)
    await page.getByLabel('Password').fill(DEMO_PASSWORD)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign in', exact: true }).click())
    t.equal(await heading(page), 'Your account')
    await t.resolves(page.getByText('You have no passkeys yet.').waitFor({ timeout: 10_000 }))
    await checker.check(t, 'account-passkeys-empty', { replace: stable(A) })

    await page.getByLabel('Name of the new passkey').fill(`${person}'s laptop`)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Add a passkey' }).click())
    await t.resolves(page.getByRole('status').filter({ hasText: 'Your passkey was added.' }).waitFor({ timeout: 10_000 }))
    t.equal(await page.locator('ul.passkeys h3').textContent(), `${person}'s laptop`, 'listed under its name')
    t.match(
      await page.locator('ul.passkeys .when').textContent(),
      /^Added on \d{1,2} [A-Z][a-z]+ \d{4}, not used yet · synced$|^Added on \d{1,2} [A-Z][a-z]+ \d{4}, not used yet$/,
    )
    const { credentials } = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })) as {
      credentials: Array<{ isResidentCredential: boolean; credentialId: string }>
    }
    t.equal(credentials.length, 1, 'the authenticator holds one credential')
    t.equal(credentials[0]?.isResidentCredential, true, 'a discoverable one (a passkey)')
    t.equal((await passkeyKeys()).length, 2, 'the store holds it in Redis (the credential and its owner)')
    await page.getByLabel(`New name for ${person}'s laptop`).fill(`${person}'s work laptop`)
    await submitAndWait(page, () => page.getByRole('button', { name: `Rename passkey ${person}'s laptop` }).click())
    await t.resolves(page.getByRole('status').filter({ hasText: 'The passkey was renamed.' }).waitFor({ timeout: 10_000 }))
    t.equal(await page.locator('ul.passkeys h3').textContent(), `${person}'s work laptop`, 'renamed')
    const shownDate = (await page.locator('ul.passkeys time').first().textContent()) ?? ''
    await checker.check(t, 'account-passkeys', { replace: { ...stable(A), [shownDate]: '23 November 2026' } })

    // Signed out (a fresh browser session with the same authenticator), on the other instance: the
    // login page's autofill request (conditional mediation) finds the passkey, and the virtual
    // authenticator, which simulates the person's choice, answers it without a click.
    await context.clearCookies()
    const posted = page.waitForRequest((r: Request) => r.method() === 'POST' && new URL(r.url()).pathname === '/passkey-login')
    await page.goto(`${B}/account`)
    const login = await posted
    await t.resolves(
      page.locator('h1', { hasText: 'Your account' }).waitFor({ timeout: 10_000 }),
      'signed in on B with the passkey alone (no username, no password)',
    )
    t.equal(new URL(page.url()).origin, B)
    await t.resolves(page.getByText(`Signed in as ${person}`).waitFor({ timeout: 10_000 }))
    t.match(await page.locator('ul.passkeys .when').textContent(), /last used on/, 'the sign-in is recorded on the passkey')

    // The same signed answer sent again: its challenge was used, nothing signs in.
    const replay = await fetch(`${B}/passkey-login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: (await login.headerValue('cookie')) ?? '', origin: B },
      body: login.postData() ?? '',
    })
    t.equal(replay.status, 400, 'a replayed passkey sign-in is refused')
    t.equal(replay.headers.get('set-cookie')?.includes('bw_session=') ?? false, false, 'and starts no session')
    await t.resolves(b.bin.waitForLog((e) => e.event === 'passkey_login_failed' && String(e.reason).includes('challenge'), 5000))

    await submitAndWait(page, () => page.getByRole('button', { name: `Remove passkey ${person}'s work laptop` }).click())
    await t.resolves(page.getByRole('status').filter({ hasText: 'The passkey was removed.' }).waitFor({ timeout: 10_000 }))
    await t.resolves(page.getByText('You have no passkeys yet.').waitFor({ timeout: 10_000 }))
    t.same(await passkeyKeys(), [], 'gone from the store')

    // The authenticator still has it; bearward no longer accepts it: not from the autofill, not from the button.
    await context.clearCookies()
    const refusal = (): Promise<number> =>
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/passkey-login').then((r) => r.status())
    let answered = refusal()
    await page.goto(`${A}/account`)
    t.equal(await answered, 400, 'the autofill offered it; a removed passkey signs nobody in')
    await page.waitForLoadState()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'That passkey could not sign you in.' }).waitFor({ timeout: 10_000 }))
    answered = refusal()
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
    t.equal(await answered, 400, 'nor when chosen with the button')
    await page.waitForLoadState()
    t.equal(await heading(page), 'Sign in')
    await t.resolves(page.getByRole('alert').filter({ hasText: 'That passkey could not sign you in.' }).waitFor({ timeout: 10_000 }))
    await checker.check(t, 'login-passkey-refused', { replace: stable(A) })
  })

  await t.test('a cloned authenticator (its signature counter going back) is refused and logged', async (t) => {
    const { context, page } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    const { cdp, authenticatorId } = await addAuthenticator(page)
    await page.goto(`${A}/account`)
    await page.getByLabel('Username').fill('judy')
    await page.getByLabel('Password').fill(DEMO_PASSWORD)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign in', exact: true }).click())
    await submitAndWait(page, () => page.getByRole('button', { name: 'Add a passkey' }).click())
    await context.clearCookies()
    const first = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/passkey-login')
    await page.goto(`${A}/account`)
    t.equal((await first).status(), 303, 'the first sign-in works')
    await page.locator('h1', { hasText: 'Your account' }).waitFor({ timeout: 10_000 })

    // The same key, its counter reset: what a copy of the authenticator would present.
    type Credential = { credentialId: string; isResidentCredential: boolean; rpId: string; privateKey: string; userHandle: string; signCount: number }
    const { credentials } = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })) as { credentials: Credential[] }
    const original = credentials[0] as Credential
    t.ok(original.signCount > 0, `the authenticator counts signatures (${original.signCount})`)
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: original.credentialId })
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...original, signCount: 0 } })
    await context.clearCookies()
    const cloned = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/passkey-login')
    await page.goto(`${A}/account`)
    t.equal((await cloned).status(), 400, 'the clone signs nobody in')
    await page.waitForLoadState()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'That passkey could not sign you in.' }).waitFor({ timeout: 10_000 }))
    await t.resolves(
      a.bin.waitForLog((e) => e.event === 'passkey_counter_regressed' && e.level === 40, 5000),
      'the clone warning is logged',
    )
  })
})
