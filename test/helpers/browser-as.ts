import { createHash, randomBytes } from 'node:crypto'
import type { Page } from 'playwright-core'
import { startBin, tempConfig, type RunningBin } from './bin.js'
import { basic } from './client-auth.js'
import { asConfig, demoClient, demoHashes, DEMO_PASSWORD, DEMO_SECRET, type DemoConfig } from './as-config.js'
import { startUpstream, type SeenRequest } from './upstream.js'
import { freePort } from './http.js'
import { codeAt } from './totp-code.js'

/**
 * `bin/bearward` with the authorization server (the demo config of
 * as-config.ts) and a real client on 127.0.0.1:0 that receives the
 * redirects, for the browser tests.
 */
export interface BrowserAs {
  bin: RunningBin
  /** The issuer (public_url), without a trailing slash. */
  issuer: string
  /** The `web` client's registered redirect_uri, served by a real HTTP server. */
  callback: string
  /** Every request the client's redirect_uri received (with its headers: no Referer must reach it). */
  callbacks: SeenRequest[]
  close(): Promise<void>
}

/**
 * People besides alice, all with alice's password (DEMO_PASSWORD): remembered
 * consent and sessions are per person, so tests that must see the consent
 * page again take a person of their own. Taken: bob to ivan (code-flow and
 * device-flow tests); judy, ken, leo, mia are free for other tests.
 */
export const PEOPLE = ['bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy', 'ken', 'leo', 'mia'] as const

/** The page the client shows when the browser comes back. */
const CLIENT_PAGE = '<!doctype html><html lang="en"><title>Example Web App</title><p>Back at the client.</p></html>'

/**
 * Start the client's receiver and `bin/bearward` whose `web` client
 * redirects to it. `edit` may change the config by key (e.g. a short device ttl).
 */
export async function startBrowserAs(edit: (config: DemoConfig) => void = () => undefined): Promise<BrowserAs> {
  const client = await startUpstream('client', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(CLIENT_PAGE) })
    res.end(CLIENT_PAGE)
  })
  const callback = `${client.url}/callback`
  const port = await freePort()
  const { passwordHash } = await demoHashes()
  const config = await asConfig({ port, upstream: client.url })
  demoClient(config, 'web').redirect_uris = [callback]
  config.authorization_server.users.unshift(...PEOPLE.map((username) => ({ username, password_hash: passwordHash })))
  edit(config)
  const cfg = await tempConfig(config)
  const cleanup = async (): Promise<void> => {
    await client.close()
    await cfg.cleanup()
  }
  let bin: RunningBin
  try {
    // A generous start-up wait: the browser files run beside other suites on
    // two cores, where generating the ephemeral signing key can take a while.
    bin = await startBin(cfg.file, {}, 60_000)
  } catch (err) {
    await cleanup()
    throw err
  }
  return {
    bin,
    issuer: bin.url.replace(/\/$/, ''),
    callback,
    callbacks: client.seen,
    close: async () => {
      await bin.stop()
      await cleanup()
    },
  }
}

/** A PKCE authorization request for the `web` client, and what the token request needs. */
export interface AuthRequest {
  url: string
  state: string
  verifier: string
}

/** Build the authorize URL a client would send a person to (code flow, S256 PKCE, a fresh state). */
export function authorizeRequest(as: BrowserAs, scope = 'openid profile orders:read', extra: Record<string, string> = {}): AuthRequest {
  const verifier = randomBytes(32).toString('base64url')
  const state = randomBytes(12).toString('base64url')
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: as.callback,
    scope,
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...extra,
  })
  return { url: `${as.issuer}/authorize?${params}`, state, verifier }
}

/** The client's side of the code exchange (RFC 6749 4.1.3), as the confidential `web` client. */
export function exchangeCode(as: BrowserAs, code: string, verifier: string): Promise<Response> {
  return fetch(`${as.issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic('web', DEMO_SECRET),
    },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: as.callback, code_verifier: verifier }),
  })
}

/** The demo user of as-config.ts. */
export const ALICE = { username: 'alice', password: DEMO_PASSWORD } as const

/**
 * On a login page: fill both fields by their labels and press "Sign in",
 * waiting for the page that follows. (The keyboard-only test does this with
 * Tab and typing instead.)
 */
export async function signIn(page: Page, user: { username: string; password: string } = ALICE): Promise<void> {
  await page.getByLabel('Username').fill(user.username)
  await page.getByLabel('Password').fill(user.password)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Sign in' }).click())
}

/**
 * Run `act` (a click or a key press that submits a form) and wait until the
 * page it leads to, after any redirects, has loaded.
 */
export async function submitAndWait(page: Page, act: () => Promise<void>): Promise<void> {
  const navigated = page.waitForEvent('framenavigated', (frame) => frame === page.mainFrame())
  await act()
  await navigated
  await page.waitForLoadState()
}

/**
 * On the account page, as the caller has it open (signed in, the button
 * offered): press "Set up an authenticator app", read the key the page shows
 * (#totp-secret), type its code of now into "Code from the app" and press
 * "Turn on", waiting for the page that follows. Returns the key without its
 * spaces and the code typed: a later sign-in needs another code,
 * `nextCode(secret, used)` (totp-code.ts). Asserts nothing: the caller checks
 * what the page says after.
 */
export async function turnOnAuthenticatorApp(page: Page): Promise<{ secret: string; used: string }> {
  await submitAndWait(page, () => page.getByRole('button', { name: 'Set up an authenticator app' }).click())
  const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '')
  const used = codeAt(secret, Date.now())
  await page.getByLabel('Code from the app').fill(used)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Turn on' }).click())
  return { secret, used }
}

/** The device authorization response (RFC 8628 3.2). */
