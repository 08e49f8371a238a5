/**
 * RFC 9396 on the consent page and the account page, in Chromium: the
 * requested (then approved) authorization details are shown per type under a
 * heading, as JSON text. A value holding markup stays text (no element is
 * made, no script runs), and bidi controls are shown as escapes, never
 * applied, so they cannot reorder what the person reads. The pages pass the
 * checks every page passes (CSP, axe, no horizontal scroll): the consent
 * page at a phone's width, the account page checked at both a phone's and a
 * laptop's width.
 */
import t from 'tap'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { authorizeRequest, exchangeCode, signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
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

const PERSON = 'leo'

t.test('the account page lists the authorization details a person approved, escaped and isolated', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const as = await startBrowserAs((config) => {
    config.authorization_server.authorization_details_types = { payment_initiation: { schema: { type: 'object', required: ['instructedAmount'] } } }
    demoClient(config, 'web').authorization_details_types = ['payment_initiation']
  })
  t.teardown(() => as.close())
  const stablePort = { [`127.0.0.1:${new URL(as.callback).port}`]: '127.0.0.1:5555' }

  await t.test('approved on the consent page, listed under the application on the account page', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const details = [
      { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '12.00' }, creditorName: BIDI, remittanceInformationUnstructured: HOSTILE },
    ]
    const request = authorizeRequest(as, 'orders:read', { authorization_details: JSON.stringify(details) })
    await page.goto(request.url)
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const code = new URL(page.url()).searchParams.get('code') ?? ''
    const tokens = (await (await exchangeCode(as, code, request.verifier)).json()) as { authorization_details?: unknown }
    t.same(tokens.authorization_details, details, 'the grant holds the details')

    await page.goto(`${as.issuer}/account`)
    const section = page.getByRole('region', { name: 'What you approved in detail' })
    await t.resolves(section.waitFor({ timeout: 10_000 }), 'the application lists what was approved in detail')
    t.same(await section.locator('h4').allTextContents(), ['payment_initiation'], 'a heading per type')
    t.equal(await section.locator('img, script').count(), 0, 'the markup in a value made no element')
    t.equal(await page.evaluate('globalThis.__pwned'), undefined, 'no script ran')
    const texts = await section.locator('pre').allTextContents()
    t.equal(texts.length, 1, 'each approved entry once')
    t.match(texts[0], HOSTILE.replaceAll('"', '\\"'), 'the markup is shown as text (a JSON string)')
    t.match(texts[0], 'Merchant \\u202egnp.exe\\u2066x\\u2069', 'bidi controls are shown as escapes')
    t.match(texts[0], '"amount": "12.00"')
    t.notOk(/[\u202a-\u202e\u2066-\u2069]/.test((await page.locator('body').textContent()) ?? ''), 'no bidi control reaches the page text')
    t.equal(await section.locator('pre[dir="ltr"] > bdi').count(), 1, 'isolated, left to right')
    const shownDate = (await page.locator('time').first().textContent()) ?? ''
    await checker.check(t, 'account-authorization-details', { replace: { ...stablePort, [shownDate]: '23 November 2026' } })

    await submitAndWait(page, () => page.getByRole('button', { name: 'Withdraw access for Example Web App' }).click())
    t.equal(await page.getByRole('region', { name: 'What you approved in detail' }).count(), 0, 'withdrawn: the details are gone with the grant')
  })
})
