import t from 'tap'
import type { Page } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { authorizeRequest, exchangeCode, signIn, startBrowserAs, submitAndWait, type BrowserAs } from '../helpers/browser-as.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { brandedWebClient as branded, logoDataUrl } from '../helpers/logo.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * What people expect around signing in, in Chromium (each page checked at a
 * phone's and a laptop's width): the consent page shows the application's
 * logo, name, privacy policy and terms and who is signed in; "Not you?"
 * switches person without losing the application's request; an application
 * signs the person out (OpenID Connect RP-Initiated Logout) and gets them
 * back with its state; a sign-out that cannot be tied to the session is
 * confirmed on a page, so a cross-site link signs nobody out. Every page
 * passes PageChecker.check.
 */

const PERSON = { consent: 'bob', other: 'carol', hinted: 'dave', confirm: 'erin' }

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** Signed in now? Opening the authorize URL shows the login page when not. */
async function signedIn(page: Page, as: BrowserAs): Promise<boolean> {
  await page.goto(authorizeRequest(as).url)
  return (await heading(page)) !== 'Sign in'
}

t.test('consent, switching person, and signing out in Chromium', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const as = await startBrowserAs(branded)
  t.teardown(() => as.close())
  const clientOrigin = new URL(as.callback).origin
  const bye = `${clientOrigin}/bye`
  const stablePort = { [`127.0.0.1:${new URL(as.callback).port}`]: '127.0.0.1:5555' }

  await t.test('consent shows the logo, name, policy and terms and who is signed in; "Not you?" keeps the request', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as)
    await page.goto(request.url)
    await signIn(page, { username: PERSON.consent, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Allow Example Web App to access your account?')
    const logo = page.locator('img.client-logo')
    t.equal(await logo.getAttribute('src'), logoDataUrl(), 'the logo is shown')
    t.equal(
      await logo.evaluate((img: { complete: boolean; naturalWidth: number }) => img.complete && img.naturalWidth),
      48,
      'and it loaded, under the page CSP',
    )
    t.equal(await page.getByRole('link', { name: 'privacy policy' }).getAttribute('href'), 'https://app.example.com/privacy')
    t.equal(await page.getByRole('link', { name: 'terms of service' }).getAttribute('href'), 'https://app.example.com/terms')
    await t.resolves(page.getByText(`Signed in as ${PERSON.consent}.`).waitFor({ timeout: 10_000 }), 'who is signed in')
    await checker.check(t, 'consent-branded', { replace: stablePort })

    await submitAndWait(page, () => page.getByRole('button', { name: 'Not you? Use another account' }).click())
    t.equal(await heading(page), 'Sign in', 'signed out, at the login page')
    await t.resolves(page.getByText('to continue to Example Web App').waitFor({ timeout: 10_000 }), 'for the same application')
    await signIn(page, { username: PERSON.other, password: DEMO_PASSWORD })
    await t.resolves(page.getByText(`Signed in as ${PERSON.other}.`).waitFor({ timeout: 10_000 }), 'now the other person')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const back = new URL(page.url())
    t.equal(back.origin + back.pathname, as.callback, 'back at the client')
    t.equal(back.searchParams.get('state'), request.state, 'with the state of the request made before switching')
    const tokens = (await (await exchangeCode(as, back.searchParams.get('code') ?? '', request.verifier)).json()) as { id_token: string }
    const claims = JSON.parse(Buffer.from(tokens.id_token.split('.')[1] ?? '', 'base64url').toString()) as { sub: string }
    t.equal(claims.sub, PERSON.other, 'the code is for the person who switched in')
  })

  await t.test('the application signs the person out with its ID token and gets them back with its state', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as)
    await page.goto(request.url)
    await signIn(page, { username: PERSON.hinted, password: DEMO_PASSWORD })
    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const code = new URL(page.url()).searchParams.get('code') ?? ''
    const tokens = (await (await exchangeCode(as, code, request.verifier)).json()) as { id_token: string }

    const logout = `${as.issuer}/logout?${new URLSearchParams({ id_token_hint: tokens.id_token, post_logout_redirect_uri: bye, state: 'bye-state' })}`
    await page.goto(logout)
    const at = new URL(page.url())
    t.equal(at.origin + at.pathname, bye, 'straight back to the post-logout redirect URI')
    t.equal(at.searchParams.get('state'), 'bye-state', 'with the state')
    t.equal(await signedIn(page, as), false, 'signed out: the next authorization asks to sign in')
    t.same(checker.consoleErrors, [], 'no console error on the way')
  })

  await t.test('without an ID token the person confirms; a cross-site link signs nobody out', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    await page.goto(authorizeRequest(as).url)
    await signIn(page, { username: PERSON.confirm, password: DEMO_PASSWORD })

    // Another site (localhost is a different site from 127.0.0.1) sends the browser to /logout.
    const logout = `${as.issuer}/logout?${new URLSearchParams({ client_id: 'web', post_logout_redirect_uri: bye, state: 'st-9' })}`
    await page.goto(`http://localhost:${new URL(as.callback).port}/elsewhere`)
    await submitAndWait(page, () => page.evaluate(`location.href = ${JSON.stringify(logout)}`).then(() => undefined))
    t.equal(await heading(page), 'Sign out?', 'the confirmation page, not a sign-out')
    await t.resolves(page.getByText('Example Web App asks to sign you out.').waitFor({ timeout: 10_000 }))
    await t.resolves(page.getByText(`You are signed in as ${PERSON.confirm}.`).waitFor({ timeout: 10_000 }))
    await checker.check(t, 'logout-confirm')

    await submitAndWait(page, () => page.getByRole('button', { name: 'Stay signed in' }).click())
    const stayed = new URL(page.url())
    t.equal(stayed.origin + stayed.pathname, bye, '"Stay signed in" goes back to the application')
    t.equal(await signedIn(page, as), true, 'and the person is still signed in')

    await page.goto(logout)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign out', exact: true }).click())
    const done = new URL(page.url())
    t.equal(done.origin + done.pathname, bye)
    t.equal(done.searchParams.get('state'), 'st-9', 'back with the state')
    t.equal(await signedIn(page, as), false, 'signed out')
  })

  await t.test('a person who came directly signs out on the plain sign-out page', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    await page.goto(authorizeRequest(as).url)
    await signIn(page, { username: 'alice', password: DEMO_PASSWORD })
    await page.goto(`${as.issuer}/logout`)
    t.equal(await heading(page), 'Sign out?')
    await t.resolves(page.getByText('You are signed in as Alice Example.').waitFor({ timeout: 10_000 }), 'the name claim')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign out', exact: true }).click())
    t.equal(await heading(page), 'Signed out')
    await checker.check(t, 'signed-out')
    t.equal(await signedIn(page, as), false)
  })
})
