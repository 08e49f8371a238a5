import t from 'tap'
import { demoHashes } from '../helpers/as-config.js'
import { accessTokenOf, adminToken } from '../helpers/admin-api.js'
import { signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
import { launchChromium, openPage } from '../helpers/chromium.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * /set-password in Chromium through bin/bearward (docs/people.md): a person
 * created through the admin API opens the password link an admin made for
 * them, sets a password on the page and signs in with it on /account. The
 * same link, once used, shows "This link does not work" and no form; so does
 * a link nobody made. A form posted with a CSRF token that is not this
 * browser's changes nothing (403), and the link still works after it. Every
 * page passes PageChecker.check (axe, CSP, console, no sideways scroll) at
 * 390 and 1280 px. (A link past its 24 h is refused by the store: the people
 * store contract, test/store/contract/people.ts, advances the clock.)
 */

t.test('the password link in Chromium: set a password, sign in with it; used, unknown and cross-session posts refused', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const { secretHash } = await demoHashes()
  const as = await startBrowserAs((config) => {
    config.authorization_server.clients.push({
      client_id: 'ops',
      type: 'confidential',
      secret_hash: secretHash,
      grant_types: ['client_credentials'],
      scopes: [],
    })
    config.admin_api = { enabled: true, clients: ['ops'], people: [] }
  })
  t.teardown(() => as.close())
  const token = accessTokenOf(await adminToken(as.issuer, 'ops', 'bearward:admin'))
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${as.bin.admin}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, json: (await res.json()) as Record<string, unknown> }
  }

  await t.test('the person sets a password through the link and signs in with it', async (t) => {
    const username = 'newcomer'
    const password = 'a-good-password'
    t.equal((await api('POST', '/people', { username })).status, 201, 'created through the admin API, with no password')
    const link = await api('POST', `/people/${username}/password-link`)
    t.equal(link.status, 201)
    const url = String(link.json.url)
    const tokenInLink = new URL(url).searchParams.get('token') ?? ''
    const replace = { [tokenInLink]: 'TOKEN' }

    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const opened = await page.goto(url)
    t.equal(opened?.status(), 200)
    t.equal(await page.locator('h1').textContent(), 'Set your password')
    await checker.check(t, 'set-password', { replace })

    // Two that differ: the page says so, and the link is not spent.
    await page.getByLabel('New password').fill(password)
    await page.getByLabel('The same again').fill(`${password}-not`)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Set password' }).click())
    t.equal(await page.locator('h1').textContent(), 'Set your password', 'the form again')
    t.ok(await page.getByRole('alert').isVisible(), 'with what went wrong')
    await checker.check(t, 'set-password-mismatch', { replace })

    // A post whose CSRF token is not this browser's (another session's page): refused, nothing set.
    await page.locator('input[name="csrf"]').evaluate((input: { value: string }) => {
      input.value = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
    })
    await page.getByLabel('New password').fill('an-attackers-password')
    await page.getByLabel('The same again').fill('an-attackers-password')
    const forbidden = page.waitForResponse((r) => r.url().endsWith('/set-password') && r.request().method() === 'POST')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Set password' }).click())
    t.equal((await forbidden).status(), 403, 'a form with a CSRF token that is not this browser’s is refused')
    t.equal((await api('GET', `/people/${username}`)).json.has_password, false, 'and sets nothing')

    // The real thing: the link is still good.
    await page.goto(url)
    await page.getByLabel('New password').fill(password)
    await page.getByLabel('The same again').fill(password)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Set password' }).click())
    t.equal(await page.locator('h1').textContent(), 'Password set')
    await checker.check(t, 'set-password-done', { replace })
    t.equal((await api('GET', `/people/${username}`)).json.has_password, true, 'the store has it')

    // Used: the same link shows no form.
    const again = await page.goto(url)
    t.equal(again?.status(), 410, 'a used link is refused')
    t.equal(await page.locator('h1').textContent(), 'This link does not work')
    t.equal(await page.locator('input[name="password"]').count(), 0, 'and offers no form')
    await checker.check(t, 'set-password-gone', { replace })

    // A link nobody made.
    const forged = await page.goto(`${as.issuer}/set-password?token=${'x'.repeat(43)}`)
    t.equal(forged?.status(), 410, 'an unknown link is refused the same way')

    // The person signs in with the password they chose.
    await page.goto(`${as.issuer}/account`)
    await signIn(page, { username, password })
    t.equal(await page.locator('h1').textContent(), 'Your account', 'signed in with the new password')
  })
})
