/**
 * A running authorization server for back-channel tests: real HTTP on port 0,
 * the embedded store (or a real Redis), a ManualClock, real keys, and a set
 * of clients covering every registration variant. Codes and device approvals
 * are created the way the front channel creates them (store.putCode,
 * store.decideDevice), so these tests do not depend on the HTML pages.
 */
import { buildFaceDeps } from '../../src/face-deps.js'
import { DEFAULT_DPOP } from '../../src/config/sections/dpop.js'
import { createHash, randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import { ManualClock, epochSeconds } from '../../src/clock.js'
import type { AuthorizationServerConfig, ClientConfig, Config, DpopConfig, RegistrationConfig, RouteConfig, UserConfig } from '../../src/config/types.js'
import { DEFAULT_CLIENT_TIMEOUTS } from '../../src/config/validate.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { buildAsContext } from '../../src/as/build.js'
import type { AsContext } from '../../src/as/context.js'
import { createAuthorizationServer } from '../../src/as/server.js'
import { KeySet, generatePrivateJwk, signingKeyFromJwk, type SigningAlg } from '../../src/keys/keyset.js'
import { createLogger } from '../../src/log.js'
import { Metrics } from '../../src/metrics.js'
import { hashToken } from '../../src/store/hash.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RevocationList } from '../../src/store/revocation-list.js'
import type { CodeRecord, Store } from '../../src/store/types.js'
import { postForm, reply, type Reply } from './http.js'
import { serveFace } from './serve.js'

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

function client(c: Partial<ClientConfig> & Pick<ClientConfig, 'clientId' | 'type'>): ClientConfig {
  const confidential = c.type === 'confidential'
  return {
    name: c.clientId,
    metadata: { logoUri: null, policyUri: null, tosUri: null, postLogoutRedirectUris: [] },
    secretHash: null,
    tokenEndpointAuthMethod: confidential ? 'client_secret_basic' : 'none',
    redirectUris: [],
    grantTypes: ['authorization_code', 'refresh_token'],
    scopes: [],
    allowedOrigins: [],
    introspect: false,
    requirePkce: true,
    allowPlainPkce: false,
    skipConsent: false,
    rotateRefreshTokens: true,
    dpopBoundAccessTokens: false,
    ...c,
  }
}

/** Secret hashes are scrypt: compute them once per test process. */
let hashed: Promise<Record<string, string>> | null = null
function secretHashes(): Promise<Record<string, string>> {
  hashed ??= (async () => {
    const out: Record<string, string> = {}
    for (const [id, secret] of Object.entries(SECRETS)) out[id] = await hashSecret(secret)
    return out
  })()
  return hashed
}

async function clients(): Promise<ClientConfig[]> {
  const h = await secretHashes()
  const userScopes = ['openid', 'profile', 'email', 'orders:read', 'orders:write']
  return [
    client({ clientId: 'web', type: 'confidential', secretHash: h.web ?? null, redirectUris: [WEB_REDIRECT], scopes: userScopes, allowedOrigins: [WEB_ORIGIN] }),
    client({ clientId: 'other', type: 'confidential', secretHash: h.other ?? null, redirectUris: ['https://other.example.com/cb'], scopes: userScopes }),
    client({
      clientId: 'spa',
      type: 'public',
      redirectUris: ['https://spa.example.com/cb'],
      grantTypes: ['authorization_code', 'refresh_token', DEVICE_GRANT],
      scopes: ['openid', 'profile', 'orders:read'],
      allowedOrigins: [SPA_ORIGIN],
    }),
    client({ clientId: 'tv', type: 'public', grantTypes: [DEVICE_GRANT], scopes: ['orders:read'] }),
    client({ clientId: 'service', type: 'confidential', secretHash: h.service ?? null, grantTypes: ['client_credentials'], scopes: ['orders:read', 'orders:write'] }),
    client({
      clientId: 'poster',
      type: 'confidential',
      secretHash: h.poster ?? null,
      tokenEndpointAuthMethod: 'client_secret_post',
      grantTypes: ['client_credentials'],
      scopes: ['orders:read'],
    }),
    client({
      clientId: 'legacy',
      type: 'confidential',
      secretHash: h.legacy ?? null,
      redirectUris: ['https://legacy.example.com/cb'],
      scopes: ['openid', 'orders:read'],
      requirePkce: false,
      allowPlainPkce: true,
      rotateRefreshTokens: false,
    }),
    client({ clientId: 'looker', type: 'confidential', secretHash: h.looker ?? null, grantTypes: ['client_credentials'], scopes: ['orders:read'], introspect: true }),
    client({ clientId: 'nosy-public', type: 'public', grantTypes: ['authorization_code'], scopes: ['orders:read'], introspect: true }),
  ]
}

export const USERS: readonly UserConfig[] = [
  {
    username: 'alice',
    passwordHash: 'unused',
    sub: 'alice',
    claims: { name: 'Alice Example', given_name: 'Alice', email: 'alice@example.com', email_verified: true, phone_number: '+1 555 0100' },
  },
  { username: 'bob', passwordHash: 'unused', sub: 'user-0002', claims: { name: 'Bob', email: 'bob@example.com', groups: ['admins', 'ops'] } },
]

function route(name: string, audience: string): RouteConfig {
  const identityHeaders = { subject: 'x-auth-subject', clientId: 'x-auth-client-id', scope: 'x-auth-scope', issuer: 'x-auth-issuer', claims: {} }
  return {
    name,
    match: { path: `/${name}`, host: null, methods: null, caseInsensitive: false },
    upstream: 'http://127.0.0.1:9',
    audience,
    audiences: [audience],
    protectedResource: null,
    mcp: null,
    token: 'any',
    issuers: ['self'],
    scopes: {},
    public: false,
    stripPrefix: false,
    tokenInBody: false,
    tokenInQuery: false,
    passPreflight: false,
    preserveHost: false,
    forwardAuthorization: false,
    identityHeaders,
    timeouts: { connectMs: 1000, headersMs: 1000, idleMs: 1000 },
    maxBodyBytes: 1024,
    upstreamCaFile: null,
    storeUnavailable: 'closed',
    realm: 'bearward',
    dpop: 'allowed',
    allowTrace: false,
  }
}

export interface HarnessOptions {
  format?: 'jwt' | 'opaque'
  alg?: SigningAlg
  /** Use this store instead of a fresh MemoryStore (e.g. a RedisStore); the harness closes it. */
  store?: (clock: ManualClock) => Store
  /** The clock (ManualClock at 2026-01-01 by default; Redis tests pass one that follows real time). */
  clock?: ManualClock
  /** A path for public_url (`/auth` → issuer `http://127.0.0.1:port/auth`). */
  basePath?: string
  /** Replaces some of the `rate_limit` settings. */
  rateLimit?: Partial<AuthorizationServerConfig['rateLimit']>
  /** The `dpop` section (default: DEFAULT_DPOP). */
  dpop?: Partial<DpopConfig>
  /** Clients besides the standard set (confidential ones have no secret). */
  moreClients?: Array<Partial<ClientConfig> & Pick<ClientConfig, 'clientId' | 'type'>>
  /** RFC 7591 dynamic registration settings (default: off). */
  registration?: RegistrationConfig
  /** `access_token.claims` (default none). */
  accessTokenClaims?: string[]
}

export interface Harness {
  url: string
  /** The issuer: the served address (public_url). */
  issuer: string
  as: AsContext
  clock: ManualClock
  store: Store
  revocations: RevocationList
  metrics: Metrics
  /** Every log line written, as parsed JSON. */
  logs: Record<string, unknown>[]
  close(): Promise<void>
}

/** Start the authorization server. public_url is the real served address so issuer checks are exact. */
export async function startAs(o: HarnessOptions = {}): Promise<Harness> {
  const clock = o.clock ?? new ManualClock()
  const store = o.store ? o.store(clock) : new MemoryStore(clock, { sweepIntervalMs: 0 })
  const logs: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  const log = createLogger('info', sink as unknown as Parameters<typeof createLogger>[1])
  const metrics = new Metrics()
  const revocations = new RevocationList(store, clock, log, 3600)
  await revocations.start()
  const keys = new KeySet([await signingKeyFromJwk(await generatePrivateJwk(o.alg ?? 'ES256'))], false)

  // The server must know its own address before it is built (issuer = public_url); bind via a proxy face.
  let face: Awaited<ReturnType<typeof createAuthorizationServer>> | null = null
  const served = await serveFace(
    {
      handle: (req, res, ctx) => (face as NonNullable<typeof face>).handle(req, res, ctx),
      close: async () => undefined,
    },
    log,
  )
  const publicUrl = served.url + (o.basePath ?? '')
  const config: Config = {
    file: '<test>',
    listen: { host: '127.0.0.1', port: 0 },
    adminListen: null,
    publicUrl,
    tls: null,
    store: { kind: 'memory' },
    log: { level: 'info' },
    trustIncomingRequestId: false,
    shutdownTimeoutMs: 1000,
    clientTimeouts: { ...DEFAULT_CLIENT_TIMEOUTS },
    authorizationServer: null,
    issuers: [],
    gateway: {
      realm: 'bearward',
      clockSkewSec: 30,
      tokenCacheMaxEntries: 100,
      introspectionCacheTtlSec: 60,
      introspectionNegativeTtlSec: 5,
      revocationResyncSec: 30,
      identityHeaders: { subject: 'x-auth-subject', clientId: 'x-auth-client-id', scope: 'x-auth-scope', issuer: 'x-auth-issuer', claims: {} },
      // Client addresses come from X-Forwarded-For when a test sets it (see the client-auth throttle tests).
      trustedProxies: ['127.0.0.1'],
    },
    routes: [route('orders', publicUrl), route('api', API_AUDIENCE)],
    dpop: { ...DEFAULT_DPOP, ...o.dpop },
    workers: 1,
  }
  const asConfig = {
    keys: [],
    accessToken: { format: o.format ?? 'jwt', ttlSec: 600, claims: o.accessTokenClaims ?? [] },
    refreshToken: { ttlSec: 30 * 86400 },
    idToken: { ttlSec: 3600 },
    codeTtlSec: 60,
    scopes: { 'orders:read': 'Read your orders', 'orders:write': 'Change your orders' },
    clients: [...(await clients()), ...(o.moreClients ?? []).map(client)],
    users: [...USERS],
    session: { ttlSec: 8 * 3600 },
    consent: { remember: true, ttlSec: 30 * 86400 },
    rateLimit: {
      loginMaxFailures: 5,
      loginAddressMaxFailures: 20,
      loginDelayMaxSec: 60,
      knownBrowserTtlSec: 90 * 86400,
      clientAuthMaxFailures: 5,
      clientAuthAddressMaxFailures: 50,
      windowSec: 300,
      ...o.rateLimit,
    },
    device: { ttlSec: 600, intervalSec: 5 },
    registration: o.registration ?? null,
    clientIdMetadataDocuments: null,
    localLogin: true,
    identityProviders: [],
  } satisfies Config['authorizationServer']
  const fullConfig: Config = { ...config, authorizationServer: asConfig }
  const as = buildAsContext({ ...buildFaceDeps({ clock, log, store, revocations, metrics }, fullConfig, keys), as: asConfig, keys })
  face = createAuthorizationServer(as)
  return {
    url: publicUrl,
    issuer: publicUrl,
    as,
    clock,
    store,
    revocations,
    metrics,
    logs,
    async close() {
      await served.close()
      await revocations.stop()
      await store.close()
    },
  }
}

// -- requests ------------------------------------------------------------------

/** RFC 6749 2.3.1: form-urlencode id and secret, then Basic. */
export function basic(clientId: string, secret = SECRETS[clientId] ?? ''): string {
  const enc = (v: string): string => encodeURIComponent(v).replace(/%20/g, '+')
  return `Basic ${Buffer.from(`${enc(clientId)}:${enc(secret)}`).toString('base64')}`
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
 * Issue an authorization code the way /authorize does (store.putCode of its
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
  await h.store.putCode(hashToken(code), record, h.as.as.codeTtlSec)
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
  const r = await reply(postForm(`${h.url}/introspect`, hint ? { token: tokenValue, token_type_hint: hint } : { token: tokenValue }, {
    authorization: basic('looker'),
  }))
  if (r.status !== 200 || r.json === null) throw new Error(`introspection failed: ${r.status} ${r.text}`)
  return r.json
}

/** Let pub/sub deliveries (microtasks, or Redis messages) land. */
export async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
}
