/**
 * A person's authenticator app (TOTP, RFC 6238): the shared secret, and the
 * recovery codes' hashes. A code's single use is `singleUse.use` (per time step).
 */
export interface TotpRecord {
  /** The shared secret, base32 (never logged). */
  secret: string
  /** Epoch seconds it was set up (shown to the person). */
  createdAt: number
  /** Epoch seconds a first code confirmed it; null while it is being set up (it signs nobody in yet). */
  confirmedAt: number | null
  /** The recovery codes (src/crypto/secret.ts hashes), each with when it was used (null: still unused). */
  recovery: Array<{ hash: string; usedAt: number | null }>
  /**
   * While it is being set up: the hash of the session that started it, the
   * only one shown the secret and able to confirm it (another session of the
   * person, say a stranger's with the password, could otherwise read the
   * secret and hold a copy of the app the owner then turns on).
   */
  startedBy?: string
}

/** Authenticator apps (TOTP, RFC 6238) and recovery codes, kept until removed. */
export interface TotpStore {
  /** Set (or replace) the person's authenticator app; kept until removed. */
  put(sub: string, record: TotpRecord): Promise<void>
  get(sub: string): Promise<TotpRecord | null>
  /** Forget it, recovery codes included. Idempotent. */
  delete(sub: string): Promise<void>
}
