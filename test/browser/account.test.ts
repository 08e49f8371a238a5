import t from 'tap'
import type { Page } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { authorizeRequest, exchangeCode, signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
import { DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import { brandedWebClient } from '../helpers/logo.js'
import { eventually } from '../helpers/http.js'
import { basic } from '../helpers/client-auth.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * The account page in Chromium: a person who is not signed in signs in and
 * comes back to it, sees the application they allowed (logo, name, scopes,
 * when), and withdraws it; the gateway then refuses that application's access
 * token within a second and its refresh token no longer works. "Sign out
 * everywhere" on one device (a laptop) signs the person out on another (a
 * phone) too. Every page passes PageChecker.check at a phone's and a
 * laptop's width (the laptop's, in the sign-out test, at a laptop's).
 */

const PERSON = 'judy'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

// One Chromium and one bin/bearward for both tests (each starts new contexts): a launch costs a second of CPU or more.
const browser = await launchChromium()
t.teardown(() => browser.close())
const as = await startBrowserAs(brandedWebClient)
t.teardown(() => as.close())

t.test('the account page in Chromium', async (t) => {
  const stablePort = { [`127.0.0.1:${new URL(as.callback).port}`]: '127.0.0.1:5555' }

  await t.test('sign in to the account page, see the application allowed, withdraw it', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())

    await page.goto(`${as.issuer}/account`)
    t.equal(await heading(page), 'Sign in', 'not signed in: the login page first')
    await t.resolves(page.getByText('to see the applications you allowed.').waitFor({ timeout: 10_000 }))
    await checker.check(t, 'account-login')
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    t.equal(new URL(page.url()).pathname, '/account', 'back at the account page')
    t.equal(await heading(page), 'Your account')
    await t.resolves(page.getByText('No application has access to your account.').waitFor({ timeout: 10_000 }))
    await checker.check(t, 'account-empty')

    // The person allows the application, which gets tokens and uses them at the gateway.
    const request = authorizeRequest(as, 'openid profile orders:read')
    await page.goto(request.url)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const code = new URL(page.url()).searchParams.get('code') ?? ''
    const tokens = (await (await exchangeCode(as, code, request.verifier)).json()) as { access_token: string; refresh_token: string }
    const useToken = async (): Promise<number> => (await fetch(`${as.issuer}/orders/1`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status
    t.equal(await useToken(), 200, 'the gateway serves the access token')

    await page.goto(`${as.issuer}/account`)
    t.equal(
      await page
        .getByRole('heading', { level: 3 })
        .allTextContents()
        .then((h) => h.join('|')),
      'Example Web App',
      'the application is listed',
    )
    await t.resolves(page.getByText('Read your orders').waitFor({ timeout: 10_000 }), 'with its scopes in plain words')
    t.match(await page.locator('time').textContent(), /^\d{1,2} [A-Z][a-z]+ \d{4}$/, 'and when it was allowed')
    t.equal(
      await page.locator('img.client-logo').evaluate((img: { complete: boolean; naturalWidth: number }) => img.complete && img.naturalWidth),
      48,
      'its logo loaded',
    )
    // The date changes from run to run; the screenshot shows a fixed one.
    const shownDate = (await page.locator('time').textContent()) ?? ''
    await checker.check(t, 'account', { replace: { ...stablePort, [shownDate]: '23 November 2026' } })

    // The time the server answered the withdrawal (the 303), then the gateway is polled at once.
    const answered = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/account').then(() => performance.now())
    const clicked = performance.now()
    await page.getByRole('button', { name: 'Withdraw access for Example Web App' }).click()
    const withdrawnAt = await answered
    let refusedAt = 0
    const refused = await eventually(
      async () => {
        if ((await useToken()) === 401) refusedAt = performance.now()
        return refusedAt > 0
      },
      1000,
      5,
    )
    const ms = refusedAt - withdrawnAt
    t.ok(refused && ms < 1000, `the gateway refuses the access token within a second of the withdrawal: ${ms.toFixed(1)} ms`)
    t.comment(`click -> withdrawal answered: ${(withdrawnAt - clicked).toFixed(1)} ms; -> gateway refusal: ${ms.toFixed(1)} ms`)
    await page.waitForLoadState()
    t.equal(await heading(page), 'Your account')
    await t.resolves(page.getByRole('status').filter({ hasText: 'You withdrew the access of Example Web App.' }).waitFor({ timeout: 10_000 }))
    await t.resolves(page.getByText('No application has access to your account.').waitFor({ timeout: 10_000 }), 'no longer listed')
    await checker.check(t, 'account-withdrawn')

    const refresh = await fetch(`${as.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('web', DEMO_SECRET) },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
    })
    t.equal(refresh.status, 400)
    t.match(await refresh.json(), { error: 'invalid_grant' }, 'the refresh token no longer works')

    await page.goto(authorizeRequest(as).url)
    t.equal(await heading(page), 'Allow Example Web App to access your account?', 'the application must ask again')
  })
})

t.test('"Sign out everywhere" in Chromium: the other device is signed out too', async (t) => {
  const person = { username: PERSON, password: DEMO_PASSWORD }

  // Two devices: the laptop (desktop width) and the phone, each its own browser context (its own cookies).
  const laptop = await openPage(browser, 'desktop')
  t.teardown(() => laptop.context.close())
  const phone = await openPage(browser, 'phone')
  t.teardown(() => phone.context.close())
  for (const d of [laptop, phone]) {
    await d.page.goto(`${as.issuer}/account`)
    await signIn(d.page, person)
    t.equal(await heading(d.page), 'Your account', 'signed in')
  }

  await t.resolves(laptop.page.getByRole('heading', { name: 'Signed in elsewhere?' }).waitFor({ timeout: 10_000 }))
  await laptop.checker.check(t, 'account-everywhere')
  await submitAndWait(laptop.page, () => laptop.page.getByRole('button', { name: 'Sign out everywhere' }).click())
  t.equal(await heading(laptop.page), 'Signed out')
  await t.resolves(laptop.page.getByRole('status').filter({ hasText: 'You have signed out everywhere' }).waitFor({ timeout: 10_000 }))
  await laptop.checker.check(t, 'signed-out-everywhere')

  await phone.page.reload()
  t.equal(await heading(phone.page), 'Sign in', 'the phone is signed out: its next page is the login page')
  await laptop.page.goto(`${as.issuer}/account`)
  t.equal(await heading(laptop.page), 'Sign in', 'and so is the laptop')
})
