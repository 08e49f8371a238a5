import type { Clock } from '../../clock.js'
import { InvalidToken } from '../../errors.js'
import { randomId } from '../../crypto/random.js'
import { TokenCache } from '../token-cache.js'
import type { TokenIdentity } from '../token-identity.js'
import { cappedExp, narrowedScope } from './scopes.js'
import type { PreparedSigner } from './signer.js'

/**
 * `upstream_token: exchange`: the upstream gets, instead of the client's
 * token, a short-lived JWT access token of bearward's (RFC 9068's claims)
 * for its own audience, as if the gateway had exchanged the client's token
 * for it (RFC 8693): the same `sub`, the token's scopes narrowed to the
 * route's, `act` naming the client that acts for the subject (RFC 8693
 * 4.1), and the client token's `grant_id`. `client_id` stays the original
 * client, so an upstream that authorizes by client (or reads the identity
 * headers) keeps working unchanged, and `act` says the same thing in the
 * RFC's terms.
 *
 * Its `typ` is {@link MINTED_TOKEN_TYP}, never `at+jwt` (RFC 8725 3.11):
 * every check of bearward's own access tokens (src/tokens/verify-jwt.ts, at
 * both faces) requires `at+jwt`, so a minted token is good at its upstream
 * only. Were it one of ours, the upstream (or whoever read it there) could
 * present it at /introspect or /userinfo, or exchange it at /token for a
 * token of bearward's own audience.
 *
 * A minted token is cached by the client's token until shortly before its
 * `exp`, so a client that reuses its token costs one signature per
 * lifetime, not one per request. The gateway has already checked the
 * client's token (revocation included) for every request that reaches here,
 * so a revoked token stops getting minted tokens at once; one already sent
 * lives on at the upstream until its short `exp`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9068#section-2.2
 * @see https://www.rfc-editor.org/rfc/rfc8693#section-4.1
 */

/** The `typ` of a minted token's header: an access token for one upstream, not one bearward accepts. */
export const MINTED_TOKEN_TYP = 'bearward-upstream+jwt'

/** Minted tokens kept per route. Keys are client tokens (hundreds of bytes each, like the gateway's recent-token cache), so the bound is memory. */
export const MAX_MINTED_TOKENS = 10_000

export interface ExchangeOptions {
  signer: PreparedSigner
  clock: Clock
  /** `iss`: bearward's issuer (public_url), whose /jwks.json verifies the token. */
  issuer: string
  audience: string
  scopes: readonly string[]
  lifetimeSec: number
  maxEntries?: number
}

export class ExchangeMinter {
  readonly #signer: PreparedSigner
  readonly #clock: Clock
  readonly #issuer: string
  readonly #audience: string
  readonly #allowed: ReadonlySet<string>
  readonly #lifetimeSec: number
  /** How long before `exp` a cached token stops being handed out: it must still be good when the upstream reads it. */
  readonly #marginSec: number
  /** `Bearer <minted>` by the client's token. */
  readonly #cache: TokenCache<string>
  /** Mints under way, by the client's token: concurrent first requests share one signature. */
  readonly #pending = new Map<string, Promise<string>>()

  constructor(o: ExchangeOptions) {
    this.#signer = o.signer
    this.#clock = o.clock
    this.#issuer = o.issuer
    this.#audience = o.audience
    this.#allowed = new Set(o.scopes)
    this.#lifetimeSec = o.lifetimeSec
    this.#marginSec = Math.min(10, Math.ceil(o.lifetimeSec / 4))
    this.#cache = new TokenCache(o.maxEntries ?? MAX_MINTED_TOKENS)
  }

  /** The Authorization value for a request made with `token`: synchronous when a minted token is cached. */
  value(token: string, identity: TokenIdentity): string | Promise<string> {
    const nowMs = this.#clock.now()
    const cached = this.#cache.get(token, nowMs)
    if (cached !== undefined) return cached
    let pending = this.#pending.get(token)
    if (pending === undefined) {
      pending = this.#mint(token, identity, nowMs)
      this.#pending.set(token, pending)
      const forget = (): void => {
        this.#pending.delete(token)
      }
      pending.then(forget, forget)
    }
    return pending
  }

  async #mint(token: string, identity: TokenIdentity, nowMs: number): Promise<string> {
    const sub = identity.sub ?? identity.clientId
    if (sub === null) throw new InvalidToken('The access token names no subject to act for', { cause: 'upstream token: no sub or client_id' })
    const iat = Math.floor(nowMs / 1000)
    // Never usable for longer than the client's own token.
    const exp = cappedExp(iat, this.#lifetimeSec, identity.exp)
    const claims: Record<string, unknown> = {
      iss: this.#issuer,
      sub,
      aud: this.#audience,
      exp,
      iat,
      jti: randomId(),
      client_id: identity.clientId ?? sub,
      scope: narrowedScope(identity.scopes, this.#allowed),
    }
    if (identity.clientId !== null) claims.act = { sub: identity.clientId }
    // The person's grant, as every token exchanged from theirs carries it: an upstream can tell which authorization it serves.
    if (identity.grantId !== null) claims.grant_id = identity.grantId
    const value = `Bearer ${await this.#signer.sign(claims)}`
    this.#cache.set(token, value, (exp - this.#marginSec) * 1000, this.#clock.now())
    return value
  }
}
