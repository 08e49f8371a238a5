/**
 * JWTs of other issuers accepted as RFC 7523 assertions
 * (`authorization_server.assertion_issuers`): one Runtime's issuers, their
 * keys, and the rules both kinds add to the checks every JWT assertion
 * shares (jwt-assertion.ts).
 *
 * For every assertion, in order: the unverified `iss` names a configured
 * issuer of the expected kind (an `id-jag` issuer's JWT never authenticates a
 * client, a `workload` issuer's never grants a person's access); a compact
 * JWS of at most 16 KiB; `alg` in the issuer's list (asymmetric only); `typ`
 * `oauth-id-jag+jwt` for an ID-JAG, absent or `JWT` for a workload token (so
 * neither passes for the other, nor an access token for either); no
 * `jku`/`x5u`/`jwk`/`x5c`; the key by `kid` from the issuer's set; the
 * signature; `iss` exactly; `aud` contains the issuer's `audience`; `exp`
 * present and not passed, `nbf` and `iat` not in the future (with the
 * gateway's clock skew). What each kind checks next is the caller's.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-3
 * @see https://datatracker.ietf.org/doc/draft-ietf-oauth-identity-assertion-authz-grant/
 */
import { Agent } from 'undici'
import type { JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import type { AssertionIssuerConfig } from '../config/validated-config.js'
import { JwksClient } from '../gateway/jwks-client.js'
import { parseJwks } from '../keys/jwk-set.js'
import type { Logger } from '../log.js'
import { StaticKeys, type KeyLookup } from '../tokens/verify-jwt.js'
import { CLIENT_JWKS_SETTINGS } from './client-keys.js'
import { assertionParts, audienceContains, unverifiedIssuer, verifyJwtAssertion, type Refuse } from './jwt-assertion.js'

/** The `typ` of an Identity Assertion JWT Authorization Grant. */
export const ID_JAG_TYP = 'oauth-id-jag+jwt'

/** `typ` values each kind accepts (lower case; `application/` prefix allowed, RFC 7515 4.1.9). */
const TYPES: Readonly<Record<AssertionIssuerConfig['kind'], ReadonlySet<string | undefined>>> = {
  'id-jag': new Set([ID_JAG_TYP]),
  workload: new Set([undefined, 'jwt']),
}

export interface VerifiedAssertion {
  readonly issuer: AssertionIssuerConfig
  readonly claims: JWTPayload & { sub: string; exp: number }
  /** The last second (epoch) it may be used: its `exp`. */
  readonly usableUntil: number
}

/** The issuers of one Runtime and their keys. */
export class AssertionIssuers {
  readonly #byIssuer = new Map<string, { config: AssertionIssuerConfig; keys: KeyLookup }>()
  readonly #remote: JwksClient[] = []
  readonly #agent = new Agent({ keepAliveTimeout: 30_000, connections: 8 })
  readonly #clock: Clock
  readonly #skew: number

  constructor(issuers: readonly AssertionIssuerConfig[], clock: Clock, log: Logger, clockSkewSec: number) {
    this.#clock = clock
    this.#skew = clockSkewSec
    for (const config of issuers) {
      let keys: KeyLookup
      if (config.jwksUri !== null) {
        const client = new JwksClient(`assertion issuer ${config.issuer}`, config.jwksUri, CLIENT_JWKS_SETTINGS, { clock, log, dispatcher: this.#agent })
        client.start()
        this.#remote.push(client)
        keys = client
      } else {
        keys = new StaticKeys(parseJwks(config.jwks) ?? [])
      }
      this.#byIssuer.set(config.issuer, { config, keys })
    }
  }

  /** Whether any issuer of `kind` is configured. */
  has(kind: AssertionIssuerConfig['kind']): boolean {
    for (const { config } of this.#byIssuer.values()) if (config.kind === kind) return true
    return false
  }

  /** The configured issuer of `kind` an assertion claims to come from (its unverified `iss`), or undefined. */
  issuerOf(assertion: string, kind: AssertionIssuerConfig['kind']): AssertionIssuerConfig | undefined {
    const iss = unverifiedIssuer(assertion)
    const found = iss === undefined ? undefined : this.#byIssuer.get(iss)
    return found?.config.kind === kind ? found.config : undefined
  }

  /**
   * Verify `assertion` as a JWT of a configured issuer of `kind` (the shared
   * checks of jwt-assertion.ts: the issuer's algorithms and keys, `aud`
   * containing the issuer's `audience`); `refuse` makes the error each
   * failure throws (the cause is logged, never sent). Rejects with
   * TemporarilyUnavailable when the issuer's keys cannot be loaded.
   */
  async verify(assertion: string, kind: AssertionIssuerConfig['kind'], refuse: Refuse): Promise<VerifiedAssertion> {
    const parts = assertionParts(assertion, refuse)
    const iss = typeof parts.payload.iss === 'string' ? parts.payload.iss : undefined
    const found = iss === undefined ? undefined : this.#byIssuer.get(iss)
    if (found === undefined || found.config.kind !== kind) throw refuse('unknown issuer')
    const { config, keys } = found
    const { claims, usableUntil } = await verifyJwtAssertion(
      assertion,
      parts,
      {
        algorithms: config.algorithms,
        types: TYPES[kind],
        wrongTypCause: 'wrong typ',
        keys,
        keyOwner: 'issuer',
        issuer: config.issuer,
        requiredClaims: ['iss', 'sub', 'aud', 'exp'],
        audience: audienceContains(config.audience, 'wrong aud'),
        clock: this.#clock,
        skewSec: this.#skew,
      },
      refuse,
    )
    if (typeof claims.sub !== 'string' || claims.sub === '') throw refuse('no sub')
    return { issuer: config, claims: claims as VerifiedAssertion['claims'], usableUntil }
  }

  /** Stop key fetches and release connections (at Runtime close). */
  async close(): Promise<void> {
    for (const c of this.#remote) c.close()
    await this.#agent.close()
  }
}
