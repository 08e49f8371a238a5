import t from 'tap'
import type { Page } from 'playwright-core'
import QRCode from 'qrcode'
import { DEMO_PASSWORD, demoHashes } from '../helpers/as-config.js'
import { signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { codeAt, nextCode } from '../helpers/totp-code.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * An authenticator app in Chromium, each page checked at a phone's and a
 * laptop's width: a person sets it up on the account page (the key read from
 * the page, the code computed here with otpauth), keeps the recovery codes
 * shown once, signs out, signs in with the password and a code, then with the
 * password and a recovery code. Every page passes PageChecker.check (axe,
 * CSP, console) and is photographed for docs/screenshots/.
 */

const PERSON = 'nora'
/** What the screenshots show instead of the random key, its QR code and the recovery codes. */
const SHOWN_KEY = 'JBSW Y3DP EHPK 3PXP JBSW Y3DP EHPK 3PXP'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

t.test('an authenticator app in Chromium', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const { passwordHash } = await demoHashes()
  const as = await startBrowserAs((config) => {
    config.authorization_server.users.unshift({ username: PERSON, password_hash: passwordHash })
  })
  t.teardown(() => as.close())
  const fixedQr = await QRCode.toString(`otpauth://totp/bearward:person?secret=${SHOWN_KEY.replaceAll(' ', '')}&issuer=bearward`, { type: 'svg', margin: 2 })

  await t.test('set up, sign in with a code, sign in with a recovery code', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())

    await page.goto(`${as.issuer}/account`)
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Your account')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Set up an authenticator app' }).click())
    const shownKey = (await page.locator('#totp-secret').textContent()) ?? ''
    const secret = shownKey.replaceAll(' ', '')
    t.match(secret, /^[A-Z2-7]{32}$/, 'the key in text')
    t.equal(await page.locator('.qr svg').count(), 1, 'and as a QR code')
    // The screenshot shows a fixed key and its QR code (the DOM only; the page's own are random).
    const fixed = fixedQr.replace('<svg ', '<svg role="img" aria-label="QR code for your authenticator app" ')
    await page.evaluate(`document.querySelector('.qr svg').outerHTML = ${JSON.stringify(fixed)}`)
    await checker.check(t, 'totp-setup', { replace: { [shownKey]: SHOWN_KEY } })

    const first = codeAt(secret, Date.now())
    await page.getByLabel('Code from the app').fill(first)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Turn on' }).click())
    t.equal(await heading(page), 'Your recovery codes')
    const codes = await page.locator('.recovery-codes code').allTextContents()
    t.equal(codes.length, 10, 'ten recovery codes')
    const fixedCodes = Object.fromEntries(codes.map((c, i) => [c, `abcde-fgh${'jkmnpqrstu'[i]}${i}`.slice(0, 11)]))
    await checker.check(t, 'totp-recovery-codes', { replace: fixedCodes })

    await page.goto(`${as.issuer}/account`)
    await t.resolves(page.getByText('10 of 10 recovery codes unused.').waitFor({ timeout: 10_000 }))
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign out', exact: true }).click())

    // The password, then a code from the app.
    await page.goto(`${as.issuer}/account`)
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Enter your code', 'the password alone is not enough')
    await checker.check(t, 'totp-code')
    await page.getByLabel('Code', { exact: true }).fill('000000' === first ? '111111' : '000000')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
    await t.resolves(page.getByText('That code is not right.').waitFor({ timeout: 10_000 }), 'a wrong code is refused')
    await checker.check(t, 'totp-code-wrong')
    const second = nextCode(secret, first)
    await page.getByLabel('Code', { exact: true }).fill(second)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
    t.equal(await heading(page), 'Your account', 'signed in')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign out', exact: true }).click())

    // The password, then a recovery code.
    await page.goto(`${as.issuer}/account`)
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    await page.getByLabel('Recovery code').fill(codes[0] ?? '')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Use a recovery code' }).click())
    t.equal(await heading(page), 'Your account', 'signed in with a recovery code')
    await t.resolves(page.getByText(/9 of 10 recovery codes unused; one was last used on/).waitFor({ timeout: 10_000 }), 'its use is shown')
    const shownDate = (await page.locator('#totp time').last().textContent()) ?? ''
    await checker.check(t, 'totp-account', { replace: { [shownDate]: '23 November 2026' } })
  })
})
