/**
 * The validated, defaulted configuration. `src/config/load.ts` turns the YAML
 * contract (snake_case keys, documented in README and config/gateway.schema.json)
 * into this shape; nothing else reads YAML. Durations are whole seconds,
 * sizes are bytes. Every object is frozen after validation.
 */

export interface ListenAddress {
  host: string
  port: number
}

export interface TlsConfig {
  /** PEM certificate chain file (`tls.cert_file`). */
  certFile: string
  /** PEM private key file (`tls.key_file`). */
  keyFile: string
  /** PEM CA certificates client certificates are verified against (`tls.client_ca`, RFC 8705); null: no client certificates asked for. */
  clientCaFile: string | null
  /** `tls.client_certificates`: `off` without `client_ca`; else `optional` (default) or `required` (the handshake refuses). */
  clientCertificates: 'off' | 'optional' | 'required'
}

export type StoreConfig =
  | { kind: 'memory' }
  | {
      kind: 'redis'
      /** redis:// or rediss:// URL (may hold a password: never log it). */
      url: string
      /** Seed nodes for Redis Cluster (`store.cluster`); empty for a single node. */
      cluster: string[]
      /** Prefix of every key (`store.key_prefix`, default `bw:`). */
      keyPrefix: string
      /** Per-command timeout in ms (`store.command_timeout`, default 1s). */
      commandTimeoutMs: number
      /** Redis Sentinel addresses (`store.sentinels`); empty unless the master is found through Sentinel. */
      sentinels: string[]
      /** The master's name at the sentinels (`store.name`, default `mymaster`). */
      sentinelName: string
      /**
       * How revocation writes wait for replicas (`store.replica_wait`): the
       * number of replicas (default 1 on Cluster and Sentinel, 0 otherwise)
       * and the most to wait in ms (default 500, below command_timeout).
       */
      replicaWait: { replicas: number; timeoutMs: number }
    }

export interface LogConfig {
  level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** The access line names the token's subject (`log.access_sub`, default true); false leaves `sub` out. */
  accessSub: boolean
}

/** `audit.destination`: where the audit trail goes (src/audit/trail.ts); `off` when `audit` is absent. */
export type AuditDestination = { kind: 'off' } | { kind: 'stdout' } | { kind: 'file'; path: string }

/** `telemetry.traces`: export spans over OTLP/HTTP (docs/telemetry.md). */
export interface TracesConfig {
  otlp: {
    /** The collector's base URL (`/v1/traces` is appended), as OTEL_EXPORTER_OTLP_ENDPOINT. */
    endpoint: string
    /** Sent with every export (an API key: never logged). */
    headers: Record<string, string>
  }
  /** Ratio of new traces sampled, 0 to 1 (default 1); a caller's sampled flag is followed. */
  sample: number
}

export type ClientType = 'confidential' | 'public'
export type TokenEndpointAuthMethod =
  | 'client_secret_basic'
  | 'client_secret_post'
  | 'none'
  | 'private_key_jwt'
  | 'tls_client_auth'
  | 'self_signed_tls_client_auth'

/** RFC 8705 2.1.2: the one certificate name a `tls_client_auth` client is registered with. */
export type TlsClientAuthName =
  /** `tls_client_auth_subject_dn`: `value` as written, `canonical` as compared (http/distinguished-name.ts). */
  | { kind: 'subject_dn'; value: string; canonical: string }
  /** `tls_client_auth_san_*`: `value` normalised (a DNS name in lower case, an IP address in its canonical text). */
  | { kind: 'san_dns' | 'san_uri' | 'san_ip' | 'san_email'; value: string }

/** A JWK Set (RFC 7517 5) as written: its keys are parsed, and the unusable ones dropped, where they are used. */
export interface JwkSetDocument {
  keys: Array<Record<string, unknown>>
}

export type GrantType =
  | 'authorization_code'
  | 'refresh_token'
  | 'client_credentials'
  | 'urn:ietf:params:oauth:grant-type:device_code'
  | 'urn:ietf:params:oauth:grant-type:jwt-bearer'
  | 'urn:ietf:params:oauth:grant-type:token-exchange'

/** RFC 7591 2 client metadata that pages render; OIDC RP-Initiated Logout 1.0 3.1. */
export interface ClientMetadata {
  /** `logo_uri`: an https URL or a data: URL of a raster image. */
  logoUri: string | null
  /** `policy_uri`: the client's privacy policy. */
  policyUri: string | null
  /** `tos_uri`: the client's terms of service. */
  tosUri: string | null
  /** `post_logout_redirect_uris`: where /logout may send the browser back, by exact match. */
  postLogoutRedirectUris: string[]
}

/** A security profile a client follows: `fapi2`, the FAPI 2.0 Security Profile (Final). */
export type SecurityProfile = 'fapi2'

export interface ClientConfig {
  clientId: string
  /** `rate_limits`: this client's own `limit` for route limits of that name (a paying tier); absent: none. */
  rateLimits?: Readonly<Record<string, number>>
  /** Shown wherever the client is named (consent, device approval, account page); defaults to clientId. */
  name: string
  /** RFC 7591 metadata shown to people, and where RP-initiated logout may return. */
  metadata: ClientMetadata
  type: ClientType
  /** `bearward hash-secret` output; confidential clients only. */
  secretHash: string | null
  /** Derived: `none` for public clients, else `client_secret_basic` unless configured `client_secret_post` or `private_key_jwt`. */
  tokenEndpointAuthMethod: TokenEndpointAuthMethod
  redirectUris: string[]
  grantTypes: GrantType[]
  /** Scopes this client may request. */
  scopes: string[]
  /** Browser origins allowed CORS at /token, /revoke, /userinfo, metadata, JWKS. */
  allowedOrigins: string[]
  /** May call /introspect (`introspect`, default false). */
  introspect: boolean
  /** PKCE required (`require_pkce`); always true for public clients, default true. */
  requirePkce: boolean
  /** Accept code_challenge_method=plain (`allow_plain_pkce`, default false). */
  allowPlainPkce: boolean
  /** `private_key_jwt` (RFC 7523 2.2): the client's public keys inline (`jwks`); absent otherwise. */
  jwks?: JwkSetDocument
  /** `private_key_jwt`: where the client publishes its public keys (`jwks_uri`); absent otherwise. */
  jwksUri?: string
  /**
   * RFC 8693 token exchange policy (`token_exchange`): the audiences it may exchange tokens for, and
   * whether an exchange also issues a refresh token (`refresh_tokens`, default false); absent: none.
   */
  tokenExchange?: { audiences: string[]; refreshTokens: boolean }
  /** Skip the consent page for this (first-party) client (`skip_consent`, default false). */
  skipConsent: boolean
  /** `require_mfa`: this client's authorizations need a two-factor sign-in (absent: false). */
  requireMfa?: boolean
  /** Rotate refresh tokens on every use (`rotate_refresh_tokens`); forced true for public clients. */
  rotateRefreshTokens: boolean
  /** RFC 9449 5.2 (`dpop_bound_access_tokens`, default false): no token without a DPoP proof. */
  dpopBoundAccessTokens: boolean
  /** RFC 9126 6 (`require_pushed_authorization_requests`): /authorize takes only requests pushed to /par (absent: false). */
  requirePushedAuthorizationRequests?: boolean
  /** RFC 9101 10.5 (`require_signed_request_object`): authorization requests only as request objects signed with the client's keys (absent: false). */
  requireSignedRequestObject?: boolean
  /** `tls_client_auth` (RFC 8705 2.1): the certificate name the client is registered with; absent for other methods. */
  tlsClientAuth?: TlsClientAuthName
  /** RFC 8705 3 (`tls_client_certificate_bound_access_tokens`, default false): tokens bound to the certificate presented at /token; none without one. */
  tlsClientCertificateBoundAccessTokens: boolean
  /**
   * `profile: fapi2` (its own, or `authorization_server.profile`): the FAPI 2.0
   * Security Profile's rules hold for it (src/as/fapi-profile.ts); the settings
   * it implies are already set above, and contradicting ones refused at load. Absent: none.
   */
  profile?: SecurityProfile
  /**
   * How a client that is not in the config became known: it registered
   * itself (RFC 7591) or its client_id is the URL of its metadata document.
   * Absent for configured clients. Such a client always gets the consent page.
   */
  selfRegistered?: 'registration' | 'metadata_document'
  /** Created through the admin API (`source: admin`): an operator vetted it, so it is no stranger. Absent otherwise. */
  adminManaged?: true
  /** After a secret rotation through the admin API: the previous secret's hash, still good until `expiresAt` (epoch seconds). */
  previousSecret?: { hash: string; expiresAt: number }
  /**
   * OpenID Connect Back-Channel Logout 1.0 (`backchannel_logout_uri`, `backchannel_logout_session_required`):
   * where logout tokens are POSTed, and whether the client needs `sid` in them. Absent: none sent.
   */
  backchannelLogout?: { uri: string; sessionRequired: boolean }
}

export interface UserConfig {
  username: string
  passwordHash: string
  /** `sub` claim; defaults to username. */
  sub: string
  /** OIDC claims (name, email, ...) released per scope at /userinfo and in the id_token. */
  claims: Record<string, unknown>
}

/** Who an identity provider lets in (`allowed`); every rule given must hold. */
export interface IdentityProviderAllowed {
  /** The person's `email` must be at one of these domains (lower case), and not `email_verified: false`. */
  emailDomains: string[] | null
  /** The upstream claim `claim` (a string or a list of strings) must hold one of `values`. */
  claim: { name: string; values: string[] } | null
}

/** `authorization_server.identity_providers[]`: an upstream OpenID Connect provider (bearward is its relying party). */
export interface IdentityProviderConfig {
  /** Part of the callback path and of the person's `sub` (`<id>:<upstream sub>`); letters, digits, `_`, `-`. */
  id: string
  /** Shown on the button: "Continue with <name>". */
  name: string
  /** Issuer identifier; discovery at `<issuer>/.well-known/openid-configuration`. https, or http on a loopback host. */
  issuer: string
  clientId: string
  /** null: a public client (PKCE only). Never logged. */
  clientSecret: string | null
  /** Requested scopes (always with `openid`); default openid, profile, email. */
  scopes: string[]
  /** null: everyone the provider signs in may sign in here. */
  allowed: IdentityProviderAllowed | null
  /** bearward claim name → upstream claim name. */
  claims: Record<string, string>
  /**
   * `acr_values`: the provider's acr value → bearward's own (src/tokens/acr.ts).
   * An unmapped value spelt like one of ours is left out of our tokens (src/as/sign-in-strength.ts).
   */
  acrValues: Readonly<Record<string, 'pwd' | 'mfa' | 'phr'>>
  /** `backchannel_logout` (default false): `POST /idp/<id>/backchannel-logout` takes the provider's logout tokens. */
  backchannelLogout: boolean
  /** `on_logout` (default `sessions`): what a logout token ends; `grants` ends the person's grants too. */
  onLogout: 'sessions' | 'grants'
  /** Where it is in the config (`authorization_server.identity_providers[1]`), for reports. */
  position: string
}

/** `authorization_server.webauthn`: the relying party passkeys are bound to. */
export interface WebAuthnConfig {
  /** Offer passkeys on the login and account pages (default true). */
  enabled: boolean
  /** Relying party ID (default public_url's host). */
  rpId: string
  /** The name authenticators show (default `bearward`). */
  rpName: string
  /** Origins a ceremony may come from (default public_url's origin). */
  origins: string[]
}

/**
 * `authorization_server.assertion_issuers[]`: an issuer whose JWTs bearward
 * accepts as RFC 7523 assertions. `id-jag`: Identity Assertion JWT
 * Authorization Grants (a person, for grant_type jwt-bearer); `workload`: a
 * platform's tokens for workloads (Kubernetes service accounts, SPIFFE
 * JWT-SVIDs) that authenticate a client.
 */
export interface AssertionIssuerConfig {
  /** The exact `iss`. */
  issuer: string
  kind: 'id-jag' | 'workload'
  /** Where its keys are published; null when `jwks` is inline. */
  jwksUri: string | null
  jwks: JwkSetDocument | null
  /** The `aud` its assertions must carry (default: our issuer). */
  audience: string
  /** Accepted JWS algorithms (asymmetric only; default every one bearward supports). */
  algorithms: string[]
  /** workload: the platform's `sub` → the client_id it authenticates. */
  subjects: Record<string, string>
  /** id-jag: the claim that finds a local user when no identity provider has this issuer (`person.claim`, e.g. email); null: none. */
  personClaim: string | null
  /** Where it is in the config (`authorization_server.assertion_issuers[0]`). */
  position: string
}

/** Where a signing key comes from: a JWK file (`file`) or inline JWK (`jwk`). */
export type KeySource = { file: string } | { jwk: Record<string, unknown> }

export interface AuthorizationServerConfig {
  keys: KeySource[]
  /**
   * `claims`: the person's claims copied into access tokens issued to a
   * person (and opaque tokens' introspection answers); see accessTokenClaims.
   */
  accessToken: { format: 'jwt' | 'opaque'; ttlSec: number; claims: readonly string[] }
  refreshToken: { ttlSec: number }
  idToken: { ttlSec: number }
  codeTtlSec: number
  /** RFC 8705 5 (`mtls_url`): base URL of the host where client certificates are asked for; the metadata's `mtls_endpoint_aliases` point there. null: none. */
  mtlsUrl: string | null
  /** Known scopes and their consent-page descriptions; openid/profile/email/offline_access are built in. */
  scopes: Record<string, string>
  clients: ClientConfig[]
  users: UserConfig[]
  /** Show the username/password form (`local_login`, default true); false: only the identity providers. */
  localLogin: boolean
  /** Upstream OpenID Connect providers people may sign in with (`identity_providers`); see docs/identity-providers.md. */
  identityProviders: IdentityProviderConfig[]
  /** RFC 7523 JWT bearer assertions from other issuers (`assertion_issuers`): ID-JAG grants and workload identity; docs/agents.md. */
  assertionIssuers: AssertionIssuerConfig[]
  /** Passkeys (`webauthn`), resolved against public_url; see docs/people.md. */
  webauthn: WebAuthnConfig
  /**
   * `mfa`: every authorization needs a two-factor sign-in (`required`); the second factors offered (`methods`).
   * `totpEncryptionKeys`: `totp_encryption_key` then `totp_previous_keys` (the first seals authenticator-app
   * secrets, all open them); absent: keys derived from the signing keys. `mfa` absent: not required, both offered, derived keys.
   */
  mfa?: { required: boolean; methods: Array<'passkey' | 'totp'>; totpEncryptionKeys?: string[] }
  /**
   * Login session (`session.ttl`, default 8h). `factorChangeMaxAgeSec`: a factor is added, replaced or removed only
   * by a session that proved the person's strongest factor at most this long ago (`session.factor_change_max_age`, default 10m).
   */
  session: { ttlSec: number; factorChangeMaxAgeSec: number }
  /** Remembered consent (`consent.remember`, default true; `consent.ttl`, default 30d). */
  consent: { remember: boolean; ttlSec: number }
  /** Failed logins / client auth (`rate_limit.*`; see src/as/throttle.ts). */
  rateLimit: {
    /** Per (username, address), per known browser, and the per-username count past which untrusted clients wait. */
    loginMaxFailures: number
    /** Per address, whatever the usernames (`login_address_max_failures`). */
    loginAddressMaxFailures: number
    /** Cap of the per-username delay for untrusted clients (`login_delay_max`). */
    loginDelayMaxSec: number
    /** Lifetime of a known-browser (device) cookie (`known_browser_ttl`). */
    knownBrowserTtlSec: number
    /** Per (client_id, address). */
    clientAuthMaxFailures: number
    /** Per address, whatever the client ids (`client_auth_address_max_failures`). */
    clientAuthAddressMaxFailures: number
    windowSec: number
    /** Challenges `/passkey-options` hands out per address per window (`passkey_options_per_address`): each is kept in the store. */
    passkeyOptionsPerAddress: number
    /** IPv6 addresses are counted by their network of this many bits (`ipv6_prefix`, default 64), registration included. */
    ipv6Prefix: number
  }
  /** RFC 8628 (`device.*`). */
  device: { ttlSec: number; intervalSec: number }
  /** `profile: fapi2`: every client follows the FAPI 2.0 Security Profile (docs/fapi.md); null: no server-wide profile. */
  profile: SecurityProfile | null
  /** RFC 9126 (`par.*`): every client must push (`required`, default false); how long a pushed request_uri lives (`request_uri_ttl`, default 60s). */
  par: { required: boolean; requestUriTtlSec: number }
  /** RFC 7591 dynamic client registration (`registration`); null when off (the default). */
  registration: RegistrationConfig | null
  /** Client ID Metadata Documents (`client_id_metadata_documents`); null when off (the default). */
  clientIdMetadataDocuments: ClientIdMetadataDocumentsConfig | null
}

/** `authorization_server.client_id_metadata_documents`. */
export interface ClientIdMetadataDocumentsConfig {
  /** Hosts fetched although they resolve to a private or loopback address (`allow_hosts`). */
  allowHosts: string[]
  /** PEM CA bundle trusted for the fetch besides the system's (`ca_file`). */
  caFile: string | null
  /** The most such a client may ask for (`scopes`, default every known scope). */
  scopes: string[]
}

/** `authorization_server.registration`. */
export interface RegistrationConfig {
  /** Bearer token a registration must carry (`initial_access_token`); null: open registration. */
  initialAccessToken: string | null
  /** The most a registered client may ask for (`scopes`, default every known scope). */
  scopes: string[]
  /** A registered client unused this long is forgotten (`client_ttl`, default 30d). */
  clientTtlSec: number
  /** Registrations per client address per window (`rate_limit.per_address`, default 30; `rate_limit.window`, default 1h). */
  perAddress: number
  windowSec: number
  /** The most live registered clients the store holds (`max_clients`, default 10000); past it registration answers 503. */
  maxClients: number
}

export interface RemoteIntrospectionConfig {
  endpoint: string
  clientId: string
  clientSecret: string
  timeoutMs: number
}

/** A trusted issuer other than the built-in one (`issuers[]`). */
export interface IssuerConfig {
  id: string
  issuer: string
  jwksUri: string | null
  /** Accepted JWS algorithms; fixed here, never taken from the token. Default [RS256, ES256]. */
  algorithms: string[]
  introspection: RemoteIntrospectionConfig | null
  jwks: {
    /** Lower bound on Cache-Control max-age (default 5m). */
    minTtlSec: number
    /** Upper bound (default 24h). */
    maxTtlSec: number
    /** At most one refetch per cooldown for an unknown kid (default 30s). */
    cooldownSec: number
    /** Keep the last good key set this long when fetches fail (default 24h). */
    staleSec: number
    /** How long a request waits for the first fetch (default 2s). */
    firstFetchWaitMs: number
    timeoutMs: number
  }
}

export type RouteTokenKind = 'jwt' | 'introspect' | 'any'

export interface IdentityHeaders {
  subject: string
  clientId: string
  scope: string
  issuer: string
  /** Token claim name → header name (`identity_headers.claims`). */
  claims: Readonly<Record<string, string>>
}

export interface RouteConfig {
  name: string
  match: {
    /** Normalized prefix, no trailing slash except the root `/`. */
    path: string
    /** Lower-cased host without port, or null for any host. */
    host: string | null
    /** Upper-cased methods, or null for any. */
    methods: string[] | null
    /**
     * Match `path` whatever the ASCII case of the request's path
     * (`match.case_insensitive`, default false), for upstreams that route
     * case-insensitively: `/ADMIN/x` is then judged by the `/admin` route.
     */
    caseInsensitive: boolean
  }
  /** The upstream URL; on a pooled route, its first target (what `upstream_token` audiences and CA checks read). */
  upstream: string
  /** `upstream: [..]` or `upstreams: {..}` (docs/traffic.md, Upstream pools); null: one upstream URL. */
  upstreamPool: UpstreamPoolConfig | null
  /** `aud` the token must contain; default public_url. */
  audience: string
  /**
   * Every `aud` value accepted here: `audience`, plus the route's RFC 9728
   * resource identifier when it publishes one (a token requested with
   * `resource=<that identifier>`, RFC 8707, is for this route).
   */
  audiences: string[]
  /** RFC 9728 protected resource metadata (`protected_resource`); null when hidden or for a public route. */
  protectedResource: ProtectedResourceConfig | null
  /** Extra scopes per MCP tool (`mcp`); null when the route does not front an MCP server. */
  mcp: McpRouteConfig | null
  token: RouteTokenKind
  /** Issuer ids: `self` and/or ids from `issuers[]`. Default [self] when the AS is configured. */
  issuers: string[]
  /** Method (upper case) or `*` to the scopes all required. */
  scopes: Record<string, string[]>
  /**
   * RFC 9470 step-up (`authentication`): method (upper case) or `*` to what
   * the sign-in behind the token must be (src/gateway/step-up.ts); `{}` when
   * the route demands nothing of it. A plain `{ acr, max_age }` is `*`'s.
   */
  authentication: Record<string, AuthenticationRequirement>
  public: boolean
  /** Remove the matched prefix before forwarding (`strip_prefix`, default false). */
  stripPrefix: boolean
  /** RFC 6750 2.2 / 2.3 (`token_in_body`, `token_in_query`; default false). */
  tokenInBody: boolean
  tokenInQuery: boolean
  /** Pass CORS preflights to the upstream without a token (`pass_preflight`, default false). */
  passPreflight: boolean
  /** Keep the client's Host header (`preserve_host`, default false). */
  preserveHost: boolean
  /** Forward the Authorization header upstream (`forward_authorization`, default false). */
  forwardAuthorization: boolean
  identityHeaders: IdentityHeaders
  timeouts: { connectMs: number; headersMs: number; idleMs: number }
  /** `max_body`, default 10 MiB. */
  maxBodyBytes: number
  /** PEM CA bundle file for https upstreams (`upstream_ca`). */
  upstreamCaFile: string | null
  /**
   * Speak HTTP/2 to the upstream: `h2c://` upstreams (cleartext, prior
   * knowledge), or `http2: true` on an https:// one (ALPN). Default false.
   */
  upstreamHttp2: boolean
  /** What to do when the store cannot be reached for revocation state (`store_unavailable`). */
  storeUnavailable: 'closed' | 'open'
  /** `realm` in challenges; default gateway.realm. */
  realm: string
  /** `dpop`: `allowed` (default) takes DPoP-bound and bearer tokens; `required` refuses bearer tokens. */
  dpop: 'allowed' | 'required'
  /**
   * `sender_constraint`: `optional` (default) takes any valid token (a bound
   * one only with its proof or certificate); `required` takes only tokens
   * bound to a DPoP key (RFC 9449) or a client certificate (RFC 8705).
   */
  senderConstraint: 'optional' | 'required'
  /**
   * TRACE is forwarded (`allow_trace`, or TRACE listed in `match.methods`);
   * otherwise it is refused with 405 (cross-site tracing, RFC 9110 9.3.8).
   */
  allowTrace: boolean
  /**
   * What the upstream receives instead of the client's token
   * (`upstream_token`, docs/agents.md); null for `passthrough`, the default
   * (identity headers, and the client's token only with `forward_authorization`).
   */
  upstreamToken: UpstreamTokenConfig | null
  /** `rate_limits`, `quotas` and the tools' `rate_limit` (docs/traffic.md); null when the route sets none. */
  limits?: RouteLimitsConfig | null
  /** `max_in_flight` and `max_streams` (docs/traffic.md, Concurrency limits); null when the route sets neither. */
  concurrency: RouteConcurrencyConfig | null
}

/** What a traffic limit counts by (`key`). */
export type TrafficLimitKey = 'client' | 'subject' | 'grant' | 'address' | 'tool'

/** What a limit does while the store cannot be reached, on a route that could otherwise serve. */
export type StoreFailureMode = 'allow' | 'deny'

/** One rate limit (`rate_limits[]`, or a tool's `rate_limit`), GCRA: `limit` per `perMs` back to back, `burst` more. */
export interface RateLimitConfig {
  /** Unique per route; `tool:<name>` for a tool's own limit. */
  name: string
  key: TrafficLimitKey
  limit: number
  perMs: number
  burst: number
  onStoreFailure: StoreFailureMode
  /** A tool's own limit: the tool name or `*` pattern it counts calls of; null for a route limit. */
  tool: string | null
}

/** One quota (`quotas[]`): `limit` per UTC calendar day or month. */
export interface QuotaConfig {
  name: string
  key: TrafficLimitKey
  limit: number
  per: 'day' | 'month'
  onStoreFailure: StoreFailureMode
}

/** A route's traffic limits (docs/traffic.md). */
export interface RouteLimitsConfig {
  rateLimits: RateLimitConfig[]
  quotas: QuotaConfig[]
}

/** Whose slots a per-key concurrency limit counts together. */
export type ConcurrencyKey = 'client' | 'subject' | 'grant' | 'address'

/** One concurrency limit (`max_in_flight` or `max_streams`) of one instance. */
export interface ConcurrencyLimitConfig {
  /** Route-wide (`route`, or the plain number); null: no route-wide limit. */
  route: number | null
  /** `per_key: { key, limit }`; null: no per-key limit. */
  perKey: { key: ConcurrencyKey; limit: number } | null
}

/** A route's concurrency limits; a limit left out is null (not limited, still counted). */
export interface RouteConcurrencyConfig {
  maxInFlight: ConcurrencyLimitConfig | null
  maxStreams: ConcurrencyLimitConfig | null
}

/**
 * `upstream_token: exchange`: a short-lived access token bearward mints for
 * the upstream (RFC 9068, `act` per RFC 8693 4.1), in `Authorization`.
 * `upstream_token: assertion`: a signed identity assertion bound to the
 * request, in `header`.
 */
export interface UpstreamTokenConfig {
  mode: 'exchange' | 'assertion'
  /** `aud` of what is signed (`upstream_audience`, default the upstream's origin). */
  audience: string
  /** What the signed `scope` may hold: the token's scopes within these (`upstream_scopes`, default every scope the route requires). */
  scopes: string[]
  /** `exp` - `iat` (`upstream_token_lifetime`; default 60 s for exchange, 30 s for assertion). */
  lifetimeSec: number
  /** The request header it travels in, lower case: `authorization` (exchange) or `upstream_assertion.header`. */
  header: string
}

/** A route's RFC 9728 metadata (`protected_resource`). */
export interface ProtectedResourceConfig {
  /** The resource identifier (`resource`, default public_url plus the route's path). */
  resource: string
  /** `resource_name` (`name`), shown to people by clients. */
  name: string | null
  /** `resource_documentation` (`documentation`): a page about the resource. */
  documentation: string | null
}

/**
 * RFC 9470 step-up: what a route, a method or an MCP tool demands of the
 * person's sign-in behind the token (`authentication: { acr, max_age }`).
 */
export interface AuthenticationRequirement {
  /** `acr` values accepted, in order of preference (the challenge's `acr_values`); null: any. */
  acr: string[] | null
  /** Longest time since `auth_time`, in seconds (the challenge's `max_age`); null: no limit. */
  maxAgeSec: number | null
}

/** An MCP route's rules (`mcp`). Rule keys are names or `*` globs (src/gateway/mcp/names.ts). */
export interface McpRouteConfig {
  /** Tool name (or pattern) to the scopes a `tools/call` of it needs besides the route's own. */
  tools: Record<string, string[]>
  /** Resource URI (or pattern) to the scopes a `resources/read` (or subscribe) of it needs. */
  resources: Record<string, string[]>
  /** Prompt name (or pattern) to the scopes a `prompts/get` of it needs. */
  prompts: Record<string, string[]>
  /**
   * Name (or pattern) to the step-up a call, read or get of it needs besides
   * the route's (a rule written `{ scopes, authentication }`); RFC 9470.
   */
  authentication: {
    tools: Record<string, AuthenticationRequirement>
    resources: Record<string, AuthenticationRequirement>
    prompts: Record<string, AuthenticationRequirement>
  }
  /** Largest JSON-RPC body the gateway reads to judge it (`max_body`, default 1mb). */
  maxBodyBytes: number
  /** Filter list results by the same rules (`filter_lists`, default true; only where rules exist). */
  filterLists: boolean
  /** MCP revisions the route accepts (`protocol_versions`); null: any. */
  protocolVersions: string[] | null
  /** Origins a browser request may come from (`allowed_origins`, default public_url's origin). */
  allowedOrigins: string[]
}

export interface GatewayConfig {
  realm: string
  /** exp/nbf tolerance (`clock_skew`, default 30s, at most 60s). */
  clockSkewSec: number
  /** Verified-token cache (`token_cache.max_entries`, default 10000). */
  tokenCacheMaxEntries: number
  /** Introspection result cache TTL caps (`introspection_cache.ttl`, `.negative_ttl`). */
  introspectionCacheTtlSec: number
  introspectionNegativeTtlSec: number
  /** How often the in-memory revocation list is resynced from the store (default 30s). */
  revocationResyncSec: number
  /**
   * How long after its token's `exp` an open response or WebSocket tunnel
   * is ended (`stream_expiry_grace`, default 30s).
   */
  streamExpiryGraceSec: number
  identityHeaders: IdentityHeaders
  /** Client addresses whose X-Forwarded-* headers are trusted (`trusted_proxies`). */
  trustedProxies: string[]
  /** `client_certificate_header`: where a trusted proxy reports the client certificate (RFC 8705 behind TLS termination); null: none. */
  clientCertificateHeader: string | null
}

/** `dpop`: how DPoP proofs (RFC 9449) are checked, by the token endpoint and the gateway alike. */
export interface DpopConfig {
  /** Accepted proof algorithms (`dpop.algs`); asymmetric only. */
  algs: string[]
  /** How old a proof's `iat` may be (`dpop.iat_window`, default 60s); the jti is remembered this long. */
  iatWindowSec: number
  /** How far ahead of our clock a proof's `iat` may be (`dpop.iat_leeway`, default 5s). */
  iatLeewaySec: number
  /** Server nonces (`dpop.nonce`); null (the default) when off. */
  nonce: { secret: string; ttlSec: number } | null
}

/**
 * How long a client may take to send its request (`client_timeouts`). A
 * client that is too slow gets 408 where an answer can still be sent.
 */
/** `http2`: HTTP/2 on `listen` (docs/http2-grpc.md). */
export interface Http2Config {
  /** Offer `h2` by ALPN beside `http/1.1` on a TLS listen (`http2.tls`, default false). */
  tls: boolean
  /** Take h2c with prior knowledge beside HTTP/1.1 on a plain listen (`http2.cleartext`, default false). */
  cleartext: boolean
  /** Streams a client may have open at once on one connection (`max_concurrent_streams`, default 100). */
  maxConcurrentStreams: number
  /** Largest request header list, HPACK-decoded, in bytes (`max_header_list_size`, default 16 KiB). */
  maxHeaderListBytes: number
  /** Streams a client may reset within `resetWindowMs` before the connection is closed (`max_resets`, default 200). */
  maxResets: number
  /** Streams the connections of one client address may reset together within `resetWindowMs` (`max_resets_per_address`, default 400). */
  maxResetsPerAddress: number
  /** The window `maxResets` is counted in (`reset_window`, default 10s). */
  resetWindowMs: number
}

export interface ClientTimeouts {
  /** From connection (or the previous response) to the end of the request head (`headers`, default 20s). */
  headersMs: number
  /** Longest silence while a request body is arriving (`body_idle`, default 15s). */
  bodyIdleMs: number
  /** From the end of the request head to the end of its body (`request`, default 300s). */
  requestMs: number
  /** An idle keep-alive connection is closed after this (`keep_alive`, default 65s). */
  keepAliveMs: number
}

/** `admin_api` when enabled (src/config/sections/admin-api.ts, docs/admin.md). */
export interface AdminApiConfig {
  /** Also served on the main listener under this path; null: admin_listen only. */
  publicPath: string | null
  /** Client ids that may be granted the admin scopes. */
  clients: string[]
  /** Usernames (or subs) of the people who may be granted the admin scopes, as configured. */
  people: string[]
  /** `people` as the `sub` a token carries (a YAML user's username resolved to their sub). */
  peopleSubs: string[]
}

export interface Config {
  /** Absolute path of the file this came from (or `<inline>`). */
  file: string
  listen: ListenAddress
  adminListen: ListenAddress | null
  /** Issuer identifier and {base_url}; no trailing slash. */
  publicUrl: string
  tls: TlsConfig | null
  store: StoreConfig
  log: LogConfig
  /** `audit`: the audit trail's destination (restart to change). */
  audit: AuditDestination
  /** Honour an incoming X-Request-Id (`request_id.trust_incoming`, default false). */
  trustIncomingRequestId: boolean
  /** Grace for in-flight requests at shutdown (`shutdown_timeout`, default 10s). */
  shutdownTimeoutMs: number
  clientTimeouts: ClientTimeouts
  /** `http2`; the defaults leave HTTP/2 off. */
  http2: Http2Config
  authorizationServer: AuthorizationServerConfig | null
  issuers: IssuerConfig[]
  gateway: GatewayConfig
  routes: RouteConfig[]
  dpop: DpopConfig
  /**
   * Worker processes sharing `listen` (`workers`; `auto` resolved to the
   * host's cores). 1: one process, no primary (src/workers/).
   */
  workers: number
  /** `telemetry.traces`; null: export only if the OTEL_* environment asks (src/telemetry/tracing.ts). */
  traces: TracesConfig | null
  /** `signals` (OpenID Shared Signals, docs/signals.md); null when absent. */
  signals: SignalsConfig | null
  /** `admin_api` when enabled; absent or null: off. */
  adminApi?: AdminApiConfig | null
}

/** `signals.transmitters[]`: an identity provider whose Security Event Tokens bearward acts on. */
export interface SignalTransmitterConfig {
  /** The exact `iss` of its SETs. */
  issuer: string
  jwksUri: string
  /** The `aud` its SETs must carry. */
  audience: string
  delivery: 'push' | 'poll'
  /** Accepted JWS algorithms; asymmetric only. */
  algorithms: string[]
  /** RFC 8936 poll delivery; null for push. `auth` is an Authorization header value, never logged. */
  poll: { url: string; intervalSec: number; maxEvents: number; auth: string | null; timeoutMs: number } | null
  /** Where a signal leaves it to the operator, whether grants end with the sessions. */
  onSignal: 'sessions' | 'grants'
  /** `subjects.email`: how an `email` subject finds a person; null: it finds nobody. */
  subjects: { email: { kind: 'users' } | { kind: 'provider'; provider: string } | null }
  /** Where it is in the config (`signals.transmitters[0]`). */
  position: string
}

/** `signals`. */
export interface SignalsConfig {
  transmitters: SignalTransmitterConfig[]
  /** `signals.transmitter` when `enabled: true`; null otherwise. */
  transmitter: SignalTransmitterOutConfig | null
}

/** `signals.transmitter`: bearward's own Shared Signals transmitter (docs/signals.md). */
export interface SignalTransmitterOutConfig {
  /** Receiver hosts pushed to although they resolve to a private or loopback address (lower case). */
  allowHosts: string[]
  /** `queue.max`: events held per receiver at most. */
  queueMax: number
}

/** A route's pool of upstream targets (`upstream: [..]` or `upstreams`). */
export interface UpstreamPoolConfig {
  /** Target URLs without a trailing slash; one scheme and one path for all (checked at load). */
  targets: string[]
  balance: 'round_robin' | 'least_request'
  health: {
    /** Active checks GET this path; null: passive ejection only. */
    path: string | null
    intervalMs: number
    timeoutMs: number
    unhealthyAfter: number
    healthyAfter: number
  }
  /** `dns.servers`: resolvers for the targets' host names; null: the system's. */
  dnsServers: string[] | null
}
