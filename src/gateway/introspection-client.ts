/**
 * Opaque access tokens (RFC 7662): validated by asking the issuer. For the
 * built-in authorization server that is the store lookup its own endpoints
 * use too (tokens/own-opaque-token.ts), so both faces agree on an expired
 * token; for a trusted issuer it is RFC 7662 introspection over a keep-alive
 * undici Pool, with Basic client authentication (RFC 7662 2.1, RFC 6749
 * 2.3.1). Only `active` equal to the boolean `true` is valid.
 *
 * When the issuer cannot answer (unreachable, timeout, 5xx, an answer that
 * is not introspection JSON, our own client credentials refused) the result
 * is 503 temporarily_unavailable: our failure, not the client's token.
 */
import { Pool } from 'undici'
import type { GatewayConfig, IssuerConfig, RemoteIntrospectionConfig } from '../config/validated-config.js'
import { AccessTokenExpired, StoreUnavailableError, TemporarilyUnavailable } from '../errors.js'
import type { OpaqueTokenRecord, Store } from '../store/types.js'
import { hashToken } from '../store/hash.js'
import { lookupOwnOpaqueToken, ownOpaqueState, type OwnOpaqueLookup } from '../tokens/own-opaque-token.js'
import { TokenCache } from './token-cache.js'
import type { TokenIdentity } from './token-identity.js'
import { identityFromClaims } from './identity.js'
import { SpanKind, type Span, type Tracing } from '../telemetry/tracing.js'

/** An introspection response larger than this is not one. */
const MAX_RESPONSE_BYTES = 64 * 1024

/** Validates opaque tokens for one issuer. */
export interface OpaqueValidator {
  readonly issuerId: string
  /**
   * The identity when the token is active for one of `audiences`; null when
   * this issuer does not know it as an active token for any of them. Throws
   * InvalidToken (expired) or TemporarilyUnavailable. Answers from a cache
   * come back synchronously (no promise on the hot path). `parent`: the
   * request's span, whose child an introspection call is.
   */
  validate(token: string, audiences: readonly string[], nowMs: number, parent?: Span | null): TokenIdentity | null | Promise<TokenIdentity | null>
  /** Release connections (at Runtime close). */
  close(): Promise<void>
}

/** True when a token's `aud` names one of the route's audiences. */
function intersects(aud: readonly string[], audiences: readonly string[]): boolean {
  for (const a of aud) if (audiences.includes(a)) return true
  return false
}

function unavailable(cause: string): TemporarilyUnavailable {
  return new TemporarilyUnavailable('The token could not be checked; try again later', { cause, headers: { 'retry-after': '5' } })
}

/** A stored opaque token and the identity it speaks for, built once per lookup. */
interface FoundToken {
  readonly record: OpaqueTokenRecord
  readonly identity: TokenIdentity
}

const NO_CLAIMS: Readonly<Record<string, unknown>> = Object.freeze({})

/**
 * The record as the sign-in fields are read from it: when and how the
 * person signed in, kept beside the token by the authorization server
 * (absent on a client's own token, and on records older than them).
 */
interface SignInFields {
  readonly iss: string
  readonly authTime?: unknown
  readonly acr?: unknown
  readonly amr?: unknown
}

/**
 * The claims of a stored token as a JWT of it would carry them: the
 * person's released claims, `authorization_details` (RFC 9396), and `auth_time`, `acr`, `amr` from the record,
 * which step-up reads (RFC 9470 3, src/gateway/step-up.ts).
 */
function storedClaims(record: OpaqueTokenRecord): Readonly<Record<string, unknown>> {
  const signIn: SignInFields = record
  const released = record.claims ?? NO_CLAIMS
  const details = record.authorizationDetails
  if (signIn.authTime === undefined && signIn.acr === undefined && signIn.amr === undefined && details === undefined) return released
  return Object.freeze({
    ...released,
    // RFC 9396 9.1: as the JWT's claim, for a route's `authorization_details` rule.
    ...(details === undefined ? {} : { authorization_details: details }),
    ...(signIn.authTime === undefined ? {} : { auth_time: signIn.authTime }),
    ...(signIn.acr === undefined ? {} : { acr: signIn.acr }),
    ...(signIn.amr === undefined ? {} : { amr: signIn.amr }),
  })
}

function foundToken(issuerId: string, record: OpaqueTokenRecord): FoundToken {
  const identity: TokenIdentity = {
    issuerId,
    issuer: record.iss,
    sub: record.sub,
    clientId: record.clientId,
    scopes: Object.freeze(record.scope.split(' ').filter((s) => s !== '')),
    jti: record.jti,
    grantId: record.grantId,
    exp: record.exp,
    jkt: record.jkt ?? null,
    x5t: record.x5t ?? null,
    claims: storedClaims(record),
  }
  return { record, identity: Object.freeze(identity) }
}

/** The built-in authorization server's opaque tokens, looked up in the store on every use (revocation deletes them). */
export class StoreIntrospector implements OpaqueValidator {
  readonly issuerId = 'self'
  readonly #store: Pick<Store, 'opaqueTokens'>
  readonly #issuer: string
  /**
   * Found records, by token (only tokens the store knows are kept, so keys
   * are our own tokens' size), for at most `ttlSec` and never past exp: a
   * store round trip per request would cap the route at the store's speed.
   * Safe because revocation does not rely on the record's absence: revoking
   * an opaque token also puts its jti (and a family revocation its grant id)
   * on the revocation list, which is checked on every request, hit or not.
   */
  readonly #found: TokenCache<FoundToken>
  readonly #ttlMs: number

  constructor(store: Pick<Store, 'opaqueTokens'>, issuer: string, cache: { maxEntries: number; ttlSec: number } = { maxEntries: 0, ttlSec: 0 }) {
    this.#store = store
    this.#issuer = issuer
    this.#found = new TokenCache(Math.max(1, cache.maxEntries))
    this.#ttlMs = cache.ttlSec * 1000
  }

  validate(token: string, audiences: readonly string[], nowMs: number): TokenIdentity | null | Promise<TokenIdentity | null> {
    const cached = this.#ttlMs > 0 ? this.#found.get(token, nowMs) : undefined
    if (cached !== undefined) return this.#judge(cached, audiences, nowMs)
    return this.#lookup(token, audiences, nowMs)
  }

  async #lookup(token: string, audiences: readonly string[], nowMs: number): Promise<TokenIdentity | null> {
    let lookup: OwnOpaqueLookup
    try {
      lookup = await lookupOwnOpaqueToken(this.#store, this.#issuer, token, nowMs)
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw unavailable('store unavailable for opaque token lookup')
      throw err
    }
    if (lookup.state === 'expired') throw new AccessTokenExpired({ cause: 'opaque token expired' })
    if (lookup.state !== 'active') return null
    const found = foundToken(this.issuerId, lookup.record)
    if (this.#ttlMs > 0) this.#found.set(token, found, Math.min(lookup.record.exp * 1000, nowMs + this.#ttlMs), nowMs)
    return this.#judge(found, audiences, nowMs)
  }

  /** A found record judged again at `nowMs` (a cached one may have expired since), then against the route's audiences. */
  #judge(found: FoundToken, audiences: readonly string[], nowMs: number): TokenIdentity | null {
    const state = ownOpaqueState(found.record, this.#issuer, nowMs)
    if (state === 'expired') throw new AccessTokenExpired({ cause: 'opaque token expired' })
    if (state === 'foreign' || !intersects(found.record.aud, audiences)) return null
    return found.identity
  }

  close(): Promise<void> {
    return Promise.resolve()
  }
}

/** RFC 6749 2.3.1: client_id and secret are form-encoded before Basic. */
function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+')
}

/** The HTTP part of RFC 7662: one POST per token, no caching. */
export class IntrospectionClient {
  readonly #pool: Pool
  readonly #path: string
  readonly #authorization: string
  readonly #timeoutMs: number

  readonly #tracing: Tracing | null
  readonly #endpoint: string

  constructor(config: RemoteIntrospectionConfig, tracing: Tracing | null = null) {
    this.#tracing = tracing
    const url = new URL(config.endpoint)
    this.#endpoint = url.origin + url.pathname
    this.#path = url.pathname + url.search
    this.#timeoutMs = config.timeoutMs
    this.#authorization = 'Basic ' + Buffer.from(`${formEncode(config.clientId)}:${formEncode(config.clientSecret)}`).toString('base64')
    this.#pool = new Pool(url.origin, {
      keepAliveTimeout: 30_000,
      connect: { timeout: config.timeoutMs },
      headersTimeout: config.timeoutMs,
      bodyTimeout: config.timeoutMs,
    })
  }

  /**
   * The response members when `active` is exactly `true`, null when the token
   * is not active. Throws TemporarilyUnavailable when there is no usable answer.
   */
  async introspect(token: string, parent?: Span | null): Promise<Readonly<Record<string, unknown>> | null> {
    let text: string
    let status: number
    try {
      const ask = () =>
        this.#pool.request({
          method: 'POST',
          path: this.#path,
          headers: {
            authorization: this.#authorization,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: `token=${encodeURIComponent(token)}&token_type_hint=access_token`,
          signal: AbortSignal.timeout(this.#timeoutMs),
        })
      // The span names the endpoint, never the token it was asked about.
      const res = await (this.#tracing?.traced('POST', SpanKind.CLIENT, { 'http.request.method': 'POST', 'url.full': this.#endpoint }, ask, parent) ?? ask())
      status = res.statusCode
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length
        if (size > MAX_RESPONSE_BYTES) throw new Error('response too large')
        chunks.push(chunk)
      }
      text = Buffer.concat(chunks, size).toString('utf8')
    } catch (err) {
      throw unavailable(`introspection request failed: ${err instanceof Error ? err.name : 'error'}`)
    }
    if (status !== 200) throw unavailable(`introspection answered HTTP ${status}`)
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      throw unavailable('introspection answer is not JSON')
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw unavailable('introspection answer is not a JSON object')
    const members = body as Record<string, unknown>
    // RFC 7662 2.2: active is a boolean; a string "true" is not true.
    return members.active === true ? members : null
  }

  close(): Promise<void> {
    return this.#pool.close()
  }
}

/** What an active introspection answer says, kept in the cache. */
interface ActiveToken {
  readonly identity: TokenIdentity
  /** The answer's `aud`, or null when it has none. */
  readonly aud: readonly string[] | null
  readonly nbf: number | null
}

/** false = inactive (negative entry). */
type CachedAnswer = ActiveToken | false

function audienceOf(value: unknown): readonly string[] | null | undefined {
  if (value === undefined) return null
  if (typeof value === 'string') return [value]
  if (Array.isArray(value) && value.every((v): v is string => typeof v === 'string')) return value
  return undefined
}

export interface RemoteIntrospectorOptions {
  gateway: Pick<GatewayConfig, 'clockSkewSec' | 'introspectionCacheTtlSec' | 'introspectionNegativeTtlSec' | 'tokenCacheMaxEntries'>
  /** Records each introspection call made for a traced request as its span. */
  tracing?: Tracing | null
}

/**
 * A trusted issuer's opaque tokens, by RFC 7662 introspection. Answers are
 * cached by token hash: an active one until its `exp` but never longer than
 * `introspection_cache.ttl`, an inactive one for `negative_ttl`. Failures to
 * get an answer are never cached.
 */
export class RemoteIntrospector implements OpaqueValidator {
  readonly issuerId: string
  readonly #issuer: string
  readonly #client: IntrospectionClient
  readonly #cache: TokenCache<CachedAnswer>
  readonly #options: RemoteIntrospectorOptions

  constructor(issuer: IssuerConfig & { introspection: RemoteIntrospectionConfig }, options: RemoteIntrospectorOptions) {
    this.issuerId = issuer.id
    this.#issuer = issuer.issuer
    this.#client = new IntrospectionClient(issuer.introspection, options.tracing ?? null)
    this.#cache = new TokenCache(options.gateway.tokenCacheMaxEntries)
    this.#options = options
  }

  validate(token: string, audiences: readonly string[], nowMs: number, parent?: Span | null): TokenIdentity | null | Promise<TokenIdentity | null> {
    // By hash: inactive answers are cached too, and a client controls the size of those tokens.
    const tokenHash = hashToken(token)
    const cached = this.#cache.get(tokenHash, nowMs)
    if (cached !== undefined) return this.#judge(cached, audiences, nowMs)
    return this.#ask(token, tokenHash, audiences, nowMs, parent)
  }

  async #ask(token: string, tokenHash: string, audiences: readonly string[], nowMs: number, parent: Span | null | undefined): Promise<TokenIdentity | null> {
    const answer = this.#interpret(await this.#client.introspect(token, parent), nowMs)
    const g = this.#options.gateway
    const deadline =
      answer === false ? nowMs + g.introspectionNegativeTtlSec * 1000 : Math.min(answer.identity.exp * 1000, nowMs + g.introspectionCacheTtlSec * 1000)
    this.#cache.set(tokenHash, answer, deadline, nowMs)
    return this.#judge(answer, audiences, nowMs)
  }

  #judge(answer: CachedAnswer, audiences: readonly string[], nowMs: number): TokenIdentity | null {
    if (answer === false) return null
    const skewMs = this.#options.gateway.clockSkewSec * 1000
    if (answer.identity.exp * 1000 <= nowMs - skewMs) throw new AccessTokenExpired({ cause: 'introspected token expired' })
    if (answer.nbf !== null && answer.nbf * 1000 > nowMs + skewMs) return null
    if (answer.aud !== null && !intersects(answer.aud, audiences)) return null
    return answer.identity
  }

  /** An active answer becomes an identity; one we cannot read counts as inactive. */
  #interpret(members: Readonly<Record<string, unknown>> | null, nowMs: number): CachedAnswer {
    if (members === null) return false
    const { exp, nbf, iss } = members
    if (iss !== undefined && iss !== this.#issuer) return false
    if ((exp !== undefined && typeof exp !== 'number') || (nbf !== undefined && typeof nbf !== 'number')) return false
    const aud = audienceOf(members.aud)
    if (aud === undefined) return false
    // Without exp, the cache TTL bounds how long the answer is trusted.
    const expSec = typeof exp === 'number' ? exp : Math.floor(nowMs / 1000) + this.#options.gateway.introspectionCacheTtlSec
    const identity = identityFromClaims(this.issuerId, this.#issuer, members, expSec)
    if (identity === undefined) return false
    return { identity, aud, nbf: typeof nbf === 'number' ? nbf : null }
  }

  close(): Promise<void> {
    this.#cache.clear()
    return this.#client.close()
  }
}
