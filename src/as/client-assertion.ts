/**
 * `private_key_jwt`: the client authenticates with a JWT it signed with its
 * own key (RFC 7523 2.2 and 3, OIDC Core 9), sent as `client_assertion` with
 * `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer`.
 *
 * What is checked, in this order (every failure is 401 invalid_client,
 * {@link InvalidClientAssertion}; the cause is only logged):
 * 1. a compact JWS of at most 16 KiB; `alg` one of
 *    {@link CLIENT_ASSERTION_ALGS} (asymmetric only: never `none`, never an
 *    HMAC, so a public key can never be used as a shared secret); `typ`
 *    absent, `JWT` or `client-authentication+jwt` (an access token, an ID-JAG
 *    or a DPoP proof is not a client assertion); no `jku`/`x5u`/`jwk`/`x5c`
 *    (keys come from the client's registration only); no unknown `crit`;
 * 2. the key: by `kid` in the client's `jwks` or `jwks_uri` set (an unknown
 *    kid refetches the published set, at most every 30 s);
 * 3. the signature; `iss` = `sub` = the client_id;
 * 4. `aud`: one value, the issuer, the token endpoint or the URL of the
 *    endpoint called (RFC 7523 3 point 3; several values are refused, so an
 *    assertion made for another server cannot also name this one);
 * 5. usable for at most 5 minutes (plus the clock skew): `exp` present and
 *    not passed; with an `iat`, no more than 5 minutes after it (authlib, for
 *    one, sets `exp` an hour ahead: its assertion is accepted, for 5 minutes);
 *    without one, `exp` at most 5 minutes ahead. `nbf` and `iat` not in the
 *    future;
 * 6. `jti` present, and never seen before for this client: remembered in the
 *    store for as long as the assertion is usable, so a replay is refused at
 *    every instance sharing it (RFC 7523 3 point 7).
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-2.2
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-3
 * @see https://openid.net/specs/openid-connect-core-1_0.html#ClientAuthentication
 */
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import { epochSeconds } from '../clock.js'
import type { ClientConfig } from '../config/validated-config.js'
import { InvalidClientAssertion, TemporarilyUnavailable } from '../errors.js'
import { hashToken } from '../store/hash.js'
import type { AsContext } from './context.js'

/** RFC 7523 2.2: the `client_assertion_type` of a JWT client assertion. */
export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'

/** `token_endpoint_auth_signing_alg_values_supported` (RFC 8414 2): asymmetric JWS algorithms only. */
export const CLIENT_ASSERTION_ALGS: readonly string[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']

/** The longest an assertion may still be valid when it arrives. */
export const MAX_ASSERTION_LIFETIME_SEC = 300

/** An assertion is a few hundred bytes; a much larger one is not one. */
export const MAX_ASSERTION_BYTES = 16 * 1024

/** `jti` is client-chosen: past this length it is refused rather than stored. */
export const MAX_JTI_LENGTH = 256

/** `typ` values a client assertion may carry (RFC 7523bis `client-authentication+jwt`). */
const ASSERTION_TYPES: ReadonlySet<string> = new Set(['jwt', 'client-authentication+jwt', 'application/client-authentication+jwt'])

const KEY_LOCATION_HEADERS = ['jku', 'x5u', 'jwk', 'x5c'] as const

const ALGS: ReadonlySet<string> = new Set(CLIENT_ASSERTION_ALGS)

function refuse(cause: string): InvalidClientAssertion {
  return new InvalidClientAssertion({ cause: `client assertion: ${cause}` })
}

/** A segment of a compact JWS as a JSON object, or undefined. */
function decodePart(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** The header and unverified payload of a compact JWS, or a refusal. */
function parts(assertion: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  if (assertion.length > MAX_ASSERTION_BYTES) throw refuse('too large')
  const segments = assertion.split('.')
  if (segments.length !== 3) throw refuse('not a compact JWS')
  const header = decodePart(segments[0] as string)
  const payload = decodePart(segments[1] as string)
  if (header === undefined || payload === undefined) throw refuse('header or payload is not a JSON object')
  return { header, payload }
}

/**
 * The client an assertion claims to be (its unverified `sub`, RFC 7523 3
 * point 2), used only to find the client whose keys then verify it; `iss`
 * and `sub` are compared with that client's id after the signature holds.
 */
export function assertionClientId(assertion: string): string {
  const { payload } = parts(assertion)
  if (typeof payload.sub !== 'string' || payload.sub === '') throw refuse('no sub')
  return payload.sub
}

/** The URLs an assertion's `aud` may name when it is sent to `endpointUrl`. */
function acceptedAudiences(as: AsContext, endpointUrl: string): ReadonlySet<string> {
  return new Set([as.issuer, `${as.issuer}/token`, endpointUrl])
}

/** `aud` as one string: a string, or a list of exactly one. */
function singleAudience(aud: unknown): string | undefined {
  if (typeof aud === 'string') return aud
  if (Array.isArray(aud) && aud.length === 1 && typeof aud[0] === 'string') return aud[0]
  return undefined
}

/**
 * The last second (epoch) the assertion may be used: its `exp`, and no later
 * than {@link MAX_ASSERTION_LIFETIME_SEC} after its `iat`; without an `iat`,
 * `exp` itself must be that close. Throws when it is stale or from the future.
 */
function lastUsableSecond(claims: JWTPayload, now: number, skew: number): number {
  const exp = claims.exp as number
  const iat = claims.iat
  if (iat === undefined) {
    if (exp - now > MAX_ASSERTION_LIFETIME_SEC + skew) throw refuse('exp too far ahead')
    return exp
  }
  if (typeof iat !== 'number') throw refuse('iat is not a number')
  if (iat > now + skew) throw refuse('iat in the future')
  if (now - iat > MAX_ASSERTION_LIFETIME_SEC + skew) throw refuse('iat too old')
  return Math.min(exp, iat + MAX_ASSERTION_LIFETIME_SEC)
}

/**
 * Verify `assertion` as `client`'s private_key_jwt sent to `endpointUrl`, and
 * record its `jti`. Throws InvalidClientAssertion; StoreUnavailableError when
 * the store cannot say whether the jti was used (the caller fails closed).
 */
export async function verifyClientAssertion(as: AsContext, client: ClientConfig, assertion: string, endpointUrl: string): Promise<void> {
  const { header } = parts(assertion)
  const alg = header.alg
  if (typeof alg !== 'string' || !ALGS.has(alg)) throw refuse('alg not allowed')
  if (header.typ !== undefined && (typeof header.typ !== 'string' || !ASSERTION_TYPES.has(header.typ.toLowerCase())))
    throw refuse('typ is not a client assertion type')
  for (const name of KEY_LOCATION_HEADERS) if (header[name] !== undefined) throw refuse(`header ${name} present`)
  const kid = header.kid
  if (kid !== undefined && typeof kid !== 'string') throw refuse('kid is not a string')

  const keys = as.clientKeys.lookup(client)
  if (typeof keys === 'string') throw refuse(keys)
  let key: Awaited<ReturnType<typeof keys.resolve>>
  try {
    key = await keys.resolve(kid, alg)
  } catch (err) {
    // The client's published keys cannot be had: its authentication fails, it is not our outage.
    if (err instanceof TemporarilyUnavailable) throw refuse('jwks_uri could not be fetched')
    throw err
  }
  if (key === undefined) throw refuse('no key of the client for kid and alg')

  const skew = as.config.gateway.clockSkewSec
  const now = epochSeconds(as.clock)
  let claims: JWTPayload
  try {
    const result = await jwtVerify(assertion, key.key, {
      algorithms: [alg],
      issuer: client.clientId,
      subject: client.clientId,
      clockTolerance: skew,
      crit: {},
      requiredClaims: ['iss', 'sub', 'aud', 'exp', 'jti'],
      currentDate: new Date(as.clock.now()),
    })
    claims = result.payload
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw refuse('expired')
    const code = err instanceof joseErrors.JOSEError ? err.code : 'ERR_KEY_TYPE'
    const claim = err instanceof joseErrors.JWTClaimValidationFailed ? ` (${err.claim})` : ''
    throw refuse(`${code}${claim}`)
  }

  const aud = singleAudience(claims.aud)
  if (aud === undefined) throw refuse('aud is not a single value')
  if (!acceptedAudiences(as, endpointUrl).has(aud)) throw refuse('aud is not this server')
  const usableUntil = lastUsableSecond(claims, now, skew)
  const jti = claims.jti
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) throw refuse('jti missing or too long')
  const first = await as.store.useOnce(`client-assertion:${hashToken(`${client.clientId}\n${jti}`)}`, Math.max(1, usableUntil - now + skew))
  if (!first) throw refuse('jti replayed')
}
