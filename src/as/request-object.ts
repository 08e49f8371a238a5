/**
 * Request objects (RFC 9101): an authorization request sent as a JWT the
 * client signed with its own keys, the keys its `private_key_jwt`
 * assertions are verified with (`jwks` or `jwks_uri`, client-keys.ts), as
 * `request` at /par (RFC 9126 3) or at /authorize (RFC 9101 5.1). Only by
 * value: `request_uri` naming another host is not fetched
 * (`request_uri_parameter_supported: false`).
 *
 * What is checked, by the checks every JWT assertion shares
 * (jwt-assertion.ts), each failure 400 `invalid_request_object` with its
 * cause logged ({@link InvalidRequestObject}):
 * 1. a compact JWS; `alg` asymmetric ({@link REQUEST_OBJECT_ALGS}: never
 *    `none`, never an HMAC, RFC 9101 10.1 / RFC 8725 3.1); `typ` absent,
 *    `JWT` or `oauth-authz-req+jwt` (RFC 9101 4); no `jku`/`x5u`/`jwk`/`x5c`;
 * 2. the key by `kid` and `alg` among the client's; the signature;
 * 3. `iss` the client_id (RFC 9101 10.2), `aud` this issuer and only it;
 * 4. `exp` present and short: at most {@link MAX_REQUEST_OBJECT_LIFETIME_SEC}
 *    after `iat` (without `iat`, `exp` at most that far ahead) and after
 *    `nbf` when there is one; `iat` and `nbf` not in the future;
 * 5. a `client_id` claim, when present, the client's (RFC 9101 6.3); no
 *    `request` or `request_uri` inside (RFC 9101 4); not `sub` the client
 *    without `typ: oauth-authz-req+jwt`, the shape of its client assertions
 *    (it travels through the browser: client-assertion.ts refuses a JWT with
 *    `response_type` too, so neither can be taken for the other);
 * 6. `jti` present and used once per client, remembered in the store while
 *    the object could be used, so a replay is refused at every instance.
 * A client without keys gets `request_not_supported` (OIDC Core 6.1).
 * Its claims then replace the request's parameters (RFC 9101 6.3): nothing
 * sent beside it is read, except the `client_id` that named whose keys verify it.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9101#section-6
 * @see https://www.rfc-editor.org/rfc/rfc9101#section-10
 */
import type { ClientConfig } from '../config/validated-config.js'
import { InvalidRequestObject, RequestNotSupported } from '../errors.js'
import { clientKeys } from './client-assertion.js'
import type { AsContext } from './context.js'
import { ASYMMETRIC_ALGS, assertionParts, singleAudience, singleUseJti, useJtiOnce, verifyJwtAssertion, type AssertionRules } from './jwt-assertion.js'

/** `request_object_signing_alg_values_supported` (RFC 9101 9.1 / RFC 8414 2): asymmetric JWS algorithms only. */
export const REQUEST_OBJECT_ALGS: readonly string[] = ASYMMETRIC_ALGS

/** The longest a request object may be used after it was made (FAPI 2.0 asks for at most 60 minutes; a redirect needs far less). */
export const MAX_REQUEST_OBJECT_LIFETIME_SEC = 600

/** `typ` values a request object may carry, as compared (RFC 9101 4: `oauth-authz-req+jwt` is recommended). */
const REQUEST_OBJECT_TYPES: ReadonlySet<string | undefined> = new Set([undefined, 'jwt', 'oauth-authz-req+jwt'])

/** Claims of the JWT itself, not parameters of the authorization request. */
const JWT_CLAIMS: ReadonlySet<string> = new Set(['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sub'])

/** Parameters a request object may hold as a JSON number (OIDC Core 6.1: `max_age`). */
const NUMERIC_PARAMS: ReadonlySet<string> = new Set(['max_age'])

/** Parameters a request object may hold as a JSON object (OIDC Core 5.5 `claims`), kept as its JSON text. */
const OBJECT_PARAMS: ReadonlySet<string> = new Set(['claims'])

/** Parameters a request object holds as a JSON array (RFC 9396 3: `authorization_details`), kept as its JSON text. */
const ARRAY_PARAMS: ReadonlySet<string> = new Set(['authorization_details'])

/** Parameters that may repeat (RFC 8707 `resource`), a JSON array of strings in a request object. */
const LIST_PARAMS: ReadonlySet<string> = new Set(['resource'])

function refuse(cause: string): InvalidRequestObject {
  return new InvalidRequestObject(undefined, { cause: `request object: ${cause}` })
}

/** The claims as authorization request parameters, or a refusal naming the claim that cannot be one. */
function parametersOf(claims: Readonly<Record<string, unknown>>, clientId: string): Array<[string, string]> {
  const params: Array<[string, string]> = [['client_id', clientId]]
  for (const [name, value] of Object.entries(claims)) {
    if (JWT_CLAIMS.has(name) || name === 'client_id') continue
    if (name === 'request' || name === 'request_uri') throw refuse(`${name} inside a request object`)
    if (typeof value === 'string') params.push([name, value])
    else if (NUMERIC_PARAMS.has(name) && typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) params.push([name, String(value)])
    else if (OBJECT_PARAMS.has(name) && typeof value === 'object' && value !== null && !Array.isArray(value)) params.push([name, JSON.stringify(value)])
    else if (ARRAY_PARAMS.has(name) && Array.isArray(value)) params.push([name, JSON.stringify(value)])
    else if (LIST_PARAMS.has(name) && Array.isArray(value) && value.every((v) => typeof v === 'string')) for (const v of value) params.push([name, v])
    else throw refuse(`claim ${name.slice(0, 40)} is not a parameter value`)
  }
  return params
}

/**
 * Verify `jwt` as a request object of `client`, spend its `jti`, and return
 * the authorization request's parameters it carries (`client_id` first).
 * Throws InvalidRequestObject; StoreUnavailableError when the store cannot
 * say whether the jti was used (the caller fails closed).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9101#section-6.3
 */
export async function verifyRequestObject(as: AsContext, client: ClientConfig, jwt: string): Promise<Array<[string, string]>> {
  // OIDC Core 6.1: a client with no keys registered cannot have signed one.
  if (client.jwks === undefined && client.jwksUri === undefined) throw new RequestNotSupported('This client has no keys to sign request objects with')
  const parts = assertionParts(jwt, refuse)
  const rules: AssertionRules = {
    algorithms: REQUEST_OBJECT_ALGS,
    types: REQUEST_OBJECT_TYPES,
    wrongTypCause: 'typ is not oauth-authz-req+jwt',
    keys: clientKeys(as, client, refuse),
    keyOwner: 'client',
    issuer: client.clientId,
    requiredClaims: ['iss', 'aud', 'exp', 'jti'],
    // RFC 9101 6.3 / FAPI 2.0: this issuer, and only it, so an object made for another server cannot be used here.
    audience: (aud) => (singleAudience(aud) === as.issuer ? undefined : 'aud is not this issuer'),
    maxLifetimeSec: MAX_REQUEST_OBJECT_LIFETIME_SEC,
    clock: as.clock,
    skewSec: as.config.gateway.clockSkewSec,
  }
  const { claims, usableUntil } = await verifyJwtAssertion(jwt, parts, rules, refuse)
  // One that could also pass as the client's assertion (sub = the client, an assertion's typ) is refused: it is sent through the browser.
  const typ = typeof parts.header.typ === 'string' ? parts.header.typ.toLowerCase().replace(/^application\//, '') : undefined
  if (claims.sub === client.clientId && typ !== 'oauth-authz-req+jwt') throw refuse('sub and typ make it a client assertion too')
  // The shared checks only stop using one 10 minutes after iat; the lifetime it states is refused as with nbf or without iat.
  const { iat, nbf, exp } = claims
  if (nbf !== undefined && (typeof nbf !== 'number' || exp - nbf > MAX_REQUEST_OBJECT_LIFETIME_SEC)) throw refuse('exp too far after nbf')
  if (iat !== undefined && exp - iat > MAX_REQUEST_OBJECT_LIFETIME_SEC) throw refuse('exp too far after iat')
  if (claims.client_id !== undefined && claims.client_id !== client.clientId) throw refuse('client_id differs from the outer client_id')
  const params = parametersOf(claims, client.clientId)
  const jti = singleUseJti(claims, refuse)
  if (!(await useJtiOnce(as.store, 'request-object', client.clientId, jti, usableUntil, rules))) throw refuse('jti replayed')
  return params
}
