/**
 * Our own JWT access tokens, as both faces recognise them: the gateway (the
 * `self` issuer of a route) and the authorization server (/userinfo,
 * /introspect, /revoke) verify them with one issuer object, built once per
 * Runtime, so they require the same claims and read them the same way.
 *
 * src/as/issue.ts writes every claim of {@link OWN_ACCESS_TOKEN_CLAIMS}; a
 * token signed by our key without one of them, or with one of the wrong
 * type, is not ours to honour at either face.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9068#section-2.2
 */
import { readConfirmation } from './certificate-binding.js'
import type { KeySet } from '../keys/keyset.js'
import { StaticKeys, type JwtIssuer } from './verify-jwt.js'

/** RFC 9068 2.2's required claims, plus `scope`, which we always write (possibly empty). */
export const OWN_ACCESS_TOKEN_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id', 'scope'] as const

/** The claims of one of our JWT access tokens, read once their signature holds. */
export interface OwnJwtClaims {
  readonly sub: string
  readonly aud: readonly string[]
  readonly exp: number
  readonly iat: number
  readonly nbf: number | null
  readonly jti: string
  readonly clientId: string
  /** Space-separated, as issued. */
  readonly scope: string
  readonly grantId: string | null
  readonly authTime: number | null
  /** RFC 9449 6.1 `cnf.jkt`, or null for a bearer token. */
  readonly jkt: string | null
  /** RFC 8705 3.1 `cnf["x5t#S256"]`, or null when not certificate-bound. */
  readonly x5t: string | null
}

function text(claims: Readonly<Record<string, unknown>>, name: string): string | null {
  const v = claims[name]
  return typeof v === 'string' && v !== '' ? v : null
}

function seconds(claims: Readonly<Record<string, unknown>>, name: string): number | null {
  const v = claims[name]
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}

function audiences(aud: unknown): readonly string[] | null {
  if (typeof aud === 'string') return aud === '' ? null : [aud]
  if (Array.isArray(aud) && aud.length > 0 && aud.every((a): a is string => typeof a === 'string' && a !== '')) return aud
  return null
}

/**
 * The claims of a verified token when each required one has its type (and
 * the optional ones, when present, theirs); null otherwise.
 */
export function readOwnAccessTokenClaims(claims: Readonly<Record<string, unknown>>): OwnJwtClaims | null {
  const sub = text(claims, 'sub')
  const jti = text(claims, 'jti')
  const clientId = text(claims, 'client_id')
  const scope = claims.scope
  const aud = audiences(claims.aud)
  const exp = seconds(claims, 'exp')
  const iat = seconds(claims, 'iat')
  if (sub === null || jti === null || clientId === null || typeof scope !== 'string' || aud === null || exp === null || iat === null) return null
  const nbf = seconds(claims, 'nbf')
  const authTime = seconds(claims, 'auth_time')
  const grantId = text(claims, 'grant_id')
  const cnf = readConfirmation(claims.cnf)
  if ((claims.nbf !== undefined && nbf === null) || (claims.auth_time !== undefined && authTime === null)) return null
  if ((claims.grant_id !== undefined && grantId === null) || cnf === false) return null
  return { sub, aud, exp, iat, nbf, jti, clientId, scope, grantId, authTime, jkt: cnf.jkt, x5t: cnf.x5t }
}

/**
 * The authorization server as a JWT issuer: `iss` is public_url, the keys
 * are its key set (the algorithms its keys pin), the claim rule is ours.
 */
export function ownAccessTokenIssuer(publicUrl: string, keys: KeySet): JwtIssuer {
  const algorithms = keys.algorithms()
  return {
    id: 'self',
    issuer: publicUrl,
    algorithms: new Set(algorithms),
    algorithmList: Object.freeze([...algorithms]),
    keys: new StaticKeys(keys.all.map((k) => ({ kid: k.kid, key: k.publicKey, alg: k.alg }))),
    requiredClaims: OWN_ACCESS_TOKEN_CLAIMS,
    claimsWellFormed: (claims) => readOwnAccessTokenClaims(claims) !== null,
  }
}
