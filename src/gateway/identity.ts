/**
 * What a verified token (a JWT, or an introspection answer) says about who
 * it speaks for, as the gateway tells the upstream.
 */
import { readConfirmation } from '../tokens/certificate-binding.js'
import type { TokenIdentity } from './token-identity.js'
import { grantedScopes } from './scope.js'

function optionalString(claims: Readonly<Record<string, unknown>>, name: string): string | null | false {
  const value = claims[name]
  if (value === undefined) return null
  return typeof value === 'string' ? value : false
}

/**
 * The identity of a token's claims. A claim of the wrong type makes the
 * token invalid (undefined) rather than being guessed at.
 */
export function identityFromClaims(issuerId: string, issuer: string, claims: Readonly<Record<string, unknown>>, exp: number): TokenIdentity | undefined {
  const sub = optionalString(claims, 'sub')
  const clientId = optionalString(claims, 'client_id')
  const jti = optionalString(claims, 'jti')
  const grantId = optionalString(claims, 'grant_id')
  const scopes = grantedScopes(claims)
  // A cnf this gateway cannot read (neither jkt nor x5t#S256, or either malformed) binds the token to something it cannot check.
  const cnf = readConfirmation(claims.cnf)
  if (sub === false || clientId === false || jti === false || grantId === false || scopes === null || cnf === false) return undefined
  return { issuerId, issuer, sub, clientId, scopes, jti, grantId, exp, jkt: cnf.jkt, x5t: cnf.x5t, claims }
}
