import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { authorizeRequest, exchangeCode, signIn, startBrowserAs, submitAndWait, type BrowserAs } from '../helpers/browser-as.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'

// A real browser on a 2-core machine shared with the rest of the suite:
// more than tap's default per-file timeout.
t.setTimeout(300_000)

/**
 * The authorization code flow as a person does it in Chromium (each page
 * checked at a phone's and a laptop's width): the client's authorize URL,
 * the login page, the consent page, back at the client's real
 * redirect_uri; then the client
 * exchanges the code. Every page of ours passes the checks of
 * PageChecker.check (console, CSP, horizontal scroll, axe) and leaves its
 * screenshot in docs/screenshots.
 */

/** Each test signs in as a person of its own, so no remembered consent or session leaks between them. */
const PERSON = { allow: 'bob', deny: 'carol', keyboard: 'dave' }

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** Where the browser is, as a URL, once it is back at the client. */
function backAtClient(t: Test, as: BrowserAs, page: Page): URL {
  const at = new URL(page.url())
  t.equal(at.origin + at.pathname, as.callback, 'the browser is back at the client redirect_uri')
  return at
}

t.test('the authorization code flow in Chromium', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const as = await startBrowserAs()
  t.teardown(() => as.close())
  // The consent page names where the browser goes next; the client's port
  // changes per run, the screenshot shows a fixed one.
  const stablePort = { [`127.0.0.1:${new URL(as.callback).port}`]: '127.0.0.1:5555' }

  await t.test('allow lands at the client with code, state and iss; the code gives tokens; the remembered consent skips the page next time', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as)
    await page.goto(request.url)
    t.equal(await heading(page), 'Sign in')
    await t.resolves(page.getByText('to continue to Example Web App').waitFor({ timeout: 10_000 }), 'the login page names the application')
    await checker.check(t, 'login')

    await signIn(page, { username: PERSON.allow, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Allow Example Web App to access your account?')
    t.equal(await page.getByRole('listitem').count(), 3, 'one line per requested scope')
    await checker.check(t, 'consent', { replace: stablePort })

    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const back = backAtClient(t, as, page)
    t.equal(back.searchParams.get('state'), request.state, 'state')
    t.equal(back.searchParams.get('iss'), as.issuer, 'iss (RFC 9207)')
    const code = back.searchParams.get('code')
    t.match(code, /^[A-Za-z0-9_-]{20,}$/, 'a code')

    const res = await exchangeCode(as, code ?? '', request.verifier)
    t.equal(res.status, 200, 'the client exchanges the code')
    t.equal(res.headers.get('cache-control'), 'no-store')
    const tokens = (await res.json()) as Record<string, unknown>
    t.match(tokens, { token_type: 'Bearer', access_token: String, refresh_token: String, id_token: String, expires_in: Number })
    t.same(String(tokens.scope).split(' ').sort(), ['openid', 'orders:read', 'profile'], 'the scopes allowed')
    const claims = JSON.parse(Buffer.from(String(tokens.id_token).split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
    t.equal(claims.sub, PERSON.allow, 'the id_token names who signed in')

    // Same browser, same person, same scopes: no login (the session) and
    // no consent page (remembered); straight back to the client.
    const pagesShown: string[] = []
    page.on('response', (r) => {
      if (r.request().isNavigationRequest() && r.status() === 200 && r.url().startsWith(as.issuer)) pagesShown.push(r.url())
    })
    const again = authorizeRequest(as)
    await page.goto(again.url)
    const second = backAtClient(t, as, page)
    t.same(pagesShown, [], 'no page of ours was shown')
    t.equal(second.searchParams.get('state'), again.state)
    t.ok(second.searchParams.get('code'), 'a new code')
  })

  await t.test('deny lands at the client with error=access_denied', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as)
    await page.goto(request.url)
    await signIn(page, { username: PERSON.deny, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Allow Example Web App to access your account?')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Deny' }).click())
    const back = backAtClient(t, as, page)
    t.equal(back.searchParams.get('error'), 'access_denied')
    t.equal(back.searchParams.get('state'), request.state, 'state')
    t.equal(back.searchParams.get('iss'), as.issuer, 'iss')
    t.equal(back.searchParams.get('code'), null, 'no code')
    t.same(checker.consoleErrors, [], 'no console error on the way')
  })

  await t.test('a wrong password shows a message and keeps the username', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    await page.goto(authorizeRequest(as).url)
    // alice never allows anything in this file, so the consent page follows.
    await signIn(page, { username: 'alice', password: 'not the password' })
    t.equal(await heading(page), 'Sign in', 'still the login page')
    t.match(await page.getByRole('alert').textContent(), /username or password/i, 'a message says what went wrong')
    t.equal(await page.getByLabel('Username').inputValue(), 'alice', 'the username is kept')
    t.equal(await page.getByLabel('Password').inputValue(), '', 'the password is not sent back')
    t.match(
      await checker.focused(),
      { id: 'password', description: 'The username or password is incorrect.' },
      'the focus is in the password field, which carries the message for a screen reader',
    )
    await checker.check(t, 'login-error')

    await page.getByLabel('Password').fill(DEMO_PASSWORD)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign in' }).click())
    t.equal(await heading(page), 'Allow Example Web App to access your account?', 'the right password then signs in')
  })

  // Once, at the phone's width: the stylesheet has no rule between 390 and
  // 1280 px, so the Tab order and the focus rings are the same at both.
  await t.test('the whole flow with the keyboard alone (Tab, typing, Enter, Space)', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const request = authorizeRequest(as)
    await page.goto(request.url)
    t.match(await checker.focusedOnArrival(), { tag: 'input', id: 'username' }, 'the username field has the focus on arrival (autofocus)')
    await page.keyboard.type(PERSON.keyboard)
    await page.keyboard.press('Tab')
    t.match(await checker.focused(), { tag: 'input', id: 'password', indicated: true }, 'Tab: the password field, with a visible focus ring')
    await page.keyboard.type(DEMO_PASSWORD)
    await page.keyboard.press('Tab')
    t.match(await checker.focused(), { tag: 'button', text: 'Sign in', indicated: true }, 'Tab: the Sign in button, visibly focused')
    await submitAndWait(page, () => page.keyboard.press('Enter'))
    t.equal(await heading(page), 'Allow Example Web App to access your account?', 'Enter signed in')

    // Tab from the top of the consent page until Allow; every stop must show its focus.
    let focused = await checker.focused()
    for (let stops = 0; stops < 10 && !(focused.tag === 'button' && focused.text === 'Allow'); stops++) {
      await page.keyboard.press('Tab')
      focused = await checker.focused()
      t.ok(focused.indicated, `Tab: ${focused.tag} "${focused.text}" shows that it has the focus`)
    }
    t.match(focused, { tag: 'button', text: 'Allow' }, 'Tab reaches Allow')
    await submitAndWait(page, () => page.keyboard.press('Space'))
    const back = backAtClient(t, as, page)
    t.equal(back.searchParams.get('state'), request.state, 'Space on Allow: back at the client with the state')
    const res = await exchangeCode(as, back.searchParams.get('code') ?? '', request.verifier)
    t.equal(res.status, 200, 'and a code that gives tokens')
    t.same(checker.consoleErrors, [], 'no console error on the way')
  })
})
