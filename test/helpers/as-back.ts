/**
 * A running authorization server for back-channel tests: the standard config
 * (backYaml) parsed by the real loader and served through the App's
 * dispatcher (test/helpers/serve-runtime.ts), the embedded store (or a real
 * Redis), a ManualClock, real keys, and a set of clients covering every
 * registration variant. Codes and device approvals are created the way the
 * front channel creates them (store.codes.put, store.devices.decide), so these
 * tests do not depend on the HTML pages.
 */
import { createHash, randomBytes } from 'node:crypto'
import { type ManualClock, epochSeconds } from '../../src/clock.js'
import { generatePrivateJwk, type SigningAlg } from '../../src/keys/keyset.js'
import { hashToken } from '../../src/store/hash.js'
import type { CodeRecord, Store } from '../../src/store/types.js'
import { basic as basicAuth } from './client-auth.js'
import { postForm, reply, type Reply } from './http.js'
import { testSecretHash } from './secret-hashes.js'
import { serveRuntime, type ServedRuntime } from './serve-runtime.js'

export type { Reply } from './http.js'

export const ISSUER_PLACEHOLDER = 'https://as.example.com'
export const API_AUDIENCE = 'https://api.example.com'
export const WEB_REDIRECT = 'https://app.example.com/cb'
export const WEB_ORIGIN = 'https://app.example.com'
export const SPA_ORIGIN = 'https://spa.example.com'
export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/** Each confidential client's secret (distinct, so one client's secret never works for another). */
export const SECRETS: Readonly<Record<string, string>> = {
  web: 'web-secret-0123456789abcdefghijklmnopqrstuv',
  other: 'other-secret-0123456789abcdefghijklmnopqrst',
  service: 'service secret+with/odd:chars%&=',
  poster: 'poster-secret-0123456789abcdefghijklmnopqr',
  legacy: 'legacy-secret-0123456789abcdefghijklmnopqr',
  looker: 'looker-secret-0123456789abcdefghijklmnopqr',
}

/** The clients' secret hashes and the users' one password hash (stored ones, secret-hashes.ts). */
let hashed: Promise<Record<string, string>> | null = null
function secretHashes(): Promise<Record<string, string>> {
  hashed ??= (async () => {
    const out: Record<string, string> = {}
    for (const [id, secret] of Object.entries(SECRETS)) out[id] = await testSecretHash(secret)
    out.password = await testSecretHash(USER_PASSWORD)
    return out
  })()
  return hashed
}

/** The users' password (the back channel never asks for it; the config must still hold a hash). */
export const USER_PASSWORD = 'back-channel-user-password-0123'

/** The users of the standard config, as the token endpoint releases their claims. */
const USERS = [
  {
    username: 'alice',
    sub: 'alice',
    claims: { name: 'Alice Example', given_name: 'Alice', email: 'alice@example.com', email_verified: true, phone_number: '+1 555 0100' },
  },
  { username: 'bob', sub: 'user-0002', claims: { name: 'Bob', email: 'bob@example.com', groups: ['admins', 'ops'] } },
] as const

export interface HarnessOptions {
  format?: 'jwt' | 'opaque'
  /** The signing key's algorithm (the config lists no key: the server's ephemeral one). */
  alg?: SigningAlg
  /** Use this store instead of a fresh MemoryStore (e.g. a RedisStore); the harness closes it. */
  store?: (clock: ManualClock) => Store
  /** The clock (ManualClock at 2026-01-01 by default; Redis tests pass one that follows real time). */
  clock?: ManualClock
  /** A path for public_url (`/auth` → issuer `http://127.0.0.1:port/auth`). */
  basePath?: string
  /** `rate_limit` settings replacing the defaults below, as YAML values by key (`{ client_auth_address_max_failures: 6 }`). */
  rateLimit?: Record<string, string | number>
  /** YAML: the `dpop` section's mapping (`{ nonce: { secret: ..., ttl: 5m } }`). */
  dpop?: string
  /** YAML: more `clients` entries, each starting with `    - client_id:`. */
  clientsExtra?: string
  /** YAML: more keys under authorization_server (e.g. `  registration: { enabled: true }`). */
  asExtra?: string
  /** `access_token.claims` (default none). */
  accessTokenClaims?: string[]
  /** YAML: top-level keys before the rest (e.g. `tls: { ... }`). */
  top?: string
  /** YAML: more keys under `gateway` (e.g. `  client_certificate_header: X-Client-Cert`). */
  gatewayExtra?: string
  /** Serve HTTPS with the config's `tls` (serve-runtime.ts); `alpn` offers h2 too. */
  https?: { alpn?: boolean }
}

const RATE_LIMIT_DEFAULTS: Readonly<Record<string, string | number>> = {
  login_max_failures: 5,
  login_address_max_failures: 20,
  login_delay_max: '60s',
  known_browser_ttl: '90d',
  client_auth_max_failures: 5,
  client_auth_address_max_failures: 50,
  window: '300s',
}

/**
 * The standard back-channel config: a client for each registration variant,
 * two users, the `orders` route (audience: this server) and `api` (another
 * audience), 127.0.0.1 trusted as a proxy so a test can set X-Forwarded-For.
 */
export async function backYaml(o: HarnessOptions = {}): Promise<string> {
  const h = await secretHashes()
  const rateLimit = Object.entries({ ...RATE_LIMIT_DEFAULTS, ...o.rateLimit })
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ')
  const userScopes = '[openid, profile, email, orders:read, orders:write]'
  return `
public_url: \${PUBLIC_URL}
log: { level: info }
${o.top ?? ''}
gateway:
  # Client addresses come from X-Forwarded-For when a test sets it (see the client-auth throttle tests).
  trusted_proxies: [127.0.0.1]
${o.gatewayExtra ?? ''}
${o.dpop === undefined ? '' : `dpop: ${o.dpop}`}
authorization_server:
  access_token: { format: ${o.format ?? 'jwt'}, ttl: 600s, claims: [${(o.accessTokenClaims ?? []).join(', ')}] }
  refresh_token: { ttl: 30d }
  id_token: { ttl: 1h }
  code_ttl: 60s
  session: { ttl: 8h }
  consent: { remember: true, ttl: 30d }
  device: { ttl: 600s, interval: 5s }
  rate_limit: { ${rateLimit} }
  scopes:
    "orders:read": Read your orders
    "orders:write": Change your orders
${o.asExtra ?? ''}
  clients:
    - { client_id: web, type: confidential, secret_hash: "${h.web}", redirect_uris: [${WEB_REDIRECT}], grant_types: [authorization_code, refresh_token], scopes: ${userScopes}, allowed_origins: [${WEB_ORIGIN}] }
    - { client_id: other, type: confidential, secret_hash: "${h.other}", redirect_uris: [https://other.example.com/cb], grant_types: [authorization_code, refresh_token], scopes: ${userScopes} }
    - client_id: spa
      type: public
      redirect_uris: [https://spa.example.com/cb]
      grant_types: [authorization_code, refresh_token, "${DEVICE_GRANT}"]
      scopes: [openid, profile, orders:read]
      allowed_origins: [${SPA_ORIGIN}]
    - { client_id: tv, type: public, grant_types: ["${DEVICE_GRANT}"], scopes: [orders:read] }
    - { client_id: service, type: confidential, secret_hash: "${h.service}", grant_types: [client_credentials], scopes: [orders:read, orders:write] }
    - client_id: poster
      type: confidential
      secret_hash: "${h.poster}"
      token_endpoint_auth_method: client_secret_post
      grant_types: [client_credentials]
      scopes: [orders:read]
    - client_id: legacy
      type: confidential
      secret_hash: "${h.legacy}"
      redirect_uris: [https://legacy.example.com/cb]
      grant_types: [authorization_code, refresh_token]
      scopes: [openid, orders:read]
      require_pkce: false
      allow_plain_pkce: true
      rotate_refresh_tokens: false
    - { client_id: looker, type: confidential, secret_hash: "${h.looker}", grant_types: [client_credentials], scopes: [orders:read], introspect: true }
    - { client_id: nosy-public, type: public, redirect_uris: ["https://x.example.com/cb"], grant_types: [authorization_code], scopes: [orders:read], introspect: true }
${o.clientsExtra ?? ''}
  users:
${USERS.map((u) => `    - { username: ${u.username}, sub: ${u.sub}, password_hash: "${h.password}", claims: ${JSON.stringify(u.claims)} }`).join('\n')}
routes:
  - { name: orders, match: { path: /orders }, upstream: "http://127.0.0.1:9", audience: "\${PUBLIC_URL}", token: any }
  - { name: api, match: { path: /api }, upstream: "http://127.0.0.1:9", audience: ${API_AUDIENCE}, token: any }
`
}

/** The served server's parts a back-channel test reads (test/helpers/serve-runtime.ts), addressed by its issuer. */
export interface Harness extends Pick<ServedRuntime, 'as' | 'clock' | 'store' | 'revocations' | 'metrics' | 'logs' | 'close'> {
  /** Where the endpoints are: public_url, the served address plus any base path. */
  url: string
  /** The issuer: public_url. */
  issuer: string
}

/** Start the authorization server (test/helpers/serve-runtime.ts). public_url is the real served address so issuer checks are exact. */
export async function startAs(o: HarnessOptions = {}): Promise<Harness> {
  const served = await serveRuntime(await backYaml(o), {
    clock: o.clock,
    store: o.store,
    basePath: o.basePath,
    signingKey: () => generatePrivateJwk(o.alg ?? 'ES256'),
    ...(o.https === undefined ? {} : { https: o.https }),
  })
  return harnessOf(served)
}

/** A Harness over a runtime a test served itself (its own config or store). */
export function harnessOf(served: ServedRuntime): Harness {
  return {
    url: served.publicUrl,
    issuer: served.publicUrl,
    as: served.as,
    clock: served.clock,
    store: served.store,
    revocations: served.revocations,
    metrics: served.metrics,
    logs: served.logs,
    close: () => served.close(),
  }
}

// -- requests ------------------------------------------------------------------

/** `Authorization: Basic` for a client, with its own secret from SECRETS unless told otherwise. */
export function basic(clientId: string, secret = SECRETS[clientId] ?? ''): string {
  return basicAuth(clientId, secret)
}

/** fetch and read the answer to the end. */
export function send(url: string, init: RequestInit = {}): Promise<Reply> {
  return reply(fetch(url, init))
}

/** POST /token as a confidential client (Basic) or a public one (client_id in the body). */
export function token(h: Harness, clientId: string, params: Record<string, string>, extraHeaders: Record<string, string> = {}): Promise<Reply> {
  const confidential = h.as.clients.get(clientId)?.type === 'confidential'
  const body = confidential ? params : { ...params, client_id: clientId }
  const headers = confidential ? { authorization: basic(clientId), ...extraHeaders } : extraHeaders
  return reply(postForm(`${h.url}/token`, body, headers))
}

// -- front-channel stand-ins ----------------------------------------------------

/** A PKCE pair: 32 random bytes → 43-character verifier, S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/**
 * Issue an authorization code the way /authorize does (store.codes.put of its
 * hash). Defaults: client `web`, user alice, scope openid profile email
 * orders:read, redirect_uri sent, S256 challenge.
 */
export async function mintCode(h: Harness, over: Partial<CodeRecord> = {}): Promise<{ code: string; verifier: string; record: CodeRecord }> {
  const { verifier, challenge } = pkce()
  const clientId = over.clientId ?? 'web'
  const registered = h.as.clients.get(clientId)?.redirectUris[0] ?? WEB_REDIRECT
  const now = epochSeconds(h.clock)
  const record: CodeRecord = {
    clientId,
    redirectUri: registered,
    effectiveRedirectUri: registered,
    codeChallenge: challenge,
    codeChallengeMethod: 'S256',
    scope: 'openid profile email orders:read',
    sub: 'alice',
    authTime: now - 5,
    nonce: 'n-0S6_WzA2Mj',
    resource: null,
    expiresAt: now + h.as.as.codeTtlSec,
    ...over,
  }
  const code = randomBytes(32).toString('base64url')
  await h.store.codes.put(hashToken(code), record, h.as.as.codeTtlSec)
  return { code, verifier, record }
}

/** The token request body that redeems a code from {@link mintCode}. */
export function codeParams(m: { code: string; verifier: string; record: CodeRecord }): Record<string, string> {
  const p: Record<string, string> = { grant_type: 'authorization_code', code: m.code, code_verifier: m.verifier }
  if (m.record.redirectUri !== null) p.redirect_uri = m.record.redirectUri
  return p
}

/** Redeem a fresh code for `clientId` and return the token response (asserting nothing). */
export async function tokensFor(h: Harness, over: Partial<CodeRecord> = {}): Promise<Record<string, unknown>> {
  const m = await mintCode(h, over)
  const r = await token(h, m.record.clientId, codeParams(m))
  if (r.status !== 200 || r.json === null) throw new Error(`code exchange failed: ${r.status} ${r.text}`)
  return r.json
}

/** Introspect as `looker` (a confidential client allowed to introspect). */
export async function introspect(h: Harness, tokenValue: string, hint?: string): Promise<Record<string, unknown>> {
  const r = await reply(
    postForm(`${h.url}/introspect`, hint ? { token: tokenValue, token_type_hint: hint } : { token: tokenValue }, {
      authorization: basic('looker'),
    }),
  )
  if (r.status !== 200 || r.json === null) throw new Error(`introspection failed: ${r.status} ${r.text}`)
  return r.json
}

/** Let pub/sub deliveries (microtasks, or Redis messages) land. */
export async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
}
