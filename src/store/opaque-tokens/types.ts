/** An opaque access token's claims, stored under its hash. */
export interface OpaqueTokenRecord {
  iss: string
  sub: string
  aud: string[]
  clientId: string
  scope: string
  jti: string
  iat: number
  exp: number
  grantId: string | null
  /** RFC 9449 6: thumbprint of the DPoP key the token is bound to. */
  jkt?: string
  /** RFC 8705 3.1: thumbprint (`x5t#S256`) of the client certificate the token is bound to. */
  x5t?: string
  /** The person's claims released into the token (`access_token.claims`), answered by introspection. */
  claims?: Record<string, unknown>
  /** Epoch seconds of the person's sign-in, and how they signed in (absent for a client's own token). */
  authTime?: number
  amr?: string[]
  acr?: string
  /** RFC 9396 9.2: the token's authorization details, answered by introspection. */
  authorizationDetails?: Array<Record<string, unknown>>
}

/** Opaque access tokens: their claims, with the token's lifetime as TTL. */
export interface OpaqueTokenStore {
  put(tokenHash: string, record: OpaqueTokenRecord): Promise<void>
  get(tokenHash: string): Promise<OpaqueTokenRecord | null>
  delete(tokenHash: string): Promise<boolean>
}
