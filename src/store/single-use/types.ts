/** Values accepted once within their lifetime (RFC 9449 11.1: DPoP proof jti; TOTP time steps). */
export interface SingleUseStore {
  /**
   * Atomic set-if-absent: true when `key` had not been used within its
   * lifetime (it is now recorded for `ttlSec`), false when it was (a replay).
   * Of N concurrent calls with one key exactly one gets true. `ttlSec` may
   * hold a fraction: a lifetime that ends at a given millisecond.
   */
  use(key: string, ttlSec: number): Promise<boolean>
}
