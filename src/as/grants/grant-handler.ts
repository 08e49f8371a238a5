/** The shape every grant handler of the token endpoint shares (RFC 6749 4, 5.1). */
import type { ClientConfig } from '../../config/validated-config.js'
import type { RequestContext } from '../../context.js'
import type { FormParams } from '../../http/body.js'
import type { ClientCertificate } from '../../http/client-certificate.js'
import type { AsContext } from '../context.js'

/** RFC 6749 5.1 successful token response (plus `id_token`, OIDC Core 3.1.3.3). */
export interface TokenResponse {
  access_token: string
  /** `DPoP` when the access token is bound to a DPoP key (RFC 9449 5). */
  token_type: 'Bearer' | 'DPoP'
  expires_in: number
  refresh_token?: string
  scope: string
  id_token?: string
  /** RFC 9396 7: the authorization details the access token holds. */
  authorization_details?: readonly Record<string, unknown>[]
}

export interface GrantRequest {
  form: FormParams
  /** The authenticated client, already known to be allowed this grant type. */
  client: ClientConfig
  as: AsContext
  req: RequestContext
  /** The request's DPoP proof, verified (RFC 9449 5), or null when it carried none. */
  dpop: { readonly jkt: string } | null
  /**
   * RFC 8705 3: the thumbprint (`x5t#S256`) of the client certificate the
   * issued tokens are bound to: set for a client registered with
   * `tls_client_certificate_bound_access_tokens`, else null.
   */
  mtls: { readonly x5t: string } | null
  /** The client certificate of the request, whatever the client's registration (a bound refresh token is checked against it). */
  certificate: ClientCertificate | null
}

export interface Grant {
  /** Body parameters this grant reads besides grant_type and client authentication; each may occur once. */
  readonly params: readonly string[]
  handle(request: GrantRequest): Promise<TokenResponse>
}
