/**
 * GET/POST /userinfo (OIDC Core 5.3): the claims about the user that the
 * access token's scopes release. The token must be one of ours and carry
 * `openid`. Failures are RFC 6750 3 Bearer challenges (realm `bearward`).
 *
 * A DPoP-bound token (RFC 9449 7) comes as `Authorization: DPoP <token>` with
 * a proof for this request (htm, htu = the UserInfo URL, ath) signed by the
 * key the token is bound to; presented as Bearer it is refused (RFC 9449 7.2).
 */
import { checkCertificateBinding } from '../tokens/certificate-binding.js'
import type { IncomingMessage } from 'node:http'
import { proofHeader } from '../dpop/verify-proof.js'
import { InsufficientScope, InvalidDpopProof, InvalidRequest, InvalidToken, MethodNotAllowed, MissingToken } from '../errors.js'
import { isFormContentType, readForm } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import { claimsForScope, findPersonBySub } from './claims.js'
import type { AsHandler } from './context.js'
import { hasScope } from './scope.js'
import { verifyOwnAccessToken } from './verify-token.js'
import { checkedTokenFromHeader } from '../http/authorization.js'

interface Presented {
  token: string
  /** The DPoP scheme (RFC 9449 7.1), or Bearer (a header or form token). */
  dpop: boolean
}

/**
 * The bearer token of a userinfo request: header, or (POST, OIDC Core 5.3.1)
 * the `access_token` form field. Both at once is invalid_request (RFC 6750 2).
 */
async function bearerToken(req: IncomingMessage): Promise<Presented> {
  // The one header parser both faces use: a malformed or repeated header is 400 invalid_request.
  const header = checkedTokenFromHeader(req)
  let body: string | undefined
  if (req.method === 'POST' && isFormContentType(req.headers['content-type'])) {
    body = (await readForm(req)).get('access_token')
  }
  if (header !== null && body !== undefined) {
    throw new InvalidRequest('Send the access token by one method only', { challenge: 'Bearer' })
  }
  if (header !== null) return header
  if (body === undefined) throw new MissingToken()
  return { token: body, dpop: false }
}

/** @see https://openid.net/specs/openid-connect-core-1_0.html#UserInfo */
export const handleUserinfo: AsHandler = async (req, res, _ctx, as) => {
  if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'POST') throw new MethodNotAllowed(['GET', 'HEAD', 'POST'])
  const { token, dpop } = await bearerToken(req)
  const proof = proofHeader(req, 'resource')
  const claims = await verifyOwnAccessToken(as, token)
  if (claims === null) throw new InvalidToken(undefined, { cause: 'not a live access token of this issuer' })
  if (claims.jkt !== undefined) {
    if (!dpop) throw new InvalidToken('A DPoP-bound access token must be sent with the DPoP scheme', { cause: 'bound token sent as Bearer' })
    if (proof === null) throw new InvalidDpopProof('A DPoP proof is required', { resource: true, cause: 'no DPoP header' })
    await as.dpop.resource.verify(proof, { method: req.method ?? 'GET', url: `${as.issuer}/userinfo`, accessToken: token, jkt: claims.jkt })
  } else if (dpop) {
    throw new InvalidToken('The access token is not DPoP-bound', { cause: 'DPoP scheme with an unbound token' })
  }
  // RFC 8705 3: UserInfo is a resource too; a certificate-bound token needs its certificate here as at the gateway.
  if (claims.x5t !== undefined) {
    const mismatch = checkCertificateBinding({ 'x5t#S256': claims.x5t }, as.clientCertificates.presented(req))
    if (mismatch !== null) throw mismatch
  }
  if (!hasScope(claims.scope, 'openid')) throw new InsufficientScope(['openid'])
  // Only user grants carry a grant id; a client_credentials token names no user.
  const user = claims.grantId === null ? undefined : await findPersonBySub(as, claims.sub)
  if (user === undefined) throw new InvalidToken(undefined, { cause: 'token subject is not a configured user' })
  sendJson(res, 200, { ...claimsForScope(user, claims.scope), sub: user.sub }, NO_STORE)
}
