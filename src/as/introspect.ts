/**
 * POST /introspect (RFC 7662). Only confidential clients registered with
 * `introspect: true` may call it. The answer starts from `{"active":false}`
 * and says more only for a live token of this issuer: an access token (JWT
 * or opaque) that is unexpired and not on the revocation list, or the
 * current refresh token of a live family.
 */
import { epochSeconds } from '../clock.js'
import { InvalidClient, InvalidRequest, MethodNotAllowed } from '../errors.js'
import { readForm } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import { hashToken } from '../store/hash.js'
import { findUserBySub } from './claims.js'
import { authenticateClient, CLIENT_AUTH_PARAMS } from './client-auth.js'
import type { AsContext, AsHandler } from './context.js'
import { looksLikeJwt } from '../tokens/jwt-shape.js'
import { verifyOwnAccessToken } from './verify-token.js'
import { strengthClaims, strengthOf } from './sign-in-strength.js'

/** RFC 7662 2.2 response members this server sends, and the person's claims of `access_token.claims`. */
export interface IntrospectionResponse {
  [claim: string]: unknown
  active: boolean
  scope?: string
  client_id?: string
  username?: string
  token_type?: 'Bearer' | 'DPoP' | 'refresh_token'
  exp?: number
  iat?: number
  nbf?: number
  sub?: string
  aud?: string | string[]
  iss?: string
  jti?: string
  /** RFC 9449 6.2: the key a DPoP-bound token is bound to; RFC 8705 3.2: the certificate a certificate-bound one is. */
  cnf?: { jkt: string } | { 'x5t#S256': string }
}

/** `cnf` of an answer: the DPoP key or the certificate a token or family is bound to (one at most). */
function confirmationOf(bound: { jkt?: string; x5t?: string }): Pick<IntrospectionResponse, 'cnf'> {
  if (bound.jkt !== undefined) return { cnf: { jkt: bound.jkt } }
  if (bound.x5t !== undefined) return { cnf: { 'x5t#S256': bound.x5t } }
  return {}
}

const INACTIVE: IntrospectionResponse = Object.freeze({ active: false })

/** The username of a user grant's subject, when the user is configured. */
function usernameOf(as: AsContext, sub: string, grantId: string | null): { username?: string } {
  if (grantId === null) return {}
  const user = findUserBySub(as, sub)
  return user === undefined ? {} : { username: user.username }
}

async function introspectAccessToken(as: AsContext, token: string): Promise<IntrospectionResponse | null> {
  const c = await verifyOwnAccessToken(as, token)
  if (c === null) return null
  return {
    // The person's claims first (access_token.claims): the members below always win.
    ...c.claims,
    active: true,
    scope: c.scope,
    client_id: c.clientId,
    ...usernameOf(as, c.sub, c.grantId),
    token_type: c.jkt === undefined ? 'Bearer' : 'DPoP',
    exp: c.exp,
    iat: c.iat,
    ...(c.nbf === null ? {} : { nbf: c.nbf }),
    // How and when the person signed in (RFC 9470 3: what step-up reads); none for a client's own token.
    ...(c.authTime === null ? {} : { auth_time: c.authTime }),
    ...(c.amr === undefined ? {} : { amr: c.amr }),
    ...(c.acr === undefined ? {} : { acr: c.acr }),
    sub: c.sub,
    aud: c.aud.length === 1 ? (c.aud[0] as string) : c.aud,
    iss: c.iss,
    jti: c.jti,
    ...confirmationOf(c),
    // RFC 8693 4.1: who acts for the subject (an exchanged token).
    ...(c.act === undefined ? {} : { act: c.act }),
    // RFC 9396 9.2: the details the token holds.
    ...(c.authorizationDetails === undefined ? {} : { authorization_details: c.authorizationDetails }),
  }
}

async function introspectRefreshToken(as: AsContext, token: string): Promise<IntrospectionResponse | null> {
  if (looksLikeJwt(token)) return null
  const found = await as.store.grants.findRefresh(hashToken(token))
  if (found === null || !found.current) return null
  const g = found.grant
  if (g.expiresAt <= epochSeconds(as.clock) || as.revocations.isRevoked(null, g.grantId)) return null
  return {
    active: true,
    scope: g.scope,
    client_id: g.clientId,
    ...usernameOf(as, g.sub, g.grantId),
    token_type: 'refresh_token',
    exp: g.expiresAt,
    iat: found.issuedAt,
    auth_time: g.authTime,
    ...strengthClaims(strengthOf(g)),
    sub: g.sub,
    iss: as.issuer,
    ...confirmationOf(g),
    // RFC 9396 9.2: what the grant holds, as every token refreshed from it may.
    ...(g.authorizationDetails === undefined ? {} : { authorization_details: g.authorizationDetails }),
  }
}

/** @see https://www.rfc-editor.org/rfc/rfc7662#section-2 */
export const handleIntrospect: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') throw new MethodNotAllowed(['POST'])
  const form = await readForm(req)
  form.assertNoRepeats(['token', 'token_type_hint', ...CLIENT_AUTH_PARAMS])
  const { client } = await authenticateClient(req, form, as, { confidentialOnly: true })
  // The request's span names the client only once it is authenticated: a refused one could name anyone (docs/telemetry.md).
  ctx.clientId = client.clientId
  if (!client.introspect) throw new InvalidClient('This client may not use introspection', { cause: 'introspect not allowed' })
  const token = form.get('token')
  if (token === undefined) throw new InvalidRequest('Parameter token is required')
  const lookups =
    form.get('token_type_hint') === 'refresh_token' ? [introspectRefreshToken, introspectAccessToken] : [introspectAccessToken, introspectRefreshToken]
  let answer: IntrospectionResponse = INACTIVE
  for (const lookup of lookups) {
    const found = await lookup(as, token)
    if (found !== null) {
      answer = found
      break
    }
  }
  sendJson(res, 200, answer, NO_STORE)
}
