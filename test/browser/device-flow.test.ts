import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { launchChromium, openPage, type PageChecker } from '../helpers/chromium.js'
import { signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
import { pollUntilDecided, startDevice, type DeviceStart } from '../helpers/device-client.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'

// A real browser on a 2-core machine shared with the rest of the suite:
// more than tap's default per-file timeout.
t.setTimeout(300_000)

/**
 * The device authorization grant (RFC 8628) with a person in Chromium (each
 * page checked at a phone's and a laptop's width): a command-line client asks for a code and
 * polls; the person opens verification_uri_complete, or verification_uri and
 * types the code (lower case, with and without the dash), signs in, checks
 * the code and allows or denies. Unknown and used codes get a clear message
 * (expired ones: device-expiry.test.ts). Every page passes PageChecker.check and leaves its screenshot.
 */

/** The one user code the screenshots show, in place of the random one. */
const SHOWN_CODE = 'WDJB-MJHT'

const PERSON = 'heidi'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** On the code entry page: focus the field, type like a person, press Continue. */
async function typeCode(page: Page, typed: string): Promise<void> {
  await page.getByLabel('Code').click()
  await page.keyboard.type(typed)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
}

/** The confirmation page for `start` (signed in): check it shows the code, then press `button`. */
async function decide(t: Test, page: Page, checker: PageChecker, start: DeviceStart, button: 'Allow' | 'Deny', shot?: string): Promise<void> {
  t.equal(await heading(page), 'Connect a device to your account?', 'the confirmation page')
  t.equal(await page.getByLabel('Device code').textContent(), start.user_code, 'it shows the code to compare with the device')
  if (shot !== undefined) await checker.check(t, shot, { replace: { [start.user_code]: SHOWN_CODE } })
  await submitAndWait(page, () => page.getByRole('button', { name: button }).click())
}

/** What the client gets once the person allowed. */
function assertTokens(t: Test, answer: { status: number; body: Record<string, unknown> }): void {
  t.equal(answer.status, 200, 'the polling client gets tokens')
  t.match(answer.body, { token_type: 'Bearer', access_token: String, refresh_token: String, id_token: String })
}

t.test('the device flow in Chromium', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const as = await startBrowserAs((config) => {
    config.authorization_server.device = { interval: '1s' }
  })
  t.teardown(() => as.close())

  await t.test('verification_uri_complete, sign in, allow: tokens; the used code is refused', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const start = await startDevice(as.issuer)
    const polled = pollUntilDecided(as.issuer, start)
    await page.goto(start.verification_uri_complete)
    t.equal(await heading(page), 'Sign in', 'first the login page')
    t.match(await page.locator('.lead').textContent(), start.user_code, 'it names the code being connected')
    await checker.check(t, 'device-login', { replace: { [start.user_code]: SHOWN_CODE } })
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    await decide(t, page, checker, start, 'Allow', 'device-consent')
    t.equal(await heading(page), 'Device connected')
    await checker.check(t, 'device-done')
    assertTokens(t, await polled)

    await page.goto(start.verification_uri_complete)
    t.equal(await heading(page), 'Code already used', 'opening the link again says the code was used')
    await checker.check(t, 'device-code-used')
  })

  await t.test('verification_uri, the code typed in lower case with and without the dash', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const withDash = await startDevice(as.issuer)
    const polledWithDash = pollUntilDecided(as.issuer, withDash)
    await page.goto(withDash.verification_uri)
    t.equal(await heading(page), 'Connect a device')
    await checker.check(t, 'device-entry')
    await typeCode(page, withDash.user_code.toLowerCase())
    t.equal(await heading(page), 'Sign in', 'a known code: the login page')
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    await decide(t, page, checker, withDash, 'Allow')
    t.equal(await heading(page), 'Device connected')
    assertTokens(t, await polledWithDash)

    const noDash = await startDevice(as.issuer)
    const polledNoDash = pollUntilDecided(as.issuer, noDash)
    await page.goto(noDash.verification_uri)
    await typeCode(page, noDash.user_code.replace('-', '').toLowerCase())
    await decide(t, page, checker, noDash, 'Allow')
    t.equal(await heading(page), 'Device connected', 'signed in already: straight to the confirmation, then connected')
    assertTokens(t, await polledNoDash)
  })

  await t.test('deny; an unknown code gets a clear message', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const start = await startDevice(as.issuer)
    const polled = pollUntilDecided(as.issuer, start)
    await page.goto(start.verification_uri_complete)
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    await decide(t, page, checker, start, 'Deny')
    t.equal(await heading(page), 'Access denied')
    await checker.check(t, 'device-denied')
    const answer = await polled
    t.equal(answer.status, 400)
    t.equal(answer.body.error, 'access_denied', 'the polling client learns the person said no')

    await page.goto(start.verification_uri)
    await typeCode(page, 'bcdf-ghjk')
    t.equal(await heading(page), 'Connect a device', 'still the code page')
    t.match(await page.getByRole('alert').textContent(), /expired or is not valid/, 'a message says the code is not valid')
    t.equal(await page.getByLabel('Code').inputValue(), 'bcdf-ghjk', 'what was typed stays, to correct it')
    t.match(await checker.focused(), { id: 'user_code', description: /expired or is not valid/ }, 'the focus is in the code field, which carries the message')
    t.equal(await page.getByLabel('Code').getAttribute('aria-invalid'), 'true', 'marked invalid')
    await checker.check(t, 'device-code-unknown')
  })
})
