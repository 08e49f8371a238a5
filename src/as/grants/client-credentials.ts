/**
 * grant_type=client_credentials (RFC 6749 4.4): server-to-server, no user.
 * Confidential clients only; no refresh token (4.4.3) and no ID token (there
 * is no end-user to identify, so `openid` is not grantable); sub = client_id.
 */
import { requestedDetails } from '../authorization-details/authorization-details.js'
import { UnauthorizedClient } from '../../errors.js'
import { issueAccessToken } from '../issue.js'
import { requestedResource } from '../resource.js'
import { formatScope, requestedClientScope } from '../scope.js'
import type { Grant, GrantRequest, TokenResponse } from './grant-handler.js'

export const clientCredentialsGrant: Grant = {
  params: ['scope', 'resource', 'authorization_details'],

  async handle({ form, client, as, dpop, mtls }: GrantRequest): Promise<TokenResponse> {
    if (client.type !== 'confidential') {
      throw new UnauthorizedClient('Only confidential clients may use client_credentials')
    }
    const scope = formatScope(requestedClientScope(form.get('scope'), client, ['openid']))
    const audience = requestedResource(form, as) ?? as.issuer
    // RFC 9396 6: a client's own token may carry details of the types it is allowed (its `authorization_details_types`).
    const details = requestedDetails(form, as.authorizationDetailsTypes, client.authorizationDetailsTypes)
    const access = await issueAccessToken(as, {
      grant: 'client_credentials',
      sub: client.clientId,
      clientId: client.clientId,
      scope,
      grantId: null,
      authTime: null,
      audience,
      jkt: dpop?.jkt ?? null,
      x5t: mtls?.x5t ?? null,
      ...(details === null ? {} : { authorizationDetails: details }),
    })
    return {
      access_token: access.token,
      token_type: dpop === null ? 'Bearer' : 'DPoP',
      expires_in: access.expiresIn,
      scope,
      ...(details === null ? {} : { authorization_details: details }),
    }
  },
}
