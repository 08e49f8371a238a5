/**
 * GET/POST /userinfo (OIDC Core 5.3): the claims about the user that the
 * access token's scopes release. The token must be one of ours and carry
 * `openid`. Failures are RFC 6750 3 Bearer challenges (realm `bearward`).
 */
import type { IncomingMessage } from 'node:http'
import { InsufficientScope, InvalidRequest, InvalidToken, MethodNotAllowed, MissingToken } from '../errors.js'
import { isFormContentType, readForm } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import { claimsForScope, findUserBySub } from './claims.js'
import type { AsHandler } from './context.js'
import { hasScope } from './scope.js'
import { verifyOwnAccessToken } from './verify-token.js'

/** RFC 6750 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

/** The token from the Authorization header, or null; another scheme counts as no bearer token. */
function fromHeader(header: string | undefined): string | null {
  if (header === undefined) return null
  const m = /^Bearer +(.*)$/i.exec(header)
  if (m === null) return null
  const token = (m[1] ?? '').trim()
  if (!B64TOKEN.test(token)) throw new InvalidToken('The access token is malformed', { cause: 'bad b64token' })
  return token
}

/**
 * The bearer token of a userinfo request: header, or (POST, OIDC Core 5.3.1)
 * the `access_token` form field. Both at once is invalid_request (RFC 6750 2).
 */
async function bearerToken(req: IncomingMessage): Promise<string> {
  const header = fromHeader(req.headers.authorization)
  let body: string | undefined
  if (req.method === 'POST' && isFormContentType(req.headers['content-type'])) {
    body = (await readForm(req)).get('access_token')
  }
  if (header !== null && body !== undefined) {
    throw new InvalidRequest('Send the access token by one method only', { challenge: 'Bearer' })
  }
  const token = header ?? body
  if (token === undefined) throw new MissingToken()
  return token
}

/** @see https://openid.net/specs/openid-connect-core-1_0.html#UserInfo */
export const handleUserinfo: AsHandler = async (req, res, _ctx, as) => {
  if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'POST') throw new MethodNotAllowed(['GET', 'HEAD', 'POST'])
  const token = await bearerToken(req)
  const claims = await verifyOwnAccessToken(as, token)
  if (claims === null) throw new InvalidToken(undefined, { cause: 'not a live access token of this issuer' })
  if (!hasScope(claims.scope, 'openid')) throw new InsufficientScope(['openid'])
  // Only user grants carry a grant id; a client_credentials token names no user.
  const user = claims.grantId === null ? undefined : findUserBySub(as, claims.sub)
  if (user === undefined) throw new InvalidToken(undefined, { cause: 'token subject is not a configured user' })
  sendJson(res, 200, { ...claimsForScope(user, claims.scope), sub: user.sub }, NO_STORE)
}
