/**
 * `jti`: one access token; `grant`: every token of a grant; `client`: every access token of
 * this server's own issued to the client whose `exp` is at or before the entry's `exp` (a
 * client disabled or deleted through the admin API: its tokens without a grant, client
 * credentials, are refused until they expire; tokens issued later expire later and are not).
 */
export type RevocationKind = 'jti' | 'grant' | 'client'

/** Every kind, for the stores and the in-memory list. */
export const REVOCATION_KINDS: readonly RevocationKind[] = ['jti', 'grant', 'client']

/** One entry of the revocation list; `exp` = epoch seconds after which it can be forgotten. */
export interface RevocationEntry {
  kind: RevocationKind
  id: string
  exp: number
}

/** Revoked jtis and grants, kept until the token's own `exp` and published to every instance. */
export interface RevocationStore {
  /** Add a jti or grant id until `exp` (epoch seconds) and publish it to every instance. */
  add(entry: RevocationEntry): Promise<void>
  /** Every unexpired entry (for load at start and periodic resync). */
  list(): Promise<RevocationEntry[]>
  /**
   * Receive entries added by any instance (this one included). Returns an
   * unsubscribe function. `onFeed(false)`: a connection was lost, messages
   * may be missed from now on; `onFeed(true)`: subscribed again, resync now.
   * A store whose feed cannot fail (memory) never calls it.
   */
  subscribe(onEntry: (entry: RevocationEntry) => void, onFeed?: (up: boolean) => void): Promise<() => Promise<void>>
}
