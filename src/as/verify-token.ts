/**
 * Recognising access tokens this authorization server issued, for /userinfo,
 * /revoke and /introspect. A JWT is verified with our own keys only (alg
 * fixed per key, never taken from the token; typ at+jwt; iss; exp with the
 * configured skew); an opaque token is looked up by its hash.
 */
import { errors as joseErrors, jwtVerify, type JWTHeaderParameters, type JWTPayload } from 'jose'
import type { KeyObject } from 'node:crypto'
import { epochSeconds } from '../clock.js'
import { confirmationJkt } from '../dpop/thumbprint.js'
import { hashToken } from '../store/hash.js'
import type { OpaqueTokenRecord } from '../store/types.js'
import { looksLikeJwt } from '../tokens/jwt-shape.js'
import type { AsContext } from './context.js'

/** The claims of one of our access tokens, whatever its format: an opaque record's fields, plus what only a JWT carries. */
export interface OwnAccessToken extends OpaqueTokenRecord {
  format: 'jwt' | 'opaque'
  nbf: number | null
  authTime: number | null
}

export interface VerifyOptions {
  /** Treat a revoked token as valid (revocation itself needs to find it). Default false. */
  includeRevoked?: boolean
}

/** Longest token value worth looking at; ours are far shorter. */
const MAX_TOKEN_LENGTH = 8192

function stringClaim(payload: JWTPayload, name: string): string | null {
  const v = payload[name]
  return typeof v === 'string' && v !== '' ? v : null
}

function numberClaim(payload: JWTPayload, name: string): number | null {
  const v = payload[name]
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}

async function verifyJwt(as: AsContext, token: string): Promise<OwnAccessToken | null> {
  const keyFor = (header: JWTHeaderParameters): KeyObject => {
    const key = header.kid === undefined ? undefined : as.keys.find(header.kid)
    if (key === undefined || key.alg !== header.alg) throw new joseErrors.JWKSNoMatchingKey()
    return key.publicKey
  }
  let payload: JWTPayload
  try {
    ;({ payload } = await jwtVerify(token, keyFor, {
      issuer: as.issuer,
      typ: 'at+jwt',
      algorithms: as.keys.algorithms(),
      currentDate: new Date(as.clock.now()),
      clockTolerance: as.config.gateway.clockSkewSec,
      requiredClaims: ['iss', 'sub', 'exp', 'iat', 'jti', 'aud'],
    }))
  } catch {
    return null
  }
  const sub = stringClaim(payload, 'sub')
  const jti = stringClaim(payload, 'jti')
  const clientId = stringClaim(payload, 'client_id')
  const scope = payload.scope
  const exp = numberClaim(payload, 'exp')
  const iat = numberClaim(payload, 'iat')
  if (sub === null || jti === null || clientId === null || typeof scope !== 'string' || exp === null || iat === null) return null
  const aud = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? [])
  const jkt = confirmationJkt(payload.cnf)
  if (jkt === false) return null
  return {
    format: 'jwt',
    iss: as.issuer,
    sub,
    aud,
    clientId,
    scope,
    jti,
    iat,
    exp,
    nbf: numberClaim(payload, 'nbf'),
    grantId: stringClaim(payload, 'grant_id'),
    authTime: numberClaim(payload, 'auth_time'),
    ...(jkt === null ? {} : { jkt }),
    ...personClaims(as, payload),
  }
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
  const r = await as.store.getOpaqueToken(hashToken(token))
  if (r === null || r.iss !== as.issuer || r.exp <= epochSeconds(as.clock)) return null
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
    authTime: null,
    ...(r.jkt === undefined ? {} : { jkt: r.jkt }),
    ...(r.claims === undefined ? {} : { claims: { ...r.claims } }),
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
  if (!options.includeRevoked && as.revocations.isRevoked(claims.jti, claims.grantId)) return null
  return claims
}
