/**
 * POST /revoke (RFC 7009). The client authenticates as at /token. The answer
 * is 200 with an empty body whether or not anything was revoked (RFC 7009
 * 2.2), so the endpoint is no oracle for token validity or ownership: a
 * token of another client is left alone and still answered 200.
 *
 * - refresh token: its grant is revoked (the family and every access token
 *   issued under it, RFC 7009 2.1).
 * - JWT access token: its jti goes on the revocation list until its exp.
 * - opaque access token: deleted, and its jti listed as well.
 */
import { tokenByJti } from '../audit/events.js'
import { epochSeconds } from '../clock.js'
import type { ClientConfig } from '../config/validated-config.js'
import { InvalidRequest, MethodNotAllowed } from '../errors.js'
import { readForm } from '../http/body.js'
import { NO_STORE } from '../http/reply.js'
import { hashToken } from '../store/hash.js'
import { authenticateClient, CLIENT_AUTH_PARAMS } from './client-auth.js'
import type { AsContext, AsHandler } from './context.js'
import { revokeEntry, revokeGrant } from './revocation.js'
import { looksLikeJwt } from '../tokens/jwt-shape.js'
import { verifyOwnAccessToken } from './verify-token.js'

/** A lookup answers true when it found the token (whether or not it was this client's): the search stops there. */
type Found = boolean

async function revokeAccessToken(as: AsContext, token: string, client: ClientConfig): Promise<Found> {
  const claims = await verifyOwnAccessToken(as, token, { includeRevoked: true })
  if (claims === null) return false
  if (claims.clientId !== client.clientId) return true
  if (claims.format === 'opaque') await as.store.opaqueTokens.delete(hashToken(token))
  await revokeEntry(as, { kind: 'jti', id: claims.jti, exp: claims.exp })
  as.audit.record({
    event: 'token.revoked',
    actor: { kind: 'client', id: client.clientId },
    subject: tokenByJti(claims),
    clientId: client.clientId,
    outcome: 'success',
  })
  return true
}

async function revokeRefreshToken(as: AsContext, token: string, client: ClientConfig): Promise<Found> {
  if (looksLikeJwt(token)) return false
  const found = await as.store.grants.findRefresh(hashToken(token))
  if (found === null) return false
  if (found.grant.clientId !== client.clientId) return true
  await revokeGrant(as, found.grant.grantId, Math.max(found.grant.maxAccessExp, epochSeconds(as.clock)))
  as.audit.record({
    event: 'grant.revoked',
    actor: { kind: 'client', id: client.clientId },
    subject: { kind: 'grant', id: found.grant.grantId },
    clientId: client.clientId,
    outcome: 'success',
    reason: 'refresh_token_revoked',
  })
  return true
}

/** @see https://www.rfc-editor.org/rfc/rfc7009#section-2 */
export const handleRevoke: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') throw new MethodNotAllowed(['POST'])
  const form = await readForm(req)
  form.assertNoRepeats(['token', 'token_type_hint', ...CLIENT_AUTH_PARAMS])
  const { client } = await authenticateClient(req, form, as)
  // The request's span names the client only once it is authenticated: a refused one could name anyone (docs/telemetry.md).
  ctx.clientId = client.clientId
  const token = form.get('token')
  if (token === undefined) throw new InvalidRequest('Parameter token is required')
  // The hint only orders the search (RFC 7009 2.1); an unknown hint searches every type.
  const lookups = form.get('token_type_hint') === 'refresh_token' ? [revokeRefreshToken, revokeAccessToken] : [revokeAccessToken, revokeRefreshToken]
  for (const lookup of lookups) if (await lookup(as, token, client)) break
  res.statusCode = 200
  for (const [name, value] of Object.entries(NO_STORE)) res.setHeader(name, value)
  res.setHeader('content-length', 0)
  res.end()
}
