/** Who a validated token speaks for; what the gateway tells the upstream. */
export interface TokenIdentity {
  /** The issuer id from config (`self` or an `issuers[].id`). */
  readonly issuerId: string
  /** The `iss` value. */
  readonly issuer: string
  readonly sub: string | null
  readonly clientId: string | null
  readonly scopes: readonly string[]
  readonly jti: string | null
  readonly grantId: string | null
  /** Epoch seconds. */
  readonly exp: number
  /** RFC 9449 6: thumbprint of the DPoP key the token is bound to (`cnf.jkt`), or null for a bearer token. */
  readonly jkt: string | null
  /** RFC 8705 3.1: thumbprint of the client certificate the token is bound to (`cnf.x5t#S256`), or null. */
  readonly x5t: string | null
  /** Every claim of the verified token (or introspection answer), for `identity_headers.claims`. */
  readonly claims: Readonly<Record<string, unknown>>
}
