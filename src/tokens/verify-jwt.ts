/**
 * JWT access-token validation, in the order docs/architecture.md gives (Authentication 5;
 * RFC 8725 3, RFC 9068 4). Both faces use it: the gateway for every issuer a
 * route trusts, the authorization server (/userinfo, /introspect, /revoke)
 * for its own tokens, with the same issuer object and so the same claim rule
 * (src/tokens/own-access-token.ts).
 *
 * 1. three segments, else 400 invalid_request (checked by the caller);
 * 2. `alg` in the issuer's allow-list, fixed by config and never `none` or
 *    symmetric, and fitting the key's type;
 * 3. the key chosen by `kid` among the issuer's trusted keys only; `jku`,
 *    `x5u`, `jwk` and `x5c` are never followed (a token carrying them is
 *    refused); an unknown `crit` is refused;
 * 4. the signature (jose `jwtVerify` with a KeyObject);
 * 5. `iss` equals the issuer exactly; 6. `aud` contains the route audience;
 * 7. `exp` and `nbf` with the configured skew; `typ` is `at+jwt` (so an
 *    ID token is not an access token); the issuer's required claims present
 *    and of the right type (`exp` for any issuer; the whole RFC 9068 2.2 set
 *    for our own tokens).
 *
 * The protected header is decoded before the signature check only to pick
 * the algorithm and key; no claim is trusted before the signature holds.
 * Every failure is 401 invalid_token with a fixed description: jose's
 * messages stay in the server log as the `cause`.
 */
import type { Span } from '../telemetry/span.js'
import type { KeyObject } from 'node:crypto'
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import { AccessTokenExpired, InvalidToken } from '../errors.js'

/** Fixed, safe descriptions (RFC 6750 3.1: never the token, never internal detail). */
export const TOKEN_INVALID = 'The access token is invalid'

export function invalidToken(cause: string): InvalidToken {
  return new InvalidToken(TOKEN_INVALID, { cause })
}

/** A public key the gateway trusts for one issuer. */
export interface VerificationKey {
  readonly kid: string | undefined
  readonly key: KeyObject
  /** The JWK's `alg`, when it pins one (RFC 7517 4.4). */
  readonly alg: string | undefined
}

/** Where an issuer's keys come from: the built-in key set or a remote JWKS. */
export interface KeyLookup {
  /**
   * The key for `kid` that can verify `alg`, or undefined. With no kid, the
   * issuer's only such key. May wait for a (rate-limited) refetch of a
   * remote JWKS; rejects with TemporarilyUnavailable when no keys could be
   * loaded at all. `parent`: the span a fetch made for it is a child of
   * (undefined: the current endpoint request's, telemetry/tracing.ts).
   */
  resolve(kid: string | undefined, alg: string, parent?: Span | null): VerificationKey | undefined | Promise<VerificationKey | undefined>
}

/** An issuer as the JWT path sees it. */
export interface JwtIssuer {
  /** Config id: `self` or an `issuers[].id`. */
  readonly id: string
  /** The exact `iss` value. */
  readonly issuer: string
  /** The allow-list; symmetric algorithms and `none` are never in it. */
  readonly algorithms: ReadonlySet<string>
  readonly algorithmList: readonly string[]
  readonly keys: KeyLookup
  /** Claims a token must carry (jose refuses it before anything reads them). */
  readonly requiredClaims: readonly string[]
  /** Whether the verified claims have the types this issuer's tokens must have. */
  readonly claimsWellFormed: (claims: Readonly<Record<string, unknown>>) => boolean
}

const NIST_CURVE: Readonly<Record<string, string>> = { ES256: 'prime256v1', ES384: 'secp384r1', ES512: 'secp521r1' }

/**
 * Whether `alg` can be used with `key` (RFC 7518 3.1, RFC 8037): RSA for
 * RS / PS, the matching curve for ES, Ed25519 / Ed448 for EdDSA. HMAC and
 * `none` fit no key, so a public key can never be used as an HMAC secret.
 */
export function algFitsKey(alg: string, key: KeyObject): boolean {
  const type = key.asymmetricKeyType
  if (alg === 'RS256' || alg === 'RS384' || alg === 'RS512') return type === 'rsa'
  if (alg === 'PS256' || alg === 'PS384' || alg === 'PS512') return type === 'rsa' || type === 'rsa-pss'
  if (alg === 'ES256' || alg === 'ES384' || alg === 'ES512') return type === 'ec' && key.asymmetricKeyDetails?.namedCurve === NIST_CURVE[alg]
  if (alg === 'EdDSA') return type === 'ed25519' || type === 'ed448'
  if (alg === 'Ed25519') return type === 'ed25519'
  return false
}

/** True when `key` may verify a token signed with `alg`. */
export function keyAccepts(key: VerificationKey, alg: string): boolean {
  return (key.alg === undefined || key.alg === alg) && algFitsKey(alg, key.key)
}

/**
 * Pick a key from a list: by kid when the token names one, else the only
 * key that accepts the algorithm (an ambiguous choice is refused).
 */
export function pickKey(
  keys: readonly VerificationKey[],
  byKid: ReadonlyMap<string, readonly VerificationKey[]>,
  kid: string | undefined,
  alg: string,
): VerificationKey | undefined {
  if (kid !== undefined) return byKid.get(kid)?.find((k) => keyAccepts(k, alg))
  let found: VerificationKey | undefined
  for (const k of keys) {
    if (!keyAccepts(k, alg)) continue
    if (found !== undefined) return undefined
    found = k
  }
  return found
}

/** Header parameters that point at keys outside our trust: never followed (RFC 8725 3.10). */
const KEY_LOCATION_HEADERS = ['jku', 'x5u', 'jwk', 'x5c'] as const

function decodeSegment(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/**
 * The unverified `iss` of a compact JWT, used only to choose which issuer's
 * keys to try when a route trusts several; the signature is then checked
 * with that issuer's keys alone and `iss` compared exactly.
 */
export function unverifiedIssuer(token: string): string | undefined {
  const first = token.indexOf('.')
  const second = token.indexOf('.', first + 1)
  const payload = decodeSegment(token.slice(first + 1, second))
  return typeof payload?.iss === 'string' ? payload.iss : undefined
}

/** A token that passed every check up to (not including) revocation and scope. */
export interface VerifiedJwt {
  readonly claims: JWTPayload
  /** Epoch seconds (always present: required of every issuer). */
  readonly exp: number
  /** Epoch seconds, or null when the token has no `nbf`. */
  readonly nbf: number | null
}

export interface JwtVerifierOptions {
  clock: Clock
  /** exp / nbf tolerance in seconds. */
  clockSkewSec: number
}

/** Verifies compact JWT access tokens for one Runtime. */
export class JwtVerifier {
  readonly #clock: Clock
  readonly #skew: number

  constructor(options: JwtVerifierOptions) {
    this.#clock = options.clock
    this.#skew = options.clockSkewSec
  }

  /**
   * Verify `token` (already known to have three segments) as an access token
   * of `issuer` for one of `audiences` (null: any; the authorization server
   * answers for all of its own). Throws InvalidToken (401), AccessTokenExpired,
   * or TemporarilyUnavailable (503) when the issuer's keys cannot be loaded.
   */
  async verify(token: string, issuer: JwtIssuer, audiences: readonly string[] | null, parent?: Span | null): Promise<VerifiedJwt> {
    const header = decodeSegment(token.slice(0, token.indexOf('.')))
    if (header === undefined) throw invalidToken('protected header is not a JSON object')
    const alg = header.alg
    if (typeof alg !== 'string' || !issuer.algorithms.has(alg)) throw invalidToken('alg not allowed for this issuer')
    for (const name of KEY_LOCATION_HEADERS) {
      if (header[name] !== undefined) throw invalidToken(`header ${name} present`)
    }
    const kid = header.kid
    if (kid !== undefined && typeof kid !== 'string') throw invalidToken('kid is not a string')
    const key = await issuer.keys.resolve(kid, alg, parent)
    if (key === undefined) throw invalidToken('no trusted key for kid and alg')

    let claims: JWTPayload
    try {
      const result = await jwtVerify(token, key.key, {
        algorithms: issuer.algorithmList as string[],
        issuer: issuer.issuer,
        ...(audiences === null ? {} : { audience: [...audiences] }),
        clockTolerance: this.#skew,
        typ: 'at+jwt',
        crit: {},
        requiredClaims: issuer.requiredClaims as string[],
        currentDate: new Date(this.#clock.now()),
      })
      claims = result.payload
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw new AccessTokenExpired({ cause: 'exp passed' })
      const code = err instanceof joseErrors.JOSEError ? err.code : 'ERR_KEY_TYPE'
      const claim = err instanceof joseErrors.JWTClaimValidationFailed ? ` (${err.claim})` : ''
      throw invalidToken(`${code}${claim}`)
    }
    // jose checked exp's type when present; every issuer requires it.
    if (typeof claims.exp !== 'number') throw invalidToken('no exp')
    if (!issuer.claimsWellFormed(claims)) throw invalidToken('claim of the wrong type')
    return { claims, exp: claims.exp, nbf: typeof claims.nbf === 'number' ? claims.nbf : null }
  }
}

/** Index keys by kid (a Map key only: a kid is never used in a path or a URL). */
export function indexByKid(keys: readonly VerificationKey[]): Map<string, VerificationKey[]> {
  const byKid = new Map<string, VerificationKey[]>()
  for (const k of keys) {
    if (k.kid === undefined) continue
    const list = byKid.get(k.kid)
    if (list === undefined) byKid.set(k.kid, [k])
    else list.push(k)
  }
  return byKid
}

/** A fixed key list: the built-in authorization server's keys, per Runtime. */
export class StaticKeys implements KeyLookup {
  readonly #keys: readonly VerificationKey[]
  readonly #byKid: ReadonlyMap<string, readonly VerificationKey[]>

  constructor(keys: readonly VerificationKey[]) {
    this.#keys = keys
    this.#byKid = indexByKid(keys)
  }

  resolve(kid: string | undefined, alg: string): VerificationKey | undefined {
    return pickKey(this.#keys, this.#byKid, kid, alg)
  }
}
