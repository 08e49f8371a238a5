/**
 * POST /token (RFC 6749 3.2, 4.1.3, 4.4.2, 6; RFC 8628 3.4; OpenID CIBA Core 1.0 10.1).
 *
 * Order: form body only → grant_type known → no repeated parameter the grant
 * reads → client authentication → the client may use this grant → the grant.
 * Parameters a grant does not read are ignored (RFC 6749 3.2), except
 * `authorization_details` (RFC 9396 6): a grant that does not take it
 * (device code, token exchange, jwt-bearer, CIBA) refuses it with
 * invalid_request rather than issue a token without the details asked for.
 *
 * DPoP (RFC 9449 5): a `DPoP` proof is checked for every grant once the
 * client is known (htm POST, htu the token endpoint); its key's thumbprint
 * binds the tokens the grant issues. A client registered with
 * `dpop_bound_access_tokens` gets nothing without one (RFC 9449 5.2).
 *
 * Mutual TLS (RFC 8705 3): a client registered with
 * `tls_client_certificate_bound_access_tokens` gets tokens bound to the
 * certificate of its connection (`cnf.x5t#S256`), and nothing without one.
 */
import { InvalidDpopProof, InvalidRequest, MethodNotAllowed, UnauthorizedClient, UnsupportedGrantType } from '../errors.js'
import { proofHeader } from '../dpop/verify-proof.js'
import { readForm } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import type { ClientConfig, GrantType } from '../config/validated-config.js'
import type { ClientCertificate } from '../http/client-certificate.js'
import { authenticateClient, CLIENT_AUTH_PARAMS } from './client-auth.js'
import type { AsHandler } from './context.js'
import { authorizationCodeGrant } from './grants/authorization-code.js'
import { CIBA_GRANT, cibaGrant } from './grants/ciba.js'
import { clientCredentialsGrant } from './grants/client-credentials.js'
import { DEVICE_CODE_GRANT, deviceCodeGrant } from './grants/device-code.js'
import { JWT_BEARER_GRANT, jwtBearerGrant } from './grants/jwt-bearer.js'
import { refreshTokenGrant } from './grants/refresh-token.js'
import { TOKEN_EXCHANGE_GRANT, tokenExchangeGrant } from './grants/token-exchange.js'
import type { Grant } from './grants/grant-handler.js'

/** The grants this server implements; the password grant is deliberately absent (RFC 9700 2.4). */
export const GRANTS: ReadonlyMap<GrantType, Grant> = new Map<GrantType, Grant>([
  ['authorization_code', authorizationCodeGrant],
  ['refresh_token', refreshTokenGrant],
  ['client_credentials', clientCredentialsGrant],
  [DEVICE_CODE_GRANT, deviceCodeGrant],
  [JWT_BEARER_GRANT, jwtBearerGrant],
  [TOKEN_EXCHANGE_GRANT, tokenExchangeGrant],
  [CIBA_GRANT, cibaGrant],
])

/**
 * RFC 8705 3: what a client registered with
 * `tls_client_certificate_bound_access_tokens` binds its tokens to: the
 * certificate it presents now (proof of possession came with the TLS
 * handshake; its chain does not matter, as for self-signed certificates).
 * Without one it gets nothing; with a DPoP proof too it is refused, since a
 * token carries one binding only.
 */
function certificateBinding(client: ClientConfig, certificate: ClientCertificate | null, dpopProof: boolean): { x5t: string } | null {
  if (!client.tlsClientCertificateBoundAccessTokens) return null
  if (certificate === null) {
    throw new InvalidRequest('This client must present its TLS client certificate', {
      cause: 'tls_client_certificate_bound_access_tokens client without a certificate',
    })
  }
  if (dpopProof)
    throw new InvalidRequest('This client binds its tokens to its certificate: send no DPoP proof', { cause: 'certificate-bound client sent DPoP' })
  return { x5t: certificate.thumbprint }
}

/**
 * The token endpoint. Answers carry `Cache-Control: no-store` and
 * `Pragma: no-cache`, success and failure alike (RFC 6749 5.1, 5.2).
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-3.2
 */
export const handleToken: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') throw new MethodNotAllowed(['POST'])
  const form = await readForm(req)
  const grantType = form.require('grant_type')
  const grant = GRANTS.get(grantType as GrantType)
  if (grant === undefined) throw new UnsupportedGrantType()
  // RFC 8707 2 / RFC 8693 2.1: `resource` and `audience` may repeat; the grant answers that with invalid_target.
  form.assertNoRepeats([...grant.params.filter((p) => p !== 'resource' && p !== 'audience'), ...CLIENT_AUTH_PARAMS])
  // RFC 9396 6: a client that sends authorization_details expects them honoured; a grant that cannot says so, never drops them.
  if (form.has('authorization_details') && !grant.params.includes('authorization_details')) {
    throw new InvalidRequest(`authorization_details is not supported with grant_type ${grantType}`, {
      cause: 'authorization_details sent to a grant that does not take it',
    })
  }
  const proof = proofHeader(req, 'token')
  const { client } = await authenticateClient(req, form, as)
  // The request's span names the client only once it is authenticated: a refused one could name anyone (docs/telemetry.md).
  ctx.clientId = client.clientId
  if (!client.grantTypes.includes(grantType as GrantType)) throw new UnauthorizedClient()
  const certificate = as.clientCertificates.presented(req)
  const mtls = certificateBinding(client, certificate, proof !== null)
  let dpop: { jkt: string } | null = null
  if (proof !== null) dpop = await as.dpop.token.verify(proof, { method: 'POST', url: `${as.issuer}/token` })
  else if (client.dpopBoundAccessTokens)
    throw new InvalidDpopProof('This client must send a DPoP proof', { cause: 'dpop_bound_access_tokens client without a proof' })
  const body = await grant.handle({ form, client, as, req: ctx, dpop, mtls, certificate })
  // RFC 9449 8.2: a fresh nonce with every answer keeps the client current.
  const nonce = as.dpop.token.nonce()
  sendJson(res, 200, body, nonce === null ? NO_STORE : { ...NO_STORE, 'dpop-nonce': nonce })
}
