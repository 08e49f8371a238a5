/**
 * `private_key_jwt`: the client authenticates with a JWT it signed with its
 * own key (RFC 7523 2.2 and 3, OIDC Core 9), sent as `client_assertion` with
 * `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer`.
 *
 * What is checked, in this order, by the checks every JWT assertion shares
 * (jwt-assertion.ts) with this kind's rules (every failure is 401
 * invalid_client, {@link InvalidClientAssertion}; the cause is only logged):
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
 *    assertion made for another server cannot also name this one); for a
 *    `profile: fapi2` client the issuer only (FAPI 2.0 5.3.2.1);
 * 5. usable for at most 5 minutes (plus the clock skew): `exp` present and
 *    not passed; with an `iat`, no more than 5 minutes after it (authlib, for
 *    one, sets `exp` an hour ahead: its assertion is accepted, for 5 minutes);
 *    without one, `exp` at most 5 minutes ahead. `nbf` and `iat` not in the
 *    future;
 * 6. not a request object (no `response_type`): one travels through
 *    browsers and must not authenticate its client (request-object.ts);
 * 7. `jti` present, and never seen before for this client: remembered in the
 *    store for as long as the assertion is usable, so a replay is refused at
 *    every instance sharing it (RFC 7523 3 point 7).
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-2.2
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-3
 * @see https://openid.net/specs/openid-connect-core-1_0.html#ClientAuthentication
 */
import type { ClientConfig } from '../config/validated-config.js'
import { InvalidClientAssertion, TemporarilyUnavailable } from '../errors.js'
import type { KeyLookup } from '../tokens/verify-jwt.js'
import type { AsContext } from './context.js'
import {
  ASYMMETRIC_ALGS,
  assertionParts,
  singleAudience,
  singleUseJti,
  useJtiOnce,
  verifyJwtAssertion,
  type AssertionRules,
  type Refuse,
} from './jwt-assertion.js'

/** RFC 7523 2.2: the `client_assertion_type` of a JWT client assertion. */
export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'

/** `token_endpoint_auth_signing_alg_values_supported` (RFC 8414 2): asymmetric JWS algorithms only. */
export const CLIENT_ASSERTION_ALGS: readonly string[] = ASYMMETRIC_ALGS

/** The longest an assertion may still be valid when it arrives. */
export const MAX_ASSERTION_LIFETIME_SEC = 300

/** `typ` values a client assertion may carry, as compared (RFC 7523bis `client-authentication+jwt`). */
const ASSERTION_TYPES: ReadonlySet<string | undefined> = new Set([undefined, 'jwt', 'client-authentication+jwt'])

function refuse(cause: string): InvalidClientAssertion {
  return new InvalidClientAssertion({ cause: `client assertion: ${cause}` })
}

/**
 * The client an assertion claims to be (its unverified `sub`, RFC 7523 3
 * point 2), used only to find the client whose keys then verify it; `iss`
 * and `sub` are compared with that client's id after the signature holds.
 */
export function assertionClientId(assertion: string): string {
  const { payload } = assertionParts(assertion, refuse)
  if (typeof payload.sub !== 'string' || payload.sub === '') throw refuse('no sub')
  return payload.sub
}

/**
 * The URLs an assertion's `aud` may name when it is sent to `endpointUrl`:
 * for a FAPI 2.0 client the issuer alone (FAPI 2.0 5.3.2.1), so an assertion
 * made for one endpoint of a server that shares a URL with another cannot be
 * taken elsewhere; RFC 7523 allows the others.
 */
function acceptedAudiences(as: AsContext, client: ClientConfig, endpointUrl: string): ReadonlySet<string> {
  if (client.profile === 'fapi2') return new Set([as.issuer])
  return new Set([as.issuer, `${as.issuer}/token`, endpointUrl])
}

/**
 * The client's keys as the shared check reads them: a client without keys
 * to use, or whose published set cannot be had, fails its own
 * authentication (it is not our outage). Request objects (request-object.ts)
 * are verified with the same keys, refused with their own error.
 */
export function clientKeys(as: AsContext, client: ClientConfig, refuseWith: Refuse = refuse): KeyLookup {
  const keys = as.clientKeys.lookup(client)
  if (typeof keys === 'string') {
    return {
      resolve: () => {
        throw refuseWith(keys)
      },
    }
  }
  return {
    resolve: async (kid, alg) => {
      try {
        return await keys.resolve(kid, alg)
      } catch (err) {
        if (err instanceof TemporarilyUnavailable) throw refuseWith('jwks_uri could not be fetched')
        throw err
      }
    },
  }
}

/**
 * Verify `assertion` as `client`'s private_key_jwt sent to `endpointUrl`, and
 * record its `jti`. Throws InvalidClientAssertion; StoreUnavailableError when
 * the store cannot say whether the jti was used (the caller fails closed).
 */
export async function verifyClientAssertion(as: AsContext, client: ClientConfig, assertion: string, endpointUrl: string): Promise<void> {
  const parts = assertionParts(assertion, refuse)
  const accepted = acceptedAudiences(as, client, endpointUrl)
  const rules: AssertionRules = {
    algorithms: CLIENT_ASSERTION_ALGS,
    types: ASSERTION_TYPES,
    wrongTypCause: 'typ is not a client assertion type',
    keys: clientKeys(as, client),
    keyOwner: 'client',
    issuer: client.clientId,
    subject: client.clientId,
    requiredClaims: ['iss', 'sub', 'aud', 'exp', 'jti'],
    // RFC 7523 3 point 3: one value, so an assertion made for another server cannot also name this one.
    audience: (aud) => {
      const one = singleAudience(aud)
      if (one === undefined) return 'aud is not a single value'
      return accepted.has(one) ? undefined : 'aud is not this server'
    },
    maxLifetimeSec: MAX_ASSERTION_LIFETIME_SEC,
    clock: as.clock,
    skewSec: as.config.gateway.clockSkewSec,
  }
  const { claims, usableUntil } = await verifyJwtAssertion(assertion, parts, rules, refuse)
  // A request object (RFC 9101) the client signed travels through browsers: it must never authenticate the client.
  if (claims.response_type !== undefined) throw refuse('an authorization request object, not a client assertion')
  const jti = singleUseJti(claims, refuse)
  if (!(await useJtiOnce(as.store, 'client-assertion', client.clientId, jti, usableUntil, rules))) throw refuse('jti replayed')
}
