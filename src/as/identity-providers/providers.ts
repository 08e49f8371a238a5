/**
 * The upstream OpenID Connect providers of one Runtime, each with its
 * discovered metadata (OpenID Connect Discovery 1.0 4). Discovery runs in the
 * background at start and is retried with a growing pause while it fails; a
 * sign-in that finds no metadata tries once more on the spot. One provider
 * that is down never stops the others or the reload: it is reported (log,
 * with its config position) and its button answers with an error page.
 */
import * as oidc from 'openid-client'
import { Agent } from 'undici'
import type { Clock } from '../../clock.js'
import type { IdentityProviderConfig } from '../../config/validated-config.js'
import { JwksClient } from '../../gateway/jwks-client.js'
import type { Logger } from '../../log.js'
import type { KeyLookup } from '../../tokens/verify-jwt.js'
import { CLIENT_JWKS_SETTINGS } from '../client-keys.js'

/** First retry after this long, doubling up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 2_000
const RETRY_MAX_MS = 5 * 60_000
/** Per HTTP request to a provider (discovery, token, JWKS, UserInfo), in seconds (openid-client's unit). */
const REQUEST_TIMEOUT_SEC = 10

/** The provider cannot be reached or its discovery document is unusable. */
export class ProviderUnavailableError extends Error {
  readonly code = 'ERR_IDP_UNAVAILABLE'
}

function isLoopbackHttp(issuer: URL): boolean {
  return issuer.protocol === 'http:'
}

/**
 * How bearward authenticates at the provider's token endpoint: a secret in
 * the Authorization header unless the provider supports only the form post;
 * no secret configured: a public client (RFC 7636 PKCE alone).
 */
function clientAuthFor(config: IdentityProviderConfig, metadata: oidc.ServerMetadata): oidc.ClientAuth {
  if (config.clientSecret === null) return oidc.None()
  const methods = metadata.token_endpoint_auth_methods_supported
  if (Array.isArray(methods) && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')) {
    return oidc.ClientSecretPost(config.clientSecret)
  }
  return oidc.ClientSecretBasic(config.clientSecret)
}

/** What a provider's logout tokens are checked against: its issuer and its keys (its discovered `jwks_uri`). */
export interface ProviderSigner {
  readonly issuer: string
  readonly keys: KeyLookup
}

export class UpstreamProvider {
  readonly config: IdentityProviderConfig
  readonly #log: Logger
  readonly #clock: Clock
  /** The provider's keys for its logout tokens (id_tokens are checked by openid-client): made on first use. */
  #signer: ProviderSigner | null = null
  #jwks: JwksClient | null = null
  #agent: Agent | null = null
  #configuration: oidc.Configuration | null = null
  #inFlight: Promise<oidc.Configuration> | null = null
  #retryTimer: NodeJS.Timeout | null = null
  #retryMs = RETRY_MIN_MS
  #closed = false

  constructor(config: IdentityProviderConfig, log: Logger, clock: Clock) {
    this.config = config
    this.#log = log
    this.#clock = clock
  }

  /**
   * The issuer and keys that sign this provider's logout tokens (OIDC Back-Channel Logout 1.0 2.6):
   * the discovered `issuer` and a JWKS client on the discovered `jwks_uri` (cached, refetched for an
   * unknown kid, like every other JWKS bearward reads). Rejects with ProviderUnavailableError.
   */
  async signer(): Promise<ProviderSigner> {
    if (this.#signer !== null) return this.#signer
    const metadata = (await this.configuration()).serverMetadata()
    this.#agent ??= new Agent({ keepAliveTimeout: 30_000, connections: 4 })
    const jwks = new JwksClient(`identity provider ${this.config.id}`, metadata.jwks_uri as string, CLIENT_JWKS_SETTINGS, {
      clock: this.#clock,
      log: this.#log,
      dispatcher: this.#agent,
    })
    jwks.start()
    this.#jwks = jwks
    this.#signer = { issuer: metadata.issuer, keys: jwks }
    return this.#signer
  }

  /** True once discovery has succeeded. */
  get ready(): boolean {
    return this.#configuration !== null
  }

  /** Start discovery in the background; failures are reported and retried. */
  start(): void {
    this.configuration().catch(() => undefined)
  }

  /**
   * The discovered configuration; discovers now when it has not succeeded
   * yet (one request at a time). Rejects with ProviderUnavailableError.
   */
  async configuration(): Promise<oidc.Configuration> {
    if (this.#configuration !== null) return this.#configuration
    this.#inFlight ??= this.#discover().finally(() => {
      this.#inFlight = null
    })
    return await this.#inFlight
  }

  async #discover(): Promise<oidc.Configuration> {
    const issuer = new URL(this.config.issuer)
    try {
      const configuration = await oidc.discovery(issuer, this.config.clientId, undefined, undefined, {
        timeout: REQUEST_TIMEOUT_SEC,
        // The reader accepts http only for a loopback issuer (development and tests).
        ...(isLoopbackHttp(issuer) ? { execute: [oidc.allowInsecureRequests] } : {}),
      })
      const metadata = configuration.serverMetadata()
      // OIDC Discovery 1.0 3: jwks_uri is REQUIRED; without it no id_token signature can be checked.
      if (typeof metadata.jwks_uri !== 'string') throw new Error('the discovery document has no jwks_uri')
      const withAuth = new oidc.Configuration(metadata, this.config.clientId, undefined, clientAuthFor(this.config, metadata))
      withAuth.timeout = REQUEST_TIMEOUT_SEC
      if (isLoopbackHttp(issuer)) oidc.allowInsecureRequests(withAuth)
      // The id_token's signature is checked against the provider's JWKS (fetched from jwks_uri with
      // the same timeout and TLS rules, cached, refetched for a kid it does not know). openid-client
      // otherwise trusts the TLS channel for the token response and checks only the claims, so a
      // token signed by any key (or none) with the right iss, aud and nonce signed the person in.
      oidc.enableNonRepudiationChecks(withAuth)
      if (this.#closed) throw new ProviderUnavailableError('closed')
      this.#configuration = withAuth
      this.#retryMs = RETRY_MIN_MS
      this.#log.info({ event: 'identity_provider_ready', provider: this.config.id, issuer: this.config.issuer }, 'identity provider discovered')
      return withAuth
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err)
      this.#log.error(
        {
          event: 'identity_provider_discovery_failed',
          provider: this.config.id,
          position: this.config.position,
          issuer: this.config.issuer,
          reason,
          retryInMs: this.#retryMs,
        },
        `identity provider ${this.config.position} (${this.config.id}): discovery at ${this.config.issuer} failed: ${reason}; its sign-in button shows an error until it answers`,
      )
      this.#scheduleRetry()
      throw new ProviderUnavailableError(`discovery of ${this.config.id} failed`, { cause: err })
    }
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer !== null) return
    const wait = this.#retryMs
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null
      if (!this.#closed && this.#configuration === null) this.start()
    }, wait)
    this.#retryTimer.unref()
  }

  close(): void {
    this.#closed = true
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer)
    this.#retryTimer = null
    void this.#jwks?.close()
    void this.#agent?.close()
  }
}

/** Every configured provider of a Runtime, by id, in config order. */
export class UpstreamProviders {
  readonly #byId: ReadonlyMap<string, UpstreamProvider>

  constructor(configs: readonly IdentityProviderConfig[], log: Logger, clock: Clock) {
    this.#byId = new Map(configs.map((c) => [c.id, new UpstreamProvider(c, log, clock)]))
  }

  has(id: string): boolean {
    return this.#byId.has(id)
  }

  get(id: string): UpstreamProvider | undefined {
    return this.#byId.get(id)
  }

  list(): UpstreamProvider[] {
    return [...this.#byId.values()]
  }

  start(): void {
    for (const p of this.#byId.values()) p.start()
  }

  close(): void {
    for (const p of this.#byId.values()) p.close()
  }
}
