/**
 * A client that described itself (RFC 7591 registration, or a Client ID
 * Metadata Document), or one an operator described through the admin API
 * (the same metadata), as the rest of the authorization server sees clients:
 * a ClientConfig with the safe settings a configured client can only opt
 * out of: PKCE always, rotated refresh tokens, no introspection, no CORS,
 * and never a skipped consent.
 */
import type { ClientConfig } from '../config/validated-config.js'
import type { RegisteredClientMetadata } from '../store/types.js'

export function clientFromMetadata(
  clientId: string,
  metadata: RegisteredClientMetadata,
  secretHash: string | null,
  source: NonNullable<ClientConfig['selfRegistered']> | 'admin',
  allowedScopes: readonly string[],
): ClientConfig {
  const method = metadata.token_endpoint_auth_method
  return {
    clientId,
    name: metadata.client_name ?? clientId,
    metadata: {
      logoUri: metadata.logo_uri ?? null,
      policyUri: metadata.policy_uri ?? null,
      tosUri: metadata.tos_uri ?? null,
      postLogoutRedirectUris: metadata.post_logout_redirect_uris ?? [],
    },
    type: method === 'none' ? 'public' : 'confidential',
    // A private_key_jwt client proves itself with its key: it has no secret.
    secretHash: method === 'none' || method === 'private_key_jwt' ? null : secretHash,
    tokenEndpointAuthMethod: method,
    ...(metadata.jwks !== undefined ? { jwks: metadata.jwks } : {}),
    ...(metadata.jwks_uri !== undefined ? { jwksUri: metadata.jwks_uri } : {}),
    redirectUris: metadata.redirect_uris,
    grantTypes: metadata.grant_types,
    // The ceiling, not the registered `scope`: an MCP client registers with
    // the scope of its first challenge and must be able to step up later.
    scopes: [...allowedScopes],
    allowedOrigins: [],
    introspect: false,
    requirePkce: true,
    allowPlainPkce: false,
    skipConsent: false,
    rotateRefreshTokens: true,
    dpopBoundAccessTokens: false,
    ...(metadata.require_pushed_authorization_requests === true ? { requirePushedAuthorizationRequests: true } : {}),
    ...(metadata.require_signed_request_object === true ? { requireSignedRequestObject: true } : {}),
    // Registration offers no mTLS methods (docs/fapi.md, Gaps): only configured clients bind to certificates.
    tlsClientCertificateBoundAccessTokens: false,
    // An admin-managed client was vetted by an operator: no stranger's consent caution (its URLs are still fetched like a stranger's).
    ...(source === 'admin' ? { adminManaged: true as const } : { selfRegistered: source }),
    ...(metadata.backchannel_logout_uri === undefined
      ? {}
      : { backchannelLogout: { uri: metadata.backchannel_logout_uri, sessionRequired: metadata.backchannel_logout_session_required === true } }),
  }
}
