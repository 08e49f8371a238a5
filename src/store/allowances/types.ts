/** What a person allowed one application, for the account page. */
export interface AllowanceRecord {
  clientId: string
  /** Scopes the person allowed (remembered consent) and granted (grants), in the order first seen. */
  scopes: string[]
  /** Epoch seconds of the latest allowance. */
  allowedAt: number
  /** Live grants (refresh families) of this person for this client: what withdrawing revokes. */
  grantIds: string[]
}

/** One allowance to note; see AllowanceStore.note. */
export interface AllowanceNote {
  scopes: string[]
  /** Epoch seconds of the allowance (kept: the latest). */
  at: number
  /** The grant this allowance created or extended, or null (a remembered consent alone). */
  grantId: string | null
  /** Epoch seconds the note must last at least (the grant's or the consent's end). */
  until: number
  /**
   * Epoch milliseconds the person gave the authorization this note records (an authorization code's
   * issue time). When (sub, client) was withdrawn at or after it, the note is refused: the withdrawal
   * covers every authorization given before it, including a code not yet exchanged.
   */
  authorizedAtMs?: number
}

/** What each person allowed each application (the account page), and its withdrawal. */
export interface AllowanceStore {
  /**
   * Note that `sub` allowed `clientId`: scopes join the (sub, client) allowance, the time is kept if later,
   * `grantId` (when given) joins its grant index, and both last until `until` at least. The AS notes a grant
   * before creating it, so no grant exists unindexed. Keys share `sub`'s hash tag with its consent.
   * Atomic with withdraw: returns false, noting nothing, when (sub, client) was withdrawn at or
   * after `note.authorizedAtMs`; true otherwise.
   */
  note(sub: string, clientId: string, note: AllowanceNote): Promise<boolean>
  /** The live allowances of `sub`, one per client. */
  list(sub: string): Promise<AllowanceRecord[]>
  /**
   * Atomic: forget (sub, client)'s allowance, its remembered consent and its grant index, and remember
   * the withdrawal's time for `rememberSec` (at least as long as an authorization given before it can
   * still be turned into a grant: a code's lifetime), so note refuses such an authorization.
   * Returns the live grant ids the index held, for the caller to revoke (grants.revoke).
   */
  withdraw(sub: string, clientId: string, rememberSec: number): Promise<string[]>
}
