/** An authorization code as issued by /authorize. */
export interface CodeRecord {
  clientId: string
  /** The redirect_uri sent in the authorization request, or null when it was omitted. */
  redirectUri: string | null
  /** The redirect URI actually used (registered one when omitted). */
  effectiveRedirectUri: string
  codeChallenge: string | null
  codeChallengeMethod: 'S256' | 'plain' | null
  scope: string
  sub: string
  /** Epoch seconds of the login. */
  authTime: number
  /** How the person signed in (src/as/sign-in-strength.ts); absent on codes stored by an older version. */
  amr?: string[]
  acr?: string
  nonce: string | null
  /** RFC 8707 resource, when requested. */
  resource: string | null
  /** Epoch seconds. */
  expiresAt: number
  /** RFC 9449 10: `dpop_jkt` of the authorization request; the token request's proof key must have it. */
  dpopJkt?: string
  /**
   * Epoch milliseconds the code was issued: a withdrawal of (sub, client) at or after it refuses the
   * exchange. Absent on codes stored by an older version (their issue time is derived from expiresAt).
   */
  issuedAtMs?: number
  /** The session's `sid` (OIDC Back-Channel Logout 1.0 2.1), which the id_token carries; absent on older codes. */
  sid?: string
  /** RFC 9396: the authorization details the person approved; absent when none were requested. */
  authorizationDetails?: Array<Record<string, unknown>>
}

/** Result of takeCode: atomic Issued → Used. */
export type TakeCodeResult =
  | { status: 'taken'; record: CodeRecord }
  /** Already used: `grantId` is the grant created by the first exchange (null if it did not finish). */
  | { status: 'used'; record: CodeRecord; grantId: string | null }
  | { status: 'missing' }

/** Authorization codes (RFC 6749 4.1.2): Issued → Used once; a replay finds the tombstone. */
export interface CodeStore {
  put(codeHash: string, record: CodeRecord, ttlSec: number): Promise<void>
  /** Atomic Issued → Used. Exactly one of N concurrent calls gets `taken`. The Used tombstone lives until the original expiry (at least ttl). */
  take(codeHash: string): Promise<TakeCodeResult>
  /** Record which grant the code produced, so a replay can revoke it. */
  linkGrant(codeHash: string, grantId: string): Promise<void>
}
