/** Browsers known to have completed a sign-in of a person, every factor given (OWASP "device cookies"). */
export interface KnownBrowserStore {
  /**
   * Remember that the browser holding the cookie whose hash is `tokenHash`
   * signed in as `sub` now; replaces an earlier entry (and its time).
   */
  put(tokenHash: string, sub: string, ttlSec: number): Promise<void>
  /** The `sub` a known-browser cookie was issued for; null when unknown or expired. */
  get(tokenHash: string): Promise<string | null>
  /**
   * The `sub` and when (epoch ms) the cookie was last put: a browser known
   * before the person turned on a second factor proved only the password,
   * so it is not exempt from the per-person count of guesses at that factor.
   * An entry written before the time was kept has `atMs` 0.
   */
  remembered(tokenHash: string): Promise<{ sub: string; atMs: number } | null>
}
