/**
 * Access tokens of the trusted issuers (`issuers[]` with a `jwks_uri`) as the
 * authorization server sees them: RFC 8693 token exchange takes them as a
 * `subject_token`. They are verified exactly as the gateway verifies them on
 * a route that trusts that issuer (src/tokens/verify-jwt.ts: the issuer's
 * algorithms and keys, `typ: at+jwt`, `iss`, `exp`/`nbf` with the skew).
 */
import { Agent } from 'undici'
import type { JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import type { IssuerConfig } from '../config/validated-config.js'
import { JwksClient } from '../gateway/jwks-client.js'
import type { Logger } from '../log.js'
import { unverifiedIssuer, type JwtIssuer, type JwtVerifier } from '../tokens/verify-jwt.js'

/** A verified token of a trusted issuer. */
export interface TrustedToken {
  /** The exact `iss`. */
  readonly issuer: string
  readonly claims: JWTPayload & { sub?: unknown }
}

/** The trusted issuers of one Runtime, by `iss`. */
export class TrustedTokens {
  readonly #byIssuer = new Map<string, JwtIssuer>()
  readonly #clients: JwksClient[] = []
  readonly #agent = new Agent({ keepAliveTimeout: 30_000, connections: 8 })

  constructor(issuers: readonly IssuerConfig[], clock: Clock, log: Logger) {
    for (const issuer of issuers) {
      if (issuer.jwksUri === null) continue
      const keys = new JwksClient(issuer.id, issuer.jwksUri, issuer.jwks, { clock, log, dispatcher: this.#agent })
      keys.start()
      this.#clients.push(keys)
      this.#byIssuer.set(issuer.issuer, {
        id: issuer.id,
        issuer: issuer.issuer,
        algorithms: new Set(issuer.algorithms),
        algorithmList: Object.freeze([...issuer.algorithms]),
        keys,
        requiredClaims: ['exp'],
        claimsWellFormed: () => true,
      })
    }
  }

  /** Whether `token` claims (unverified) to come from a trusted issuer. */
  claims(token: string): boolean {
    const iss = unverifiedIssuer(token)
    return iss !== undefined && this.#byIssuer.has(iss)
  }

  /**
   * The verified token, or null when it is not a valid access token of a
   * trusted issuer (any audience: the exchange decides what it may become).
   * Rejects with TemporarilyUnavailable when the issuer's keys cannot be loaded.
   */
  async verify(token: string, verifier: JwtVerifier): Promise<TrustedToken | null> {
    const iss = unverifiedIssuer(token)
    const issuer = iss === undefined ? undefined : this.#byIssuer.get(iss)
    if (issuer === undefined) return null
    try {
      const { claims } = await verifier.verify(token, issuer, null)
      return { issuer: issuer.issuer, claims }
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_TEMPORARILY_UNAVAILABLE') throw err
      return null
    }
  }

  async close(): Promise<void> {
    for (const c of this.#clients) c.close()
    await this.#agent.close()
  }
}
