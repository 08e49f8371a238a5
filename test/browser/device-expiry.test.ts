import t from 'tap'
import type { Page } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { startBrowserAs } from '../helpers/browser-as.js'
import { pollUntilDecided, startDevice } from '../helpers/device-client.js'

/**
 * An expired device code (RFC 8628 3.5 expired_token) in Chromium (the page
 * checked at both widths): the person who opens the link after the expiry
 * is told so. A bearward of its own, with a 2-second device code lifetime.
 */

// A real browser, and real waits for the expiry, on a 2-core machine shared with
// the rest of the suite: more than tap's default per-file timeout.
t.setTimeout(300_000)

/** The one user code the screenshots show, in place of the random one. */
const SHOWN_CODE = 'WDJB-MJHT'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

t.test('an expired device code gets a clear message in Chromium', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const as = await startBrowserAs((config) => {
    config.authorization_server.device = { ttl: '2s', interval: '1s' }
  })
  t.teardown(() => as.close())
  // The code expires while the client polls (the binary has no clock to move:
  // the expiry is awaited through the protocol, not with a fixed sleep).
  const start = await startDevice(as.issuer)
  const answer = await pollUntilDecided(as.issuer, start)
  t.equal(answer.status, 400)
  t.equal(answer.body.error, 'expired_token', 'the client is told the code expired')
  const { context, page, checker } = await openPage(browser)
  await page.goto(start.verification_uri_complete)
  t.equal(await heading(page), 'Connect a device', 'the code page')
  t.match(await page.getByRole('alert').textContent(), /expired or is not valid/, 'a message says the code expired')
  await checker.check(t, 'device-code-expired', { replace: { [start.user_code]: SHOWN_CODE } })
  await context.close()
})
