import t from 'tap'
import { decodeJwt } from 'jose'
import type { Page } from 'playwright-core'
import { MFA_SETUP } from '../../src/as/interaction/account.js'
import { STRONGER_SIGN_IN_TOTP } from '../../src/as/interaction/authorization-steps.js'
import { DEMO_PASSWORD, type DemoConfig } from '../helpers/as-config.js'
import { authorizeRequest, exchangeCode, startBrowserAs, submitAndWait, turnOnAuthenticatorApp, type BrowserAs } from '../helpers/browser-as.js'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { addAuthenticator } from '../helpers/webauthn.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * Changing how one signs in, in Chromium with its virtual authenticator
 * (issue #38 items 7 and 8):
 * - a person adds a passkey (their first factor: a fresh password sign-in
 *   may); a stranger with their password then gets a session whose account
 *   page offers no way to add or remove a factor ("Confirm it's you"); the
 *   owner, signed in with the passkey, sets up an authenticator app, and the
 *   page tells of both additions;
 * - `acr_values=mfa` for a person without a second factor leads to the
 *   authenticator-app set-up and back to the client, with a sign-in that uses
 *   the new app, instead of the login page coming back for ever.
 * Every page passes PageChecker.check (axe, CSP, console, screenshots) at a
 * phone's and a laptop's width.
 */

const PASSKEY_OWNER = 'judy'
const NO_FACTOR = 'leo'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** The password form of a login page that also offers a passkey. */
async function signIn(page: Page, user: { username: string; password: string }): Promise<void> {
  await page.getByLabel('Username').fill(user.username)
  await page.getByLabel('Password').fill(user.password)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Sign in', exact: true }).click())
}

/** The instance on `localhost` (an RP ID must be a domain). */
function onLocalhost(config: DemoConfig): void {
  config.public_url = `http://localhost:${new URL(String(config.public_url)).port}`
}

// One Chromium for both tests (each starts new contexts): a launch costs a second of CPU or more.
const browser = await launchChromium()
t.teardown(() => browser.close())

t.test('factor changes and acr enrolment in Chromium', async (t) => {
  const as: BrowserAs = await startBrowserAs(onLocalhost)
  t.teardown(() => as.close())
  const A = as.issuer.replace('//127.0.0.1:', '//localhost:')
  const stable = { [new URL(A).host]: 'localhost:8080' }
  const onA = (url: string): string => url.replace(as.issuer, A)

  await t.test("a stranger with the password changes nothing; the owner's passkey lets her add an app", async (t) => {
    const person = PASSKEY_OWNER
    const owner = await openPage(browser)
    t.teardown(() => owner.context.close())
    const { page } = owner
    await addAuthenticator(page)
    await page.goto(`${A}/account`)
    await signIn(page, { username: person, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Your account')
    await page.getByLabel('Name of the new passkey').fill(`${person}'s laptop`)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Add a passkey' }).click())
    await t.resolves(page.getByRole('status').filter({ hasText: 'Your passkey was added.' }).waitFor({ timeout: 10_000 }), 'her first factor')

    // A stranger who learned the password signs in through an application that asks for nothing more.
    const stranger = await openPage(browser)
    t.teardown(() => stranger.context.close())
    await stranger.page.goto(onA(authorizeRequest(as).url))
    await signIn(stranger.page, { username: person, password: DEMO_PASSWORD })
    t.match(await heading(stranger.page), /^Allow .* to access your account\?$/, 'a one-factor session')
    await stranger.page.goto(`${A}/account`)
    t.equal(await heading(stranger.page), 'Your account')
    await t.resolves(stranger.page.getByText('sign in again with your passkey first').waitFor({ timeout: 10_000 }), 'asked to confirm')
    t.equal(await stranger.page.getByRole('button', { name: 'Set up an authenticator app' }).count(), 0, 'no app set-up')
    t.equal(await stranger.page.getByRole('button', { name: 'Add a passkey' }).count(), 0, 'no passkey to add')
    t.equal(await stranger.page.getByRole('button', { name: /^Remove passkey/ }).count(), 0, 'none to remove')
    const shownDate = (await stranger.page.locator('ul.passkeys time').first().textContent()) ?? ''
    await stranger.checker.check(t, 'account-confirm', { replace: { ...stable, [shownDate]: '23 November 2026' } })

    // The owner, signed in with her passkey alone (the autofill finds it), sets up an authenticator app.
    await owner.context.clearCookies()
    const posted = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/passkey-login')
    await page.goto(`${A}/account`)
    t.equal((await posted).status(), 303, 'signed in with the passkey')
    await page.locator('h1', { hasText: 'Your account' }).waitFor({ timeout: 10_000 })
    await turnOnAuthenticatorApp(page)
    t.equal(await heading(page), 'Your recovery codes', 'the app is on')
    await page.goto(`${A}/account`)
    await t.resolves(page.getByText('An authenticator app was added to your account on').waitFor({ timeout: 10_000 }), 'the page tells of the app')
    await t.resolves(page.getByText(`The passkey “${person}'s laptop” was added to your account on`).waitFor({ timeout: 10_000 }), 'and of the passkey')

    // The stranger's session still changes nothing, and its sign-in stays one factor.
    await stranger.page.goto(`${A}/account`)
    await t.resolves(stranger.page.getByText('sign in again with your passkey first').waitFor({ timeout: 10_000 }))
  })

  await t.test('acr_values=mfa without a second factor: set up, sign in with it, back at the client', async (t) => {
    const person = NO_FACTOR
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as, 'openid orders:read', { acr_values: 'mfa' })
    await page.goto(onA(request.url))
    await signIn(page, { username: person, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Your account', 'not the login page again')
    await t.resolves(page.getByText(MFA_SETUP).waitFor({ timeout: 10_000 }), 'the account page says why')
    await checker.check(t, 'acr-mfa-setup', { replace: stable })
    await turnOnAuthenticatorApp(page)
    const codes = await page.locator('.recovery-codes code').allTextContents()
    await submitAndWait(page, () => page.getByRole('link', { name: 'Continue to the application' }).click())
    await t.resolves(page.getByText(STRONGER_SIGN_IN_TOTP).waitFor({ timeout: 10_000 }), 'a sign-in with the new app is asked for')
    await signIn(page, { username: person, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Enter your code')
    await page.getByLabel('Recovery code').fill(codes[0] ?? '')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Use a recovery code' }).click())
    if ((await page.getByRole('button', { name: 'Allow' }).count()) > 0) await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const back = new URL(page.url())
    t.equal(`${back.origin}${back.pathname}`, as.callback, 'back at the client')
    t.equal(back.searchParams.get('state'), request.state)
    const res = await exchangeCode(as, back.searchParams.get('code') ?? '', request.verifier)
    const body = (await res.json()) as { access_token?: string }
    t.equal(res.status, 200)
    t.equal(decodeJwt(String(body.access_token)).acr, 'mfa')
  })
})

t.test('acr_values=mfa where no second factor can be set up: access_denied with a description at the client', async (t) => {
  // Passkeys are off (an IP-address public_url) and mfa.methods names only them: nothing could meet mfa.
  const as: BrowserAs = await startBrowserAs((config) => {
    config.authorization_server.mfa = { methods: ['passkey'] }
  })
  t.teardown(() => as.close())
  const { context, page } = await openPage(browser, 'desktop')
  t.teardown(() => context.close())
  const request = authorizeRequest(as, 'openid orders:read', { acr_values: 'mfa' })
  await page.goto(request.url)
  await signIn(page, { username: 'leo', password: DEMO_PASSWORD })
  const back = new URL(page.url())
  t.equal(`${back.origin}${back.pathname}`, as.callback, 'back at the client, not the login page again')
  t.equal(back.searchParams.get('error'), 'access_denied')
  t.match(back.searchParams.get('error_description') ?? '', /acr_values needs a second factor/)
  t.equal(back.searchParams.get('state'), request.state)
  t.equal(back.searchParams.get('code'), null)
})
