/**
 * JWTs of other issuers accepted as RFC 7523 assertions
 * (`authorization_server.assertion_issuers`): one Runtime's issuers, their
 * keys, and the checks both kinds share.
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
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import type { AssertionIssuerConfig } from '../config/validated-config.js'
import { JwksClient } from '../gateway/jwks-client.js'
import { parseJwks } from '../keys/jwk-set.js'
import type { Logger } from '../log.js'
import { StaticKeys, type KeyLookup } from '../tokens/verify-jwt.js'
import { CLIENT_JWKS_SETTINGS } from './client-keys.js'

/** The `typ` of an Identity Assertion JWT Authorization Grant. */
export const ID_JAG_TYP = 'oauth-id-jag+jwt'

const MAX_ASSERTION_BYTES = 16 * 1024
const KEY_LOCATION_HEADERS = ['jku', 'x5u', 'jwk', 'x5c'] as const

/** `typ` values each kind accepts (lower case; `application/` prefix allowed, RFC 7515 4.1.9). */
const TYPES: Readonly<Record<AssertionIssuerConfig['kind'], ReadonlySet<string | undefined>>> = {
  'id-jag': new Set([ID_JAG_TYP]),
  workload: new Set([undefined, 'jwt']),
}

export interface VerifiedAssertion {
  readonly issuer: AssertionIssuerConfig
  readonly claims: JWTPayload & { sub: string; exp: number }
}

function decodePart(segment: string | undefined): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment ?? '', 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
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
    const payload = decodePart(assertion.split('.')[1])
    const iss = payload?.iss
    if (typeof iss !== 'string') return undefined
    const found = this.#byIssuer.get(iss)
    return found?.config.kind === kind ? found.config : undefined
  }

  /**
   * Verify `assertion` as a JWT of a configured issuer of `kind`; `refuse`
   * makes the error each failure throws (the cause is logged, never sent).
   * Rejects with TemporarilyUnavailable when the issuer's keys cannot be loaded.
   */
  async verify(assertion: string, kind: AssertionIssuerConfig['kind'], refuse: (cause: string) => Error): Promise<VerifiedAssertion> {
    if (assertion.length > MAX_ASSERTION_BYTES) throw refuse('too large')
    const segments = assertion.split('.')
    if (segments.length !== 3) throw refuse('not a compact JWS')
    const header = decodePart(segments[0])
    if (header === undefined) throw refuse('header is not a JSON object')
    const config = this.issuerOf(assertion, kind)
    if (config === undefined) throw refuse('unknown issuer')
    const found = this.#byIssuer.get(config.issuer)
    if (found === undefined) throw refuse('unknown issuer')
    const alg = header.alg
    if (typeof alg !== 'string' || !config.algorithms.includes(alg)) throw refuse('alg not allowed')
    const typ = typeof header.typ === 'string' ? header.typ.toLowerCase().replace(/^application\//, '') : header.typ
    if (typeof typ !== 'string' && typ !== undefined) throw refuse('typ is not a string')
    if (!TYPES[kind].has(typ)) throw refuse('wrong typ')
    for (const name of KEY_LOCATION_HEADERS) if (header[name] !== undefined) throw refuse(`header ${name} present`)
    const kid = header.kid
    if (kid !== undefined && typeof kid !== 'string') throw refuse('kid is not a string')
    const key = await found.keys.resolve(kid, alg)
    if (key === undefined) throw refuse('no key of the issuer for kid and alg')
    let claims: JWTPayload
    try {
      const result = await jwtVerify(assertion, key.key, {
        algorithms: [alg],
        issuer: config.issuer,
        audience: config.audience,
        clockTolerance: this.#skew,
        crit: {},
        requiredClaims: ['iss', 'sub', 'aud', 'exp'],
        currentDate: new Date(this.#clock.now()),
      })
      claims = result.payload
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw refuse('expired')
      if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'aud') throw refuse('wrong aud')
      const code = err instanceof joseErrors.JOSEError ? err.code : 'ERR_KEY_TYPE'
      const claim = err instanceof joseErrors.JWTClaimValidationFailed ? ` (${err.claim})` : ''
      throw refuse(`${code}${claim}`)
    }
    const now = Math.floor(this.#clock.now() / 1000)
    if (typeof claims.iat === 'number' && claims.iat > now + this.#skew) throw refuse('iat in the future')
    if (typeof claims.sub !== 'string' || claims.sub === '') throw refuse('no sub')
    return { issuer: config, claims: claims as VerifiedAssertion['claims'] }
  }

  /** Stop key fetches and release connections (at Runtime close). */
  async close(): Promise<void> {
    for (const c of this.#remote) c.close()
    await this.#agent.close()
  }
}
