import t from 'tap'
import type { CDPSession, Page, Request } from 'playwright-core'
import { PASSKEY_SECOND_FACTOR_FAILED } from '../../src/as/interaction/passkey-second-factor.js'
import { DEMO_PASSWORD, DEMO_SECRET, demoHashes } from '../helpers/as-config.js'
import { authorizeRequest, startBrowserAs, submitAndWait, turnOnAuthenticatorApp, type BrowserAs } from '../helpers/browser-as.js'
import { Browser, parseForms } from '../helpers/browser.js'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { addAuthenticator } from '../helpers/webauthn.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * A passkey as the second factor after the password, in Chromium with its
 * virtual authenticator (each page checked at a phone's and a laptop's
 * width): a person adds a passkey on the account page; an authorization
 * asking for `acr_values=mfa`
 * then takes their password and, on the next page, their passkey (the
 * browser is asked for one of the person's own credentials); the id_token
 * says `amr: ["pwd", "hwk" or "swk", "mfa"]` and `acr: "phr"`. The signed
 * answer sent again over HTTP, for a new pending sign-in, is refused (its
 * challenge was used). With an authenticator app on as well, the code page
 * offers the passkey beside the code. Every page passes PageChecker.check
 * (axe, CSP, console) and is photographed for docs/screenshots/.
 */

const PERSON = 'pia'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

type Credential = { credentialId: string; isResidentCredential: boolean; rpId: string; privateKey: string; userHandle: string; signCount: number }

/**
 * Keep the person's credential but make it non-discoverable, so the login
 * page's autofill request (conditional mediation, discoverable credentials
 * only) cannot sign them in with the passkey alone and the password comes
 * first; a request that names the credential (the second factor's) still finds it.
 */
async function notDiscoverable(cdp: CDPSession, authenticatorId: string): Promise<void> {
  const { credentials } = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })) as { credentials: Credential[] }
  const original = credentials[0]
  if (original === undefined) throw new Error('the authenticator holds no credential')
  await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: original.credentialId })
  await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...original, isResidentCredential: false } })
}

/** The password form of a login page that also offers a passkey (so "Sign in" is matched exactly). */
async function password(page: Page, username: string): Promise<void> {
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill(DEMO_PASSWORD)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Sign in', exact: true }).click())
}

/** The claims of a JWT (its signature is the token endpoint's, checked by the client in real life). */
function claimsOf(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
}

t.test('a passkey as the second factor in Chromium', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const { passwordHash } = await demoHashes()
  // The pages on `localhost` (an RP ID must be a domain name).
  const as: BrowserAs = await startBrowserAs((config) => {
    config.authorization_server.users.unshift({ username: PERSON, password_hash: passwordHash })
    config.public_url = `http://localhost:${new URL(String(config.public_url)).port}`
  })
  t.teardown(() => as.close())
  const A = as.issuer.replace('//127.0.0.1:', '//localhost:')
  const stable = { [new URL(A).host]: 'localhost:8080' }
  const authorizeUrl = (extra: Record<string, string>): { url: string; verifier: string } => {
    const request = authorizeRequest(as, 'openid', extra)
    return { url: request.url.replace(as.issuer, A), verifier: request.verifier }
  }

  await t.test('the password, then the passkey; the id_token says how', async (t) => {
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const { cdp, authenticatorId } = await addAuthenticator(page)

    await page.goto(`${A}/account`)
    await password(page, PERSON)
    t.equal(await heading(page), 'Your account')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Add a passkey' }).click())
    await t.resolves(page.getByRole('status').filter({ hasText: 'Your passkey was added.' }).waitFor({ timeout: 10_000 }))
    const synced = ((await page.locator('ul.passkeys .when').textContent()) ?? '').includes('synced')
    await notDiscoverable(cdp, authenticatorId)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign out', exact: true }).click())

    // An application asks for two factors: the password is not enough.
    const request = authorizeUrl({ acr_values: 'mfa' })
    await page.goto(request.url)
    t.equal(await heading(page), 'Sign in')
    await password(page, PERSON)
    t.equal(await heading(page), 'Use your passkey', 'the passkey is asked for next')
    await t.resolves(page.getByRole('button', { name: 'Use your passkey' }).waitFor({ timeout: 10_000 }), 'the script shows the button')
    await checker.check(t, 'passkey-second-factor', { replace: stable })

    const posted = page.waitForRequest((r: Request) => r.method() === 'POST' && new URL(r.url()).pathname === '/second-factor')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Use your passkey' }).click())
    const answer = await posted
    // The passkey finished the sign-in; the consent page is next.
    await page.locator('h1', { hasText: 'Allow Example Web App' }).waitFor({ timeout: 10_000 })
    await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
    const back = new URL(page.url())
    t.equal(back.origin, new URL(as.callback).origin, 'back at the client')
    const res = await fetch(`${A}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`web:${DEMO_SECRET}`).toString('base64')}` },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: back.searchParams.get('code') ?? '',
        redirect_uri: as.callback,
        code_verifier: request.verifier,
      }),
    })
    t.equal(res.status, 200)
    const claims = claimsOf(String(((await res.json()) as { id_token?: string }).id_token))
    t.same(claims.amr, ['pwd', synced ? 'swk' : 'hwk', 'mfa'], `amr: the password, a ${synced ? 'synced' : 'device-bound'} key, two factors`)
    t.equal(claims.acr, 'phr', 'acr: a passkey took part')
    t.equal(claims.sub, PERSON)

    // The same signed answer, for a new pending sign-in of the same person over HTTP: its challenge was used.
    const http = new Browser()
    const again = authorizeUrl({ acr_values: 'mfa' })
    const login = parseForms(await (await http.get(again.url)).text(), again.url).find((f) => 'password' in f.fields)
    if (login === undefined) throw new Error('no login form')
    const afterPassword = await http.submit(login, { username: PERSON, password: DEMO_PASSWORD })
    t.equal(afterPassword.headers.get('location'), 'second-factor')
    const passkeyForm = parseForms(await (await http.get(`${A}/second-factor`)).text(), `${A}/second-factor`).find((f) => 'credential' in f.fields)
    if (passkeyForm === undefined) throw new Error('no passkey form')
    const replay = await http.submit(passkeyForm, { credential: new URLSearchParams(answer.postData() ?? '').get('credential') ?? '' })
    t.equal(replay.status, 400, 'a replayed passkey answer is refused')
    t.match(await replay.text(), PASSKEY_SECOND_FACTOR_FAILED)
    t.equal(replay.headers.get('set-cookie'), null, 'and signs nobody in')
    await t.resolves(as.bin.waitForLog((e) => e.event === 'passkey_second_factor_failed' && String(e.reason).includes('challenge'), 5000))

    // With an authenticator app on too, the code page offers the passkey beside the code.
    await page.goto(`${A}/account`)
    await t.resolves(page.getByRole('button', { name: 'Set up an authenticator app' }).waitFor({ timeout: 10_000 }))
    await turnOnAuthenticatorApp(page)
    t.equal(await heading(page), 'Your recovery codes')
    await page.goto(`${A}/account`)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign out', exact: true }).click())
    await page.goto(authorizeUrl({ acr_values: 'mfa' }).url)
    await password(page, PERSON)
    t.equal(await heading(page), 'Enter your code')
    await t.resolves(page.getByRole('button', { name: 'Use your passkey' }).waitFor({ timeout: 10_000 }), 'the passkey beside the code')
    await checker.check(t, 'totp-code-passkey', { replace: stable })
    await submitAndWait(page, () => page.getByRole('button', { name: 'Use your passkey' }).click())
    // Consent is remembered from the first time: straight back to the client.
    await t.resolves(
      page.waitForURL((u) => u.origin === new URL(as.callback).origin, { timeout: 10_000 }),
      'the passkey finished it, no code typed',
    )
  })
})
