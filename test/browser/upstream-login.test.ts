import t from 'tap'
import type { Page } from 'playwright-core'
import type { Test } from 'tap'
import { launchChromium, openPage, type PageChecker } from '../helpers/chromium.js'
import { authorizeRequest, exchangeCode, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
import { OP_CLIENT_SECRET, openTestOp, startRogueOp } from '../helpers/upstream-op.js'
import { freePort } from '../helpers/http.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(240_000)

/**
 * Signing in with an upstream identity provider in Chromium: `bin/bearward`
 * with a provider that is node-oidc-provider (its dev login and consent
 * pages). Our pages (the login page with the provider button, the refusal
 * page) pass PageChecker's checks, the flows' pages each at a phone's and a
 * laptop's width, and leave their screenshots; the provider's own pages are
 * not ours to check.
 */

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** At the provider's dev pages: sign in as `login` (any password), then continue on its consent page. */
async function signInAtProvider(page: Page, checker: PageChecker, opIssuer: string, ours: string, login: string): Promise<void> {
  await page.locator('input[name="login"]').fill(login)
  await page.locator('input[name="password"]').fill('any password')
  await submitAndWait(page, () => page.getByRole('button', { name: 'Sign-in' }).click())
  await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
  forgetProviderNoise(checker, opIssuer, ours)
}

/**
 * What the provider's own pages logged (its web fonts, unreachable here) is
 * not about our pages; anything logged at our origin is kept for the next check.
 */
function forgetProviderNoise(checker: PageChecker, opIssuer: string, ours: string): void {
  const kept = checker.consoleErrors.filter((e) => e.includes(`(at ${ours}/`))
  checker.consoleErrors.splice(0, checker.consoleErrors.length, ...kept)
  const ourCsp = checker.cspViolations.filter((v) => !v.page.startsWith(`${opIssuer}/`))
  checker.cspViolations.splice(0, checker.cspViolations.length, ...ourCsp)
}

t.test('signing in with an identity provider in Chromium', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const op = await openTestOp()
  t.teardown(op.stop)
  const rogue = await startRogueOp()
  t.teardown(rogue.stop)
  const downIssuer = `http://127.0.0.1:${await freePort()}`
  let issuer = ''
  const as = await startBrowserAs((config) => {
    issuer = String(config.public_url)
    config.authorization_server.identity_providers = [
      {
        id: 'corp',
        name: 'Corp SSO',
        issuer: op.issuer,
        client_id: 'bearward',
        client_secret: OP_CLIENT_SECRET,
        allowed: { email_domains: ['example.com'] },
      },
      { id: 'rogue', name: 'Rogue SSO', issuer: rogue.issuer, client_id: 'bearward', client_secret: 'rogue-secret' },
      { id: 'down', name: 'Down SSO', issuer: downIssuer, client_id: 'bearward', client_secret: 'down-secret' },
    ]
  })
  t.teardown(() => as.close())
  op.serve([`${issuer}/login/upstream/corp/callback`])

  const login = 'pat'
  let firstSub = ''
  await t.test(`Continue with Corp SSO, sign in there, consent here, the client gets tokens for corp:${login}`, async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as, 'openid profile email')
    await page.goto(request.url)
    t.equal(await heading(page), 'Sign in')
    await t.resolves(page.getByRole('button', { name: 'Continue with Corp SSO' }).waitFor({ timeout: 10_000 }), 'the provider button is there')
    await checker.check(t, 'login-providers')

    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue with Corp SSO' }).click())
    t.equal(new URL(page.url()).origin, op.issuer, 'at the provider')
    await signInAtProvider(page, checker, op.issuer, as.issuer, login)
    await page.waitForURL((u) => u.origin === new URL(as.issuer).origin && u.pathname === '/authorize')
    t.equal(await heading(page), 'Allow Example Web App to access your account?')
    await t.resolves(page.getByText(`Person ${login}`).first().waitFor({ timeout: 10_000 }), 'consent names the upstream person')
    t.same(checker.consoleErrors.splice(0), [], 'no console error on our pages on the way back')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())

    const back = new URL(page.url())
    t.equal(back.origin + back.pathname, as.callback, 'back at the client')
    t.equal(back.searchParams.get('state'), request.state)
    const res = await exchangeCode(as, back.searchParams.get('code') ?? '', request.verifier)
    t.equal(res.status, 200)
    const tokens = (await res.json()) as Record<string, unknown>
    const claims = JSON.parse(Buffer.from(String(tokens.id_token).split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
    t.equal(claims.sub, `corp:${login}`)
    t.equal(claims.email, `${login}@example.com`)
    firstSub = String(claims.sub)
  })

  await t.test('desktop: the same person signs in again (a new browser) and gets the same sub', async (t) => {
    const { context, page, checker } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    const request = authorizeRequest(as, 'openid email')
    await page.goto(request.url)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue with Corp SSO' }).click())
    await signInAtProvider(page, checker, op.issuer, as.issuer, 'pat')
    // Consent to a subset of what pat allowed before is remembered: straight back to the client.
    await page.waitForURL((u) => u.origin + u.pathname === as.callback)
    const back = new URL(page.url())
    const res = await exchangeCode(as, back.searchParams.get('code') ?? '', request.verifier)
    const tokens = (await res.json()) as Record<string, unknown>
    const claims = JSON.parse(Buffer.from(String(tokens.id_token).split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
    t.equal(claims.sub, firstSub, 'the same sub as at the first sign-in')
  })

  /** The page a failed sign-in ends on: ours, with no session and no code for the client. */
  const failedAt = async (t: Test, page: Page, title: string): Promise<void> => {
    t.equal(await heading(page), title)
    t.equal(new URL(page.url()).origin, new URL(as.issuer).origin, 'on our page, not at the client')
    t.equal((await page.context().cookies()).filter((c) => c.name === 'bw_session').length, 0, 'no session')
  }

  await t.test('desktop: the person cancels at the provider: a page that says so, and Back to sign-in starts over', async (t) => {
    const { context, page, checker } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    await page.goto(authorizeRequest(as, 'openid').url)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue with Corp SSO' }).click())
    await submitAndWait(page, () => page.getByRole('link', { name: '[ Cancel ]' }).click())
    await page.waitForURL((u) => u.pathname === '/login/upstream/corp/callback')
    t.equal(new URL(page.url()).searchParams.get('error'), 'access_denied', 'the provider sent the person back with access_denied')
    await failedAt(t, page, 'Corp SSO did not sign you in')
    t.match(await page.locator('main').innerText(), 'the sign-in was cancelled or refused there')
    forgetProviderNoise(checker, op.issuer, as.issuer)
    await checker.check(t, 'upstream-cancelled')
    await submitAndWait(page, () => page.getByRole('link', { name: 'Back to sign-in' }).click())
    t.equal(await page.getByRole('button', { name: 'Continue with Corp SSO' }).count(), 1, 'back on the sign-in page with the provider button')
  })

  await t.test('desktop: a tampered state ends on a page, nothing issued', async (t) => {
    const { context, page, checker } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    // Playwright routes only the first request of a redirect chain, and the provider reaches
    // our callback by redirects after its consent form: route that form's POST, follow the
    // provider's redirects with the context's own cookies, and send the browser to the
    // callback with its state altered.
    await page.route(
      (u) => u.origin === op.issuer && /^\/interaction\/[^/]+$/.test(u.pathname),
      async (route) => {
        const request = route.request()
        if (request.method() !== 'POST' || !(request.postData() ?? '').includes('prompt=consent')) return route.continue()
        let res = await route.fetch({ maxRedirects: 0 })
        for (let i = 0; i < 5; i++) {
          const location = res.headers().location
          if (location === undefined) break
          const next = new URL(location, op.issuer)
          if (next.pathname === '/login/upstream/corp/callback') {
            next.searchParams.set('state', `${next.searchParams.get('state') ?? ''}x`)
            return route.fulfill({ status: 303, headers: { location: next.href } })
          }
          res = await context.request.get(next.href, { maxRedirects: 0 })
        }
        return route.fulfill({ response: res })
      },
    )
    await page.goto(authorizeRequest(as, 'openid').url)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue with Corp SSO' }).click())
    await signInAtProvider(page, checker, op.issuer, as.issuer, 'pat')
    await page.waitForURL((u) => u.pathname === '/login/upstream/corp/callback')
    await failedAt(t, page, 'This sign-in cannot be completed')
    await checker.check(t, 'upstream-state-tampered')
  })

  for (const mode of ['wrong-nonce', 'wrong-iss', 'wrong-aud'] as const) {
    await t.test(`desktop: a rogue provider's id_token with the ${mode.slice(6)} wrong ends on a page, nothing issued`, async (t) => {
      const { context, page } = await openPage(browser, 'desktop')
      t.teardown(() => context.close())
      rogue.mode = mode
      await page.goto(authorizeRequest(as, 'openid').url)
      await submitAndWait(page, () => page.getByRole('button', { name: 'Continue with Rogue SSO' }).click())
      await page.waitForURL((u) => u.pathname === '/login/upstream/rogue/callback')
      await failedAt(t, page, 'This sign-in could not be verified')
    })
  }

  await t.test('desktop: a provider that is down ends on a page, nothing issued', async (t) => {
    const { context, page, checker } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    await page.goto(authorizeRequest(as, 'openid').url)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue with Down SSO' }).click())
    await failedAt(t, page, 'Down SSO is not available')
    await checker.check(t, 'upstream-provider-down')
  })

  await t.test('a person outside allowed sees why, and the client gets access_denied', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as, 'openid profile email')
    await page.goto(request.url)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue with Corp SSO' }).click())
    await signInAtProvider(page, checker, op.issuer, as.issuer, 'sam@other.org')
    await page.waitForURL((u) => u.pathname === '/login/upstream/corp/callback')
    t.equal(await heading(page), 'You cannot sign in here')
    await t.resolves(page.getByText('Your Corp SSO account (sam@other.org) is not allowed').waitFor({ timeout: 10_000 }))
    await checker.check(t, 'upstream-not-allowed')
    t.equal(await context.cookies().then((cs) => cs.filter((c) => c.name === 'bw_session').length), 0, 'no session')

    await submitAndWait(page, () => page.getByRole('link', { name: 'Return to Example Web App' }).click())
    const back = new URL(page.url())
    t.equal(back.origin + back.pathname, as.callback)
    t.equal(back.searchParams.get('error'), 'access_denied')
    t.equal(back.searchParams.get('state'), request.state)
    t.notOk(back.searchParams.has('code'))
  })

  await t.test('desktop: a page served at the callback path (405 for a POST) loads the stylesheet', async (t) => {
    const { context, page, checker } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    const callback = `${as.issuer}/login/upstream/corp/callback`
    // A browser only POSTs here if something sent it; the route makes this navigation that POST.
    await page.route(callback, (route) => route.continue({ method: 'POST', postData: '' }))
    const res = await page.goto(callback)
    t.equal(res?.status(), 405)
    t.equal(await heading(page), 'Method not allowed')
    const rules = (await page.evaluate('document.styleSheets.length === 1 ? document.styleSheets[0].cssRules.length : 0')) as number
    t.ok(rules > 0, `the one stylesheet loaded and applies (${rules} rules)`)
    await checker.check(t, 'upstream-callback-405')
  })
})
