/**
 * Authorization server metadata (RFC 8414 2) at
 * `/.well-known/oauth-authorization-server`, and the same document as
 * OpenID Provider metadata (OIDC Discovery 3) at
 * `/.well-known/openid-configuration`. Built once per Runtime.
 */
import { SSF_STREAM_SCOPE } from '../signals/transmitter/scope.js'
import { releasableClaims } from './claims.js'
import { CLIENT_ASSERTION_ALGS } from './client-assertion.js'
import type { AsContext } from './context.js'
import { CIBA_GRANT } from './grants/ciba.js'
import { DEVICE_CODE_GRANT } from './grants/device-code.js'
import { JWT_BEARER_GRANT } from './grants/jwt-bearer.js'
import { TOKEN_EXCHANGE_GRANT } from './grants/token-exchange.js'
import { OIDC_SCOPES } from './scope.js'
import { REQUEST_OBJECT_ALGS } from './request-object.js'
import { OWN_ACR_VALUES } from '../tokens/acr.js'

/** Claims an ID token can carry besides the scope-released ones (OIDC Core 2). */
const ID_TOKEN_CLAIMS = ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'amr', 'acr', 'nonce', 'at_hash', 'azp', 'sid']

/**
 * RFC 8705 5: the endpoints a client authenticates at or gets tokens from,
 * at the mTLS host. The pages (/authorize) and the JWKS stay at the issuer.
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-5
 */
function mtlsEndpointAliases(base: string): Record<string, string> {
  return {
    token_endpoint: `${base}/token`,
    revocation_endpoint: `${base}/revoke`,
    introspection_endpoint: `${base}/introspect`,
    device_authorization_endpoint: `${base}/device_authorization`,
    backchannel_authentication_endpoint: `${base}/bc-authorize`,
    userinfo_endpoint: `${base}/userinfo`,
  }
}

/**
 * The metadata document. `issuer` is exactly public_url (RFC 8414 3.3 and
 * RFC 9207: clients compare it byte for byte).
 * @see https://www.rfc-editor.org/rfc/rfc8414#section-2
 * @see https://openid.net/specs/openid-connect-discovery-1_0.html#ProviderMetadata
 */
export function metadataDocument(as: AsContext): Record<string, unknown> {
  const issuer = as.issuer
  const fapi2 = as.as.profile === 'fapi2'
  const pkceMethods = !fapi2 && as.as.clients.some((c) => c.allowPlainPkce) ? ['S256', 'plain'] : ['S256']
  // `ssf:stream` is built in but means something only while the Shared Signals transmitter is on.
  const ssf = as.config.signals?.transmitter != null
  const scopes = [...new Set([...OIDC_SCOPES, ...Object.keys(as.as.scopes)])].filter((s) => ssf || s !== SSF_STREAM_SCOPE)
  // RFC 8705: offered only where a client certificate can reach us (our listener asks, or a trusted proxy reports).
  const mtls = (as.config.tls !== null && as.config.tls.clientCertificates !== 'off') || as.config.gateway.clientCertificateHeader !== null
  const certificateMethods = mtls ? ['tls_client_auth', 'self_signed_tls_client_auth'] : []
  // FAPI 2.0 5.3.2.1: under the profile, a key or a certificate only; never a secret, never none.
  const secretMethods = fapi2 ? [] : ['client_secret_basic', 'client_secret_post']
  const noneMethod = fapi2 ? [] : ['none']
  const cibaClients = as.as.clients.some((c) => c.ciba !== undefined) || as.as.registration !== null || as.as.clientIdMetadataDocuments !== null
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks.json`,
    userinfo_endpoint: `${issuer}/userinfo`,
    revocation_endpoint: `${issuer}/revoke`,
    introspection_endpoint: `${issuer}/introspect`,
    device_authorization_endpoint: `${issuer}/device_authorization`,
    // OpenID CIBA Core 1.0 4: poll and ping; no user_code (the person approves on bearward's own page, signed in).
    backchannel_authentication_endpoint: `${issuer}/bc-authorize`,
    backchannel_token_delivery_modes_supported: ['poll', 'ping'],
    backchannel_user_code_parameter_supported: false,
    // RFC 9126 5: where requests are pushed, and whether every client must.
    pushed_authorization_request_endpoint: `${issuer}/par`,
    require_pushed_authorization_requests: as.as.par.required,
    // OIDC RP-Initiated Logout 1.0 2.1
    end_session_endpoint: `${issuer}/logout`,
    // OIDC Back-Channel Logout 1.0 2.1: logout tokens to clients' backchannel_logout_uri, with `sid` (id_tokens carry it).
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    scopes_supported: scopes,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [
      'authorization_code',
      'refresh_token',
      'client_credentials',
      DEVICE_CODE_GRANT,
      // RFC 7523 2.1: only while an ID-JAG issuer is configured.
      ...(as.assertionIssuers.has('id-jag') ? [JWT_BEARER_GRANT] : []),
      // RFC 8693: only while a client may exchange tokens.
      ...(as.as.clients.some((c) => c.tokenExchange !== undefined) ? [TOKEN_EXCHANGE_GRANT] : []),
      // OpenID CIBA Core 1.0 4: only while a client may use it (configured, or one that registers itself).
      ...(cibaClients ? [CIBA_GRANT] : []),
    ],
    code_challenge_methods_supported: pkceMethods,
    token_endpoint_auth_methods_supported: [...secretMethods, 'private_key_jwt', ...certificateMethods, ...noneMethod],
    // RFC 7523 2.2 / RFC 8414 2: the algorithms a private_key_jwt assertion may be signed with (never none or HMAC).
    token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGS],
    revocation_endpoint_auth_methods_supported: [...secretMethods, 'private_key_jwt', ...certificateMethods, ...noneMethod],
    revocation_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGS],
    // Introspection reveals token contents: only authenticated (confidential) callers.
    introspection_endpoint_auth_methods_supported: [...secretMethods, 'private_key_jwt', ...certificateMethods],
    introspection_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGS],
    authorization_response_iss_parameter_supported: true,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [as.keys.idToken.alg],
    claims_supported: [...ID_TOKEN_CLAIMS, ...releasableClaims()],
    // How people sign in here (sign-in-strength.ts); an upstream provider's own values pass through too.
    acr_values_supported: [...OWN_ACR_VALUES],
    claims_parameter_supported: false,
    // RFC 9101: request objects by value, signed with the client's keys (never none or HMAC).
    request_parameter_supported: true,
    request_object_signing_alg_values_supported: [...REQUEST_OBJECT_ALGS],
    // OIDC Discovery 3: the default is true, so "not supported" must be said: only the pushed request_uri of /par is taken.
    request_uri_parameter_supported: false,
    // RFC 9449 5.1: the proof algorithms the token endpoint accepts.
    dpop_signing_alg_values_supported: [...as.dpop.token.algorithms],
    // RFC 8705 3.3, 5: certificate-bound tokens, and where a separate host asks for certificates.
    ...(mtls ? { tls_client_certificate_bound_access_tokens: true } : {}),
    ...(mtls && as.as.mtlsUrl !== null ? { mtls_endpoint_aliases: mtlsEndpointAliases(as.as.mtlsUrl) } : {}),
    // RFC 7591 3: only while registration is on.
    ...(as.as.registration !== null ? { registration_endpoint: `${issuer}/register` } : {}),
    // RFC 9396 10: the authorization details types clients may request.
    ...(as.authorizationDetailsTypes.names().length === 0 ? {} : { authorization_details_types_supported: as.authorizationDetailsTypes.names() }),
    // Client ID Metadata Documents: a client_id may be the https URL of the client's metadata.
    ...(as.as.clientIdMetadataDocuments !== null ? { client_id_metadata_document_supported: true } : {}),
  }
}
