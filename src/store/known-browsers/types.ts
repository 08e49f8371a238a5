/** Browsers known to have completed a sign-in of a person, every factor given (OWASP "device cookies"). */
export interface KnownBrowserStore {
  /**
   * Remember that the browser holding the cookie whose hash is `tokenHash`
   * signed in as `sub`; replaces an earlier entry.
   */
  put(tokenHash: string, sub: string, ttlSec: number): Promise<void>
  /** The `sub` a known-browser cookie was issued for; null when unknown or expired. */
  get(tokenHash: string): Promise<string | null>
}
