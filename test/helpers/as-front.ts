/**
 * The authorization server for tests of the front channel (the pages and
 * redirects of src/as/interaction): the config below parsed by the real
 * loader and served through the App's dispatcher (test/helpers/serve-runtime.ts),
 * public_url the served address unless told otherwise, the embedded store on
 * a ManualClock. Requests go through an HTTP client with a cookie jar
 * (test/helpers/browser.ts); test/browser/ drives the same pages in Chromium.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { AsContext } from '../../src/as/context.js'
import type { ManualClock } from '../../src/clock.js'
import { MemoryStore } from '../../src/store/memory.js'
import { Browser, parseForms, type HtmlForm } from './browser.js'
import { testSecretHash } from './secret-hashes.js'
import { serveRuntime } from './serve-runtime.js'

export const ALICE_PASSWORD = 'alice: correct horse battery staple'
export const BOB_PASSWORD = 'bob-password-0123456789'
export const CLIENT_SECRET = 'client-secret-0123456789abcdefghijklmnop'
export const API_AUDIENCE = 'https://api.example.com'
export const WEB_CALLBACK = 'https://app.example.com/callback'
export const HOSTILE_NAME = '<script>alert("x")</script> & <b>Evil</b>'

let hashes: Promise<{ alice: string; bob: string; secret: string }> | null = null
function testHashes(): Promise<{ alice: string; bob: string; secret: string }> {
  hashes ??= Promise.all([testSecretHash(ALICE_PASSWORD), testSecretHash(BOB_PASSWORD), testSecretHash(CLIENT_SECRET)]).then(([alice, bob, secret]) => ({
    alice,
    bob,
    secret,
  }))
  return hashes
}

export interface FrontYamlOptions {
  /** Extra top-level keys (e.g. `gateway: { trusted_proxies: [127.0.0.1] }`). */
  topExtra?: string
  /** Extra keys under authorization_server (indented two spaces). */
  asExtra?: string
  /** Extra client entries (each starting with `    - client_id:`). */
  clientsExtra?: string
  /** `authorization_server.code_ttl` (default `60s`). */
  codeTtl?: string
  /** Extra routes (each starting with `  - name:`), after the `orders` route. */
  routesExtra?: string
}

/**
 * The test config: clients for each registration variant, two users, three
 * login failures allowed per (username, address) and six per address in a
 * 5-minute window, waits for a username under attack capped at a minute. `${PUBLIC_URL}` is filled in by
 * {@link startFront}.
 */
export async function frontYaml(o: FrontYamlOptions = {}): Promise<string> {
  const h = await testHashes()
  return `
public_url: \${PUBLIC_URL}
authorization_server:
  code_ttl: ${o.codeTtl ?? '60s'}
  scopes:
    "orders:read": Read your orders
    "orders:write": Change or cancel your orders
  rate_limit: { login_max_failures: 3, login_address_max_failures: 6, login_delay_max: 1m, window: 5m }
${o.asExtra ?? ''}
  clients:
    - client_id: web
      name: Example Web App
      type: confidential
      secret_hash: "${h.secret}"
      redirect_uris: [${WEB_CALLBACK}, "https://app.example.com/other?tenant=a%20b&x=1"]
      grant_types: [authorization_code, refresh_token]
      scopes: [openid, profile, email, offline_access, orders:read, orders:write]
    - client_id: spa
      name: Single Page App
      type: public
      redirect_uris: [https://spa.example.com/cb]
      grant_types: [authorization_code, refresh_token]
      scopes: [openid, orders:read]
    - client_id: native
      name: Native App
      type: public
      redirect_uris: ["http://127.0.0.1/callback", "http://[::1]:8400/callback", "http://localhost:8400/callback", "https://native.example.com:8443/cb"]
      grant_types: [authorization_code]
      scopes: [orders:read]
    - client_id: legacy
      name: Legacy App
      type: confidential
      secret_hash: "${h.secret}"
      redirect_uris: [https://legacy.example.com/cb]
      grant_types: [authorization_code]
      scopes: [orders:read]
      require_pkce: false
      allow_plain_pkce: true
    - client_id: first
      name: First Party
      type: confidential
      secret_hash: "${h.secret}"
      redirect_uris: [https://first.example.com/cb]
      grant_types: [authorization_code]
      scopes: [openid, orders:read]
      skip_consent: true
    - client_id: hostile
      name: '${HOSTILE_NAME}'
      type: public
      redirect_uris: [https://hostile.example.com/cb]
      grant_types: [authorization_code]
      scopes: [orders:read]
    - client_id: tv
      name: Living Room TV
      type: public
      grant_types: [urn:ietf:params:oauth:grant-type:device_code]
      scopes: [openid, orders:read]
    - client_id: devonly
      name: Device Only
      type: public
      redirect_uris: [https://devonly.example.com/cb]
      grant_types: [urn:ietf:params:oauth:grant-type:device_code]
      scopes: [orders:read]
    - client_id: robot
      type: confidential
      secret_hash: "${h.secret}"
      grant_types: [client_credentials]
      scopes: [orders:read]
${o.clientsExtra ?? ''}
  users:
    - username: alice
      password_hash: "${h.alice}"
      claims: { name: Alice Example }
    - username: bob
      sub: user-0002
      password_hash: "${h.bob}"
routes:
  - name: orders
    match: { path: /orders }
    upstream: http://127.0.0.1:9
    audience: ${API_AUDIENCE}
${o.routesExtra ?? ''}
${o.topExtra ?? ''}
`
}

export interface Front {
  url: string
  /** The issuer (public_url). */
  issuer: string
  as: AsContext
  store: MemoryStore
  clock: ManualClock
  /** Every log line written, as parsed JSON, in order. */
  logs: Record<string, unknown>[]
  close(): Promise<void>
}

/**
 * Serve the authorization server with the front-channel config (test/helpers/serve-runtime.ts).
 * `publicUrl` overrides public_url (e.g. an https one, to see Secure cookies).
 */
export async function startFront(yaml?: string, o: { publicUrl?: string; clock?: ManualClock } = {}): Promise<Front> {
  let memory: MemoryStore | null = null
  const served = await serveRuntime(yaml ?? (await frontYaml()), {
    clock: o.clock,
    store: (clock) => {
      memory = new MemoryStore(clock, { sweepIntervalMs: 0 })
      return memory
    },
    env: o.publicUrl === undefined ? {} : { PUBLIC_URL: o.publicUrl },
  })
  if (memory === null) throw new Error('the store was not made')
  return {
    url: served.url,
    issuer: served.publicUrl,
    as: served.as,
    store: memory,
    clock: served.clock,
    logs: served.logs,
    close: () => served.close(),
  }
}

/** A PKCE pair (RFC 7636 4.1, 4.2): 43-character verifier, S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/** A valid authorization request for `web`, with overrides (undefined removes a parameter). */
export function authParams(over: Record<string, string | undefined> = {}): Record<string, string> {
  const base: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: 'web',
    redirect_uri: WEB_CALLBACK,
    scope: 'openid orders:read',
    state: 'st-1 /+?&=%',
    nonce: 'n-0S6_WzA2Mj',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    ...over,
  }
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(base)) if (v !== undefined) out[k] = v
  return out
}

export function authorizeUrl(front: Front, params: Record<string, string> | [string, string][]): string {
  return `${front.url}/authorize?${new URLSearchParams(params).toString()}`
}

/** GET without following redirects, with optional cookies. */
export async function get(url: string, cookie?: string): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/** The first form of a page that has `field` (or a submit button named so). */
export function formWith(html: string, pageUrl: string, field: string): HtmlForm {
  const form = parseForms(html, pageUrl).find((f) => field in f.fields || f.buttons.some((b) => b.name === field))
  if (form === undefined) throw new Error(`no form with ${field} in: ${html.slice(0, 400)}`)
  return form
}

/** Name → value of the cookies a response sets. */
export function setCookies(headers: Headers): Map<string, { value: string; attributes: string }> {
  const out = new Map<string, { value: string; attributes: string }>()
  for (const line of headers.getSetCookie()) {
    const semi = line.indexOf(';')
    const pair = semi === -1 ? line : line.slice(0, semi)
    const eq = pair.indexOf('=')
    out.set(pair.slice(0, eq), { value: pair.slice(eq + 1), attributes: semi === -1 ? '' : line.slice(semi + 1) })
  }
  return out
}

/**
 * A browser that has logged in as `username` through /authorize (for `web`,
 * consent not yet given). Returns the browser and the response to the login POST.
 */
export async function loggedIn(front: Front, username = 'alice', password = ALICE_PASSWORD): Promise<{ browser: Browser; res: Response }> {
  const browser = new Browser()
  const url = authorizeUrl(front, authParams())
  const page = await browser.get(url)
  const form = formWith(await page.text(), url, 'password')
  const res = await browser.submit(form, { username, password })
  if (res.status !== 303) throw new Error(`login failed: ${res.status}`)
  return { browser, res }
}

/**
 * Count store.codes.put calls on this store (every code /authorize issues goes
 * through it), so a refusal can be shown to have stored nothing.
 */
export function countCodes(store: MemoryStore): { readonly count: number } {
  const original = store.codes.put.bind(store.codes)
  let count = 0
  store.codes.put = async (...args: Parameters<MemoryStore['codes']['put']>): Promise<void> => {
    count += 1
    return original(...args)
  }
  return {
    get count() {
      return count
    },
  }
}

/**
 * Go through /authorize as a person: log in when the login page shows, press
 * `decision` when the consent page shows. Returns the redirect to the client.
 */
export async function authorizeAs(browser: Browser, url: string, o: { username?: string; password?: string; decision?: 'allow' | 'deny' } = {}): Promise<URL> {
  let res = await browser.get(url)
  let at = url
  for (let step = 0; step < 5; step++) {
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location') ?? '', at)
      if (next.origin !== new URL(url).origin) return next
      at = next.toString()
      res = await browser.get(at)
      continue
    }
    const html = await res.text()
    if (res.status !== 200) throw new Error(`unexpected ${res.status} at ${at}: ${html.slice(0, 300)}`)
    const forms = parseForms(html, at)
    const login = forms.find((f) => 'password' in f.fields)
    const consent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    if (login) res = await browser.submit(login, { username: o.username ?? 'alice', password: o.password ?? ALICE_PASSWORD })
    else if (consent) res = await browser.submit(consent, { decision: o.decision ?? 'allow' })
    else throw new Error(`no login or consent form at ${at}`)
  }
  throw new Error('the authorization did not finish')
}

export { Browser, parseForms }
