/** Who a validated token speaks for; what the gateway tells the upstream. */
export interface TokenIdentity {
  /** The issuer id from config (`self` or an `issuers[].id`). */
  issuerId: string
  /** The `iss` value. */
  issuer: string
  sub: string | null
  clientId: string | null
  scopes: readonly string[]
  jti: string | null
  grantId: string | null
  /** Epoch seconds. */
  exp: number
  /** RFC 9449 6: thumbprint of the DPoP key the token is bound to (`cnf.jkt`), or null for a bearer token. */
  jkt: string | null
  /** RFC 8705 3.1: thumbprint of the client certificate the token is bound to (`cnf.x5t#S256`), or null. */
  x5t: string | null
  /** Every claim of the verified token (or introspection answer), for `identity_headers.claims`. */
  claims: Readonly<Record<string, unknown>>
}
