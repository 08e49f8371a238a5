/**
 * Recognising access tokens this authorization server issued, for /userinfo,
 * /revoke and /introspect. A JWT is verified exactly as the gateway verifies
 * it for a `self` route (src/tokens/verify-jwt.ts with the one own-issuer
 * object of this Runtime); an opaque token through the lookup the gateway
 * uses too (src/tokens/own-opaque-token.ts).
 */
import type { JWTPayload } from 'jose'
import type { OpaqueTokenRecord } from '../store/types.js'
import { looksLikeJwt } from '../tokens/jwt-shape.js'
import { readOwnAccessTokenClaims } from '../tokens/own-access-token.js'
import { lookupOwnOpaqueToken } from '../tokens/own-opaque-token.js'
import type { AsContext } from './context.js'

/** The claims of one of our access tokens, whatever its format: an opaque record's fields, plus what only a JWT carries. */
export interface OwnAccessToken extends Omit<OpaqueTokenRecord, 'authTime'> {
  format: 'jwt' | 'opaque'
  nbf: number | null
  /** The person's sign-in (absent for a client's own token); `amr`/`acr` say how (sign-in-strength.ts). */
  authTime: number | null
  /** RFC 8693 4.1 `act` (who acts for the subject) and 4.4 `may_act` (who may), when the token carries them. */
  act?: Record<string, unknown>
  mayAct?: Record<string, unknown>
}

function objectClaim(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

/** `act` and `may_act` of a token's claims (a JWT's payload, an opaque record's claims). */
function delegation(claims: Readonly<Record<string, unknown>> | undefined): Pick<OwnAccessToken, 'act' | 'mayAct'> {
  const act = objectClaim(claims?.act)
  const mayAct = objectClaim(claims?.may_act)
  return { ...(act === undefined ? {} : { act }), ...(mayAct === undefined ? {} : { mayAct }) }
}

/** `amr` and `acr` of a verified JWT, when of the right type (we wrote them; anything else is dropped). */
function signInClaims(payload: JWTPayload): { amr?: string[]; acr?: string } {
  const amr = Array.isArray(payload.amr) && payload.amr.every((m) => typeof m === 'string') ? { amr: payload.amr as string[] } : {}
  return { ...amr, ...(typeof payload.acr === 'string' ? { acr: payload.acr } : {}) }
}

export interface VerifyOptions {
  /** Treat a revoked token as valid (revocation itself needs to find it). Default false. */
  includeRevoked?: boolean
}

/** Longest token value worth looking at; ours are far shorter. */
const MAX_TOKEN_LENGTH = 8192

/**
 * A JWT through the gateway's verifier and the same `self` issuer (keys,
 * algorithms, typ at+jwt, iss, exp/nbf with the configured skew, header
 * rules, our claim set), for any of our audiences.
 */
async function verifyJwt(as: AsContext, token: string): Promise<OwnAccessToken | null> {
  let payload: JWTPayload
  try {
    ;({ claims: payload } = await as.jwtVerifier.verify(token, as.ownIssuer, null))
  } catch {
    return null
  }
  const c = readOwnAccessTokenClaims(payload)
  if (c === null) return null
  return {
    format: 'jwt',
    iss: as.issuer,
    sub: c.sub,
    aud: [...c.aud],
    clientId: c.clientId,
    scope: c.scope,
    jti: c.jti,
    iat: c.iat,
    exp: c.exp,
    nbf: c.nbf,
    grantId: c.grantId,
    authTime: c.authTime,
    ...signInClaims(payload),
    ...(c.jkt === null ? {} : { jkt: c.jkt }),
    ...(c.x5t === null ? {} : { x5t: c.x5t }),
    ...personClaims(as, payload),
    ...delegation(payload),
    ...detailsClaim(payload.authorization_details),
  }
}

/** RFC 9396 9.1: a JWT's `authorization_details`, when it is an array of objects (we wrote it; anything else is dropped). */
function detailsClaim(value: unknown): Pick<OwnAccessToken, 'authorizationDetails'> {
  if (!Array.isArray(value) || !value.every((e) => typeof e === 'object' && e !== null && !Array.isArray(e))) return {}
  return { authorizationDetails: value as Array<Record<string, unknown>> }
}

/** The person's claims a JWT carries: those `access_token.claims` names (as an opaque record keeps them). */
function personClaims(as: AsContext, payload: JWTPayload): { claims?: Record<string, unknown> } {
  const names = as.as.accessToken.claims
  if (names.length === 0) return {}
  const claims: Record<string, unknown> = {}
  for (const name of names) if (payload[name] !== undefined) claims[name] = payload[name]
  return Object.keys(claims).length === 0 ? {} : { claims }
}

async function lookupOpaque(as: AsContext, token: string): Promise<OwnAccessToken | null> {
  const found = await lookupOwnOpaqueToken(as.store, as.issuer, token, as.clock.now())
  if (found.state !== 'active') return null
  const r = found.record
  return {
    format: 'opaque',
    iss: r.iss,
    sub: r.sub,
    aud: [...r.aud],
    clientId: r.clientId,
    scope: r.scope,
    jti: r.jti,
    iat: r.iat,
    exp: r.exp,
    nbf: null,
    grantId: r.grantId,
    authTime: r.authTime ?? null,
    ...(r.amr === undefined ? {} : { amr: [...r.amr] }),
    ...(r.acr === undefined ? {} : { acr: r.acr }),
    ...(r.jkt === undefined ? {} : { jkt: r.jkt }),
    ...(r.x5t === undefined ? {} : { x5t: r.x5t }),
    ...(r.claims === undefined ? {} : { claims: { ...r.claims } }),
    ...delegation(r.claims),
    ...(r.authorizationDetails === undefined ? {} : { authorizationDetails: r.authorizationDetails }),
  }
}

/**
 * The claims of `token` when it is a live access token of this issuer, else
 * null (unknown, malformed, bad signature, expired, or revoked).
 * @see https://www.rfc-editor.org/rfc/rfc9068#section-4
 */
export async function verifyOwnAccessToken(as: AsContext, token: string, options: VerifyOptions = {}): Promise<OwnAccessToken | null> {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return null
  const claims = looksLikeJwt(token) ? await verifyJwt(as, token) : await lookupOpaque(as, token)
  if (claims === null) return null
  if (!options.includeRevoked && as.revocations.isRevoked(claims.jti, claims.grantId, { id: claims.clientId, exp: claims.exp })) return null
  return claims
}
