/**
 * RFC 9396 on the consent page, in Chromium: the requested authorization
 * details are shown per type under a heading, as JSON text. A value holding
 * markup stays text (no element is made, no script runs), and bidi controls
 * are shown as escapes, never applied, so they cannot reorder what the
 * person reads. The page passes the checks every page passes (CSP, axe, no
 * horizontal scroll).
 */
import t from 'tap'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { authorizeRequest, signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
import { DEMO_PASSWORD, demoClient } from '../helpers/as-config.js'

t.setTimeout(300_000)

const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
/** U+202E RIGHT-TO-LEFT OVERRIDE: "Merchant \u202Egnp.exe" reads as "Merchant exe.png" when applied. */
const BIDI = 'Merchant \u202egnp.exe\u2066x\u2069'

t.test('the consent page shows authorization details as escaped, isolated text', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const as = await startBrowserAs((config) => {
    config.authorization_server.authorization_details_types = {
      payment_initiation: { schema: { type: 'object', required: ['instructedAmount'] } },
      account_information: { schema: { type: 'object' } },
    }
    demoClient(config, 'web').authorization_details_types = ['payment_initiation', 'account_information']
  })
  t.teardown(() => as.close())

  const { context, page, checker } = await openPage(browser, 'phone')
  t.teardown(() => context.close())
  const details = [
    { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '12.00' }, creditorName: BIDI, remittanceInformationUnstructured: HOSTILE },
    { type: 'account_information', note: 'x'.repeat(400) },
  ]
  const request = authorizeRequest(as, 'orders:read', { authorization_details: JSON.stringify(details) })
  await page.goto(request.url)
  await signIn(page, { username: 'judy', password: DEMO_PASSWORD })
  t.equal(await page.locator('h1').textContent(), 'Allow Example Web App to access your account?')

  const section = page.locator('section.authorization-details')
  t.same(await section.locator('h2').allTextContents(), ['payment_initiation', 'account_information'], 'a heading per type')
  t.equal(await section.locator('img, script').count(), 0, 'the markup in a value made no element')
  t.equal(await page.evaluate('globalThis.__pwned'), undefined, 'no script ran')
  const texts = await section.locator('pre').allTextContents()
  t.match(texts[0], HOSTILE.replaceAll('"', '\\"'), 'the markup is shown as text (a JSON string)')
  t.match(texts[0], 'Merchant \\u202egnp.exe\\u2066x\\u2069', 'bidi controls are shown as escapes')
  const body = (await page.locator('body').textContent()) ?? ''
  t.notOk(/[\u202a-\u202e\u2066-\u2069]/.test(body), 'no bidi control reaches the page text')
  t.match(texts[1], /"x{400}"/, 'a long value is shown whole: what is cut would be approved unseen')
  t.equal(await section.locator('pre[dir="ltr"] > bdi').count(), 2, 'each entry isolated, left to right')
  t.notMatch(texts[0], '\\u000a', 'the indentation keeps its line breaks')
  t.match(texts[0], '\n  "type": "payment_initiation"', 'indented JSON')
  await checker.check(t, 'consent-authorization-details', { replace: { [`127.0.0.1:${new URL(as.callback).port}`]: '127.0.0.1:5555' } })

  await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
  const back = new URL(page.url())
  t.equal(back.origin + back.pathname, as.callback, 'back at the client')
  t.ok(back.searchParams.get('code'), 'with a code')
})
