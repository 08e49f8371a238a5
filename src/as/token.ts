/**
 * POST /token (RFC 6749 3.2, 4.1.3, 4.4.2, 6; RFC 8628 3.4).
 *
 * Order: form body only → grant_type known → no repeated parameter the grant
 * reads → client authentication → the client may use this grant → the grant.
 * Parameters a grant does not read are ignored (RFC 6749 3.2).
 */
import { MethodNotAllowed, UnauthorizedClient, UnsupportedGrantType } from '../errors.js'
import { readForm } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import type { GrantType } from '../config/types.js'
import { authenticateClient } from './client-auth.js'
import type { AsHandler } from './context.js'
import { authorizationCodeGrant } from './grants/authorization-code.js'
import { clientCredentialsGrant } from './grants/client-credentials.js'
import { DEVICE_CODE_GRANT, deviceCodeGrant } from './grants/device-code.js'
import { refreshTokenGrant } from './grants/refresh-token.js'
import type { Grant } from './grants/types.js'

/** The grants this server implements; the password grant is deliberately absent (RFC 9700 2.4). */
export const GRANTS: ReadonlyMap<GrantType, Grant> = new Map<GrantType, Grant>([
  ['authorization_code', authorizationCodeGrant],
  ['refresh_token', refreshTokenGrant],
  ['client_credentials', clientCredentialsGrant],
  [DEVICE_CODE_GRANT, deviceCodeGrant],
])

/** Client authentication parameters every back-channel endpoint reads. */
export const CLIENT_AUTH_PARAMS: readonly string[] = ['client_id', 'client_secret']

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
  // RFC 8707 2: `resource` may repeat; the grant answers that with invalid_target.
  form.assertNoRepeats([...grant.params.filter((p) => p !== 'resource'), ...CLIENT_AUTH_PARAMS])
  const { client } = await authenticateClient(req, form, as)
  if (!client.grantTypes.includes(grantType as GrantType)) throw new UnauthorizedClient()
  const body = await grant.handle({ form, client, as, req: ctx })
  sendJson(res, 200, body, NO_STORE)
}
