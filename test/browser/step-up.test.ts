import t from 'tap'
import { decodeJwt } from 'jose'
import type { Page } from 'playwright-core'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { authorizeRequest, exchangeCode, signIn, startBrowserAs, submitAndWait, turnOnAuthenticatorApp, type BrowserAs } from '../helpers/browser-as.js'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { eventually } from '../helpers/http.js'
import { nextCode } from '../helpers/totp-code.js'
import { startUpstream } from '../helpers/upstream.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * The step-up walk of RFC 9470 in Chromium, through bin/bearward: a route
 * demands `authentication: { acr: [mfa], max_age: 5s }`; a person with an
 * authenticator app authorizes the `web` client, whose token is refused once
 * the sign-in is older than max_age (401 `insufficient_user_authentication`
 * with `acr_values` and `max_age`, and nothing reaches the upstream); the
 * client sends the browser to /authorize with those values, the person signs
 * in again and gives a code from the app (computed here with otpauth), and
 * the new token is accepted. The binary has no clock a test can move, so the
 * sign-in ages for real: the test polls the route until it refuses.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9470#section-4
 */

const MAX_AGE_SEC = 5
/** The person of PEOPLE (browser-as.ts) this file takes: they get an app and a consent of their own. */
const PERSON = 'judy'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** The code the client's redirect_uri received in the page's URL, after checking its state. */
function codeFrom(page: Page, as: BrowserAs, state: string): string {
  const url = new URL(page.url())
  if (`${url.origin}${url.pathname}` !== as.callback || url.searchParams.get('state') !== state) throw new Error(`not back at the client: ${page.url()}`)
  return url.searchParams.get('code') ?? ''
}

async function tokenFor(as: BrowserAs, code: string, verifier: string): Promise<string> {
  const res = await exchangeCode(as, code, verifier)
  const body = (await res.json()) as { access_token?: string }
  if (res.status !== 200 || body.access_token === undefined) throw new Error(`token exchange: ${res.status}`)
  return body.access_token
}

t.test('step-up in Chromium: too old a sign-in is refused, a second factor again, the new token accepted', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const api = await startUpstream('admin-api')
  t.teardown(() => api.close())
  const as = await startBrowserAs((config) => {
    config.routes.push({
      name: 'admin',
      match: { path: '/admin' },
      upstream: api.url,
      token: 'jwt',
      authentication: { acr: ['mfa'], max_age: `${MAX_AGE_SEC}s` },
    })
    // No skew tolerance, so the refusal comes MAX_AGE_SEC after the sign-in and not 30 s later.
    config.gateway = { clock_skew: '0s' }
  })
  t.teardown(() => as.close())
  const callAdmin = (token: string): Promise<Response> => fetch(`${as.issuer}/admin`, { headers: { authorization: `Bearer ${token}` } })
  /** How many requests to the route reached the upstream. */
  const seen = (): number => api.seen.filter((r) => r.url === '/admin').length

  await t.test('refused, stepped up, accepted', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())

    // The PERSON turns on an authenticator app, then signs in with it (setting it up does not make the session two-factor).
    await page.goto(`${as.issuer}/account`)
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    const { secret, used } = await turnOnAuthenticatorApp(page)
    t.equal(await heading(page), 'Your recovery codes')
    const recovery = await page.locator('.recovery-codes code').allTextContents()
    await page.goto(`${as.issuer}/account?sign_in=again`)
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Enter your code')
    await page.getByLabel('Recovery code').fill(recovery[0] ?? '')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Use a recovery code' }).click())
    t.equal(await heading(page), 'Your account')

    // The client's first authorization: consent, the code, a token that meets acr mfa.
    const first = authorizeRequest(as, 'openid orders:read')
    await page.goto(first.url)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const firstToken = await tokenFor(as, codeFrom(page, as, first.state), first.verifier)
    const firstClaims = decodeJwt(firstToken)
    t.equal(firstClaims.acr, 'mfa')

    // The sign-in ages past max_age: the route refuses the token, and the upstream sees nothing of it.
    let refused: Response | null = null
    let before = seen()
    t.ok(
      await eventually(
        async () => {
          // /authorize counts whole seconds (a sign-in exactly max_age old is still recent there), the gateway
          // fractions: wait until both agree it is too old, so the walk below meets the login page.
          if (Math.floor(Date.now() / 1000) - Number(firstClaims.auth_time) <= MAX_AGE_SEC) return false
          before = seen()
          const res = await callAdmin(firstToken)
          await res.arrayBuffer()
          if (res.status !== 401) return false
          refused = res
          return true
        },
        (MAX_AGE_SEC + 20) * 1000,
        500,
      ),
      'refused once the sign-in is older than max_age',
    )
    const refusal = refused as Response | null
    t.equal(refusal?.status, 401)
    const challenge = refusal?.headers.get('www-authenticate') ?? ''
    t.match(challenge, /^Bearer /)
    t.match(challenge, 'error="insufficient_user_authentication"')
    t.match(challenge, 'acr_values="mfa"')
    t.match(challenge, new RegExp(`max_age="?${MAX_AGE_SEC}"?`))
    t.equal(seen(), before, 'the refused request did not reach the upstream')

    // The client sends the browser back with what the challenge asked for.
    const acrValues = /acr_values="([^"]*)"/.exec(challenge)?.[1] ?? ''
    const maxAge = /max_age="?(\d+)"?/.exec(challenge)?.[1] ?? ''
    const second = authorizeRequest(as, 'openid orders:read', { acr_values: acrValues, max_age: maxAge })
    await page.goto(second.url)
    t.equal(await page.getByLabel('Password').count(), 1, `the sign-in is too old: the login page (at ${page.url()})`)
    await checker.check(t, 'step-up-login')
    await signIn(page, { username: PERSON, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Enter your code', 'the password alone is not enough')
    await checker.check(t, 'step-up-code')
    await page.getByLabel('Code', { exact: true }).fill(nextCode(secret, used))
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
    const secondToken = await tokenFor(as, codeFrom(page, as, second.state), second.verifier)
    const secondClaims = decodeJwt(secondToken)
    t.equal(secondClaims.acr, 'mfa')
    t.same(secondClaims.amr, ['pwd', 'otp', 'mfa'])
    t.ok(Number(secondClaims.auth_time) > Number(firstClaims.auth_time), 'a new sign-in')

    const seenBeforeAccepted = seen()
    const accepted = await callAdmin(secondToken)
    t.equal(accepted.status, 200, 'the new token is accepted')
    t.match(await accepted.json(), { upstream: 'admin-api', method: 'GET' })
    t.equal(seen(), seenBeforeAccepted + 1, 'and reached the upstream')
  })
})
