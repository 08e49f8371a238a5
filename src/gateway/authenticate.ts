/**
 * From a bearer token to a decision for one route and method (docs/architecture.md,
 * the hot path): validate the token (a JWT locally, an opaque token by
 * introspection), check revocation on every request (cache hit or not),
 * apply the route's store_unavailable policy, then the step-up rule
 * (RFC 9470, step-up.ts), then the scope rule.
 *
 * Outcomes, all as OAuthError for `sendError`: 400 invalid_request (a `jwt`
 * route given a token that is not three segments), 401 invalid_token
 * (invalid, expired, revoked), 401 insufficient_user_authentication (the
 * sign-in is too weak or too old), 403 insufficient_scope, 503
 * temporarily_unavailable (keys, introspection or store out of reach).
 */
import type { Clock } from '../clock.js'
import type { GatewayConfig, RouteConfig } from '../config/validated-config.js'
import type { DpopVerifier } from '../dpop/verify-proof.js'
import { AccessTokenRevoked, InvalidDpopProof, InvalidRequest, InvalidToken, OAuthError, TemporarilyUnavailable } from '../errors.js'
import type { Logger } from '../log.js'
import { hashToken } from '../store/hash.js'
import { checkBearerGrammar } from '../http/authorization.js'
import { looksLikeJwt } from '../tokens/jwt-shape.js'
import type { OpaqueValidator } from './introspection-client.js'
import type { TokenPlan } from './plan/route-plan.js'
import { TokenCache } from './token-cache.js'
import type { TokenIdentity } from './token-identity.js'
import { identityFromClaims } from './identity.js'
import { invalidToken, JwtVerifier, unverifiedIssuer, type JwtIssuer } from '../tokens/verify-jwt.js'
import type { IncomingMessage } from 'node:http'
import type { ClientCertificates } from '../http/client-certificate.js'
import { checkBoundCertificate } from '../tokens/certificate-binding.js'
import { SpanKind, type Span, type Tracing } from '../telemetry/tracing.js'

/** The revocation list as the gateway reads it: in memory, kept in sync with the store. */
export interface RevocationView {
  /** `client`: the client and exp of an access token of this server's own (a disabled client's are refused). */
  isRevoked(jti: string | null, grantId: string | null, client?: { id: string; exp: number } | null): boolean
  readonly healthy: boolean
}

export interface AuthenticatorDeps {
  clock: Clock
  log: Logger
  revocations: RevocationView
  gateway: Pick<GatewayConfig, 'clockSkewSec' | 'tokenCacheMaxEntries'>
  /** Checks DPoP proofs (RFC 9449); without it a DPoP-scheme request is refused. */
  dpop?: DpopVerifier
  /** Records each authentication as a span of its request when spans are exported. */
  tracing?: Tracing
  /** The client certificate a request presented (RFC 8705); without it a certificate-bound token is refused. */
  certificates?: Pick<ClientCertificates, 'presented'>
}

/** A request that used the DPoP scheme (RFC 9449 7.1): what its proof must match. */
export interface DpopPresentation {
  /** The one `DPoP` header, or null when the request has none. */
  readonly proof: string | null
  /** `htu`: public_url's origin and the path the client used, no query. */
  readonly url: string
}

/** A verified JWT as the gateway keeps it: who it speaks for, and its nbf (epoch seconds) when it has one. */
interface VerifiedJwt {
  readonly identity: TokenIdentity
  readonly nbf: number | null
}

/** A verified JWT and the cache scope it was verified under. */
interface ScopedJwt {
  readonly scope: string
  readonly verified: VerifiedJwt
}

/** The built-in authorization server's issuer id (its acr values are ranked, step-up.ts). */
const SELF_ISSUER = 'self'

/** Scopes one token keeps validations for; beyond, the oldest is replaced. */
const MAX_SCOPES_PER_TOKEN = 4

function scoped(entries: readonly ScopedJwt[] | undefined, scope: string): VerifiedJwt | undefined {
  if (entries === undefined) return undefined
  for (const e of entries) if (e.scope === scope) return e.verified
  return undefined
}

function withScope(entries: readonly ScopedJwt[] | undefined, scope: string, verified: VerifiedJwt): readonly ScopedJwt[] {
  const others = (entries ?? []).filter((e) => e.scope !== scope)
  return [...others.slice(-(MAX_SCOPES_PER_TOKEN - 1)), { scope, verified }]
}

/** Validations kept by the token itself (see Authenticator.#recent). */
const RECENT_TOKENS = 1024

/** How often the fail-open warning may be logged. */
const OPEN_WARNING_INTERVAL_MS = 60_000

/** Validates tokens for one Runtime; owns the verified-token cache. */
export class Authenticator {
  readonly #clock: Clock
  readonly #log: Logger
  readonly #revocations: RevocationView
  readonly #skewSec: number
  readonly #jwt: JwtVerifier
  readonly #dpop: DpopVerifier | undefined
  readonly #tracing: Tracing | null
  readonly #certificates: Pick<ClientCertificates, 'presented'> | undefined
  /**
   * By the token's SHA-256: the validations of that token, one per cache
   * scope (audience and trusted issuers) it was checked under. Not by the
   * token itself, although that saves the hash on a hit: JWTs run to hundreds
   * of bytes, and raw keys cost more memory than the hash saves time
   * (docs/performance.md, "Which token caches hash the token").
   */
  readonly #verified: TokenCache<readonly ScopedJwt[]>
  /**
   * The most recently used validations again, by the token itself: a hit
   * here skips the SHA-256. Small on purpose, so
   * the raw JWTs it holds stay under a megabyte (docs/performance.md).
   */
  readonly #recent: TokenCache<readonly ScopedJwt[]>
  /** Verifications in flight, by cache key. */
  readonly #verifying = new Map<string, Promise<VerifiedJwt>>()
  #lastOpenWarningMs = Number.NEGATIVE_INFINITY

  constructor(deps: AuthenticatorDeps) {
    this.#clock = deps.clock
    this.#log = deps.log
    this.#revocations = deps.revocations
    this.#skewSec = deps.gateway.clockSkewSec
    this.#jwt = new JwtVerifier({ clock: deps.clock, clockSkewSec: deps.gateway.clockSkewSec })
    this.#dpop = deps.dpop
    this.#tracing = deps.tracing ?? null
    this.#certificates = deps.certificates
    this.#verified = new TokenCache(deps.gateway.tokenCacheMaxEntries)
    this.#recent = new TokenCache(Math.min(RECENT_TOKENS, deps.gateway.tokenCacheMaxEntries))
  }

  /**
   * The identity `token` speaks for, if it may make a `method` request on
   * the policy's route. Throws (or rejects with) an OAuthError otherwise.
   * Synchronous when the token's validation is cached: most requests reuse
   * a token, and a promise per request is measurable at proxy speed.
   *
   * @param grammarChecked the caller already checked the b64token grammar
   *   (query and body tokens); otherwise it is checked here, first, for every
   *   token not in the recent-token cache. A token found there is the exact
   *   string that passed the check when it was verified.
   * @param parent the request's recorded span, whose child the verification
   *   is (passed along, never found through async context); null: none.
   */
  authenticate(
    token: string,
    policy: TokenPlan,
    method: string,
    grammarChecked = false,
    dpop: DpopPresentation | null = null,
    parent: Span | null = null,
    req: IncomingMessage | null = null,
  ): TokenIdentity | Promise<TokenIdentity> {
    const now = this.#clock.now()
    const span =
      parent === null ? null : (this.#tracing?.child('bearward.token.verify', SpanKind.INTERNAL, { 'bearward.route': policy.route.name }, parent) ?? null)
    if (span !== null) return this.#traced(span, token, policy, method, now, grammarChecked, dpop, req)
    const identity = this.#identify(token, policy, now, grammarChecked, null)
    if (identity instanceof Promise) return identity.then((id) => this.#authorize(id, policy, method, now, token, dpop, req))
    return this.#authorize(identity, policy, method, now, token, dpop, req)
  }

  /**
   * authenticate() as a span: whether the validation came from the cache
   * (answered synchronously) or was verified or introspected now, the
   * issuer that vouched, and the refusal's code. Never the token.
   */
  #traced(
    span: Span,
    token: string,
    policy: TokenPlan,
    method: string,
    now: number,
    grammarChecked: boolean,
    dpop: DpopPresentation | null,
    req: IncomingMessage | null,
  ): TokenIdentity | Promise<TokenIdentity> {
    const settle = (identity: TokenIdentity): TokenIdentity => {
      span.setAttribute('bearward.token.issuer', identity.issuerId)
      span.end()
      return identity
    }
    const authorized = (identity: TokenIdentity): TokenIdentity | Promise<TokenIdentity> => {
      const result = this.#authorize(identity, policy, method, now, token, dpop, req)
      return result instanceof Promise ? result.then(settle, fail) : settle(result)
    }
    const fail = (err: unknown): never => {
      span.fail(err instanceof OAuthError ? err.code : 'error')
      span.end()
      throw err
    }
    try {
      const identity = this.#identify(token, policy, now, grammarChecked, span)
      span.setAttribute('bearward.token.cache', identity instanceof Promise ? 'miss' : 'hit')
      if (identity instanceof Promise) return identity.then(authorized, fail)
      return authorized(identity)
    } catch (err) {
      return fail(err)
    }
  }

  /**
   * Revocation, the store_unavailable policy, the DPoP binding, the step-up
   * rule and the scope rule, on every request, cache hit or not: a cached
   * validation says the token is good, never that this request's proof is,
   * nor that its sign-in is still recent enough.
   */
  #authorize(
    identity: TokenIdentity,
    policy: TokenPlan,
    method: string,
    now: number,
    token: string,
    dpop: DpopPresentation | null,
    req: IncomingMessage | null,
  ): TokenIdentity | Promise<TokenIdentity> {
    this.#current(identity, policy, now)
    // RFC 8705 3: a certificate-bound token only over a connection (or from a trusted proxy) presenting that certificate.
    if (identity.x5t !== null) {
      const mismatch = checkBoundCertificate(identity.x5t, req === null ? null : (this.#certificates?.presented(req) ?? null))
      if (mismatch !== null) throw mismatch
    } else if (policy.senderConstrained && identity.jkt === null) {
      throw new InvalidToken('This resource accepts sender-constrained access tokens only (DPoP-bound or certificate-bound)', {
        cause: 'unbound token on a sender_constraint: required route',
      })
    }
    // A bearer request with an unbound token (the common case) pays one comparison.
    if (dpop === null && identity.jkt === null) return this.#scoped(identity, policy, method, now)
    const bound = this.#bound(identity, method, token, dpop)
    return bound.then(() => this.#scoped(identity, policy, method, now))
  }

  /**
   * RFC 9449 7: a DPoP-bound token only with the DPoP scheme (7.2: as Bearer
   * it is refused), an unbound one only as Bearer, and the proof signed by
   * the key of `cnf.jkt` for this method, URI and token.
   */
  #bound(identity: TokenIdentity, method: string, token: string, dpop: DpopPresentation | null): Promise<void> {
    if (dpop === null)
      return Promise.reject(new InvalidToken('A DPoP-bound access token must be sent with the DPoP scheme', { cause: 'bound token sent as Bearer' }))
    if (identity.jkt === null) return Promise.reject(new InvalidToken('The access token is not DPoP-bound', { cause: 'DPoP scheme with an unbound token' }))
    if (dpop.proof === null) return Promise.reject(new InvalidDpopProof('A DPoP proof is required', { resource: true, cause: 'no DPoP header' }))
    if (this.#dpop === undefined) return Promise.reject(new InvalidToken('DPoP is not accepted here', { cause: 'no DPoP verifier' }))
    return this.#dpop.verify(dpop.proof, { method, url: dpop.url, accessToken: token, jkt: identity.jkt }).then(() => undefined)
  }

  /**
   * Step-up before scope: a token short of both gets the 401, whose
   * challenge names the method's scopes too (reply.ts), so the client's one
   * new authorization request asks for everything (docs/step-up.md).
   */
  #scoped(identity: TokenIdentity, policy: TokenPlan, method: string, now: number): TokenIdentity {
    const stepUp = policy.stepUp === null ? null : policy.stepUp.of(method)
    if (stepUp !== null) {
      const short = stepUp.check(identity.claims, now / 1000, this.#skewSec, identity.issuerId === SELF_ISSUER)
      if (short !== null) throw short
    }
    const refusal = policy.scopes.check(identity.scopes, method)
    if (refusal !== null) throw refusal
    return identity
  }

  /** Revocation and the store_unavailable policy. */
  #current(identity: TokenIdentity, policy: TokenPlan, now: number): void {
    // Revocation is known only to the list, never to the cache: every request asks.
    // A client entry speaks of this server's own tokens only: another issuer's client ids are not ours.
    const own = identity.issuerId === 'self' && identity.clientId !== null ? { id: identity.clientId, exp: identity.exp } : null
    if (this.#revocations.isRevoked(identity.jti, identity.grantId, own)) {
      throw new AccessTokenRevoked({ cause: 'jti, grant or client on the revocation list' })
    }
    if (!this.#revocations.healthy) {
      if (policy.route.storeUnavailable === 'closed') {
        throw new TemporarilyUnavailable('Revocation state is unavailable; try again later', {
          cause: 'revocation list unhealthy, store_unavailable: closed',
          headers: { 'retry-after': '5' },
        })
      }
      this.#warnOpen(now, policy.route)
    }
  }

  /** Drop every cached validation (at Runtime close). */
  clear(): void {
    this.#verified.clear()
    this.#recent.clear()
  }

  /** @param span the verification's span, parent of a key fetch or introspection call made for it; null: none. */
  #identify(token: string, policy: TokenPlan, now: number, grammarChecked: boolean, span: Span | null): TokenIdentity | Promise<TokenIdentity> {
    const kind = policy.route.token
    const recent = kind === 'introspect' ? undefined : this.#recent.get(token, now)
    if (recent === undefined && !grammarChecked) checkBearerGrammar(token)
    if (kind === 'introspect') return this.#opaque(token, policy, now, 0, null, span)
    const jwtShaped = looksLikeJwt(token)
    if (kind === 'any') {
      return jwtShaped && policy.jwtIssuers.length > 0 ? this.#fromJwt(token, policy, now, recent, span) : this.#opaque(token, policy, now, 0, null, span)
    }
    // docs/architecture.md, validation order step 1: not three segments is invalid_request.
    if (!jwtShaped) throw new InvalidRequest('The access token is malformed', { challenge: 'Bearer', cause: 'not three segments' })
    return this.#fromJwt(token, policy, now, recent, span)
  }

  /** @param recent what the recent-token cache holds for `token` (looked up by the caller). */
  #fromJwt(token: string, policy: TokenPlan, now: number, recent: readonly ScopedJwt[] | undefined, span: Span | null): TokenIdentity | Promise<TokenIdentity> {
    let hit = scoped(recent, policy.cacheScope)
    let tokenHash: string | null = null
    if (hit === undefined) {
      tokenHash = hashToken(token)
      const entries = this.#verified.get(tokenHash, now)
      hit = scoped(entries, policy.cacheScope)
      if (entries !== undefined && hit !== undefined) this.#recent.set(token, entries, hit.identity.exp * 1000, now)
    }
    if (hit !== undefined) {
      // The entry's deadline is exp; nbf cannot be in the future of a token
      // that was accepted, but a clock set back would make it so.
      if (hit.nbf !== null && hit.nbf > now / 1000 + this.#skewSec) throw invalidToken('nbf in the future')
      return hit.identity
    }
    // Concurrent first uses of one token share one verification: a client
    // that fans out with a fresh token must not cost one signature check
    // per in-flight request.
    tokenHash ??= hashToken(token)
    const cacheKey = tokenHash + policy.cacheScope
    let pending = this.#verifying.get(cacheKey)
    if (pending === undefined) {
      const issuers = policy.jwtIssuers
      const issuer = issuers.length === 1 ? issuers[0] : policy.jwtIssuerByIss.get(unverifiedIssuer(token) ?? '')
      if (issuer === undefined) throw invalidToken('issuer not trusted on this route')
      pending = this.#verify(token, tokenHash, issuer, policy, cacheKey, now, span)
      this.#verifying.set(cacheKey, pending)
    }
    return pending.then((verified) => verified.identity)
  }

  async #verify(
    token: string,
    tokenHash: string,
    issuer: JwtIssuer,
    policy: TokenPlan,
    cacheKey: string,
    now: number,
    span: Span | null,
  ): Promise<VerifiedJwt> {
    try {
      const { claims, exp, nbf } = await this.#jwt.verify(token, issuer, policy.route.audiences, span)
      const identity = identityFromClaims(issuer.id, issuer.issuer, claims, exp)
      if (identity === undefined) throw invalidToken('claim of the wrong type')
      const verified: VerifiedJwt = { identity, nbf }
      const entries = withScope(this.#verified.get(tokenHash, now), policy.cacheScope, verified)
      this.#verified.set(tokenHash, entries, verified.identity.exp * 1000, now)
      this.#recent.set(token, entries, verified.identity.exp * 1000, now)
      return verified
    } finally {
      this.#verifying.delete(cacheKey)
    }
  }

  /**
   * Ask each issuer the route trusts for opaque tokens, the built-in one
   * first (no network), from `from` on, until one knows the token as active.
   * Stays synchronous while the validators answer from their caches.
   */
  #opaque(token: string, policy: TokenPlan, now: number, from: number, failure: OAuthError | null, span: Span | null): TokenIdentity | Promise<TokenIdentity> {
    const validators = policy.opaque
    for (let i = from; i < validators.length; i++) {
      let answer: TokenIdentity | null | Promise<TokenIdentity | null>
      try {
        answer = (validators[i] as OpaqueValidator).validate(token, policy.route.audiences, now, span)
      } catch (err) {
        if (!(err instanceof TemporarilyUnavailable)) throw err
        failure = err
        continue
      }
      if (answer instanceof Promise) {
        return answer.then(
          (identity) => identity ?? this.#opaque(token, policy, now, i + 1, failure, span),
          (err: unknown) => {
            if (!(err instanceof TemporarilyUnavailable)) throw err
            return this.#opaque(token, policy, now, i + 1, err, span)
          },
        )
      }
      if (answer !== null) return answer
    }
    throw failure ?? invalidToken(validators.length === 0 ? 'no issuer for opaque tokens on this route' : 'not active')
  }

  #warnOpen(now: number, route: RouteConfig): void {
    if (now - this.#lastOpenWarningMs < OPEN_WARNING_INTERVAL_MS) return
    this.#lastOpenWarningMs = now
    this.#log.warn({ route: route.name }, 'revocation state unavailable: allowing tokens without a current revocation check (store_unavailable: open)')
  }
}
