/**
 * Local people managed at runtime (issue #42): the accounts the admin API
 * creates beside the YAML `users`, and the support-desk state that applies
 * to YAML people too (their disabled flag). Password links are kept here as
 * well: each is stored only as `hashToken(value)` and taken once.
 */

/** A person created through the admin API (a YAML person's record stays in YAML). */
export interface PersonRecord {
  username: string
  sub: string
  /** Claims given to tokens and userinfo; never `sub`. */
  claims: Record<string, unknown>
  /** The same hash format as YAML users' `password_hash` (src/crypto/secret.ts); null until the person sets one. */
  passwordHash: string | null
  /** A disabled person cannot sign in and holds no session. */
  disabled: boolean
  /** Epoch seconds. */
  createdAt: number
  updatedAt: number
  /** Starts at 1, one more at every change: the admin API's ETag. */
  version: number
}

/** What an update changes; fields left out stay as they are. */
export interface PersonChange {
  claims?: Record<string, unknown>
  passwordHash?: string | null
  disabled?: boolean
}

export type PersonCreated = 'created' | 'username_taken' | 'sub_taken'

export type PersonUpdate =
  | { kind: 'updated'; record: PersonRecord }
  /** `ifVersion` was given and the record has moved on: nothing changed. */
  | { kind: 'stale'; current: PersonRecord }
  | { kind: 'missing' }

/** A single-use password link: whose it is and until when (epoch ms). */
export interface PasswordLinkRecord {
  username: string
  expiresAtMs: number
}

export interface PeopleStore {
  /** Store a new person; atomic: of two creates with one username (or sub) exactly one succeeds. */
  create(record: PersonRecord): Promise<PersonCreated>
  /** The person, or null. */
  get(username: string): Promise<PersonRecord | null>
  /** The person whose `sub` this is, or null. */
  bySub(sub: string): Promise<PersonRecord | null>
  /**
   * The people whose `claims.email` is `email`, compared lower-cased (disabled ones too: the caller
   * judges). Every instance sees a create, change or delete at once.
   */
  byEmail(email: string): Promise<PersonRecord[]>
  /**
   * Apply `change` at `atSec`, one more version. With `ifVersion` the write
   * happens only while the record is still at that version (compare and set:
   * of two writers from one version exactly one wins).
   */
  update(username: string, ifVersion: number | null, change: PersonChange, atSec: number): Promise<PersonUpdate>
  /** Forget the person (and their password links stay useless: the link's username is looked up again). */
  delete(username: string): Promise<PersonRecord | null>
  /** Up to `limit` people by username, those after `after` (exclusive): the admin API's pages. */
  list(after: string | null, limit: number): Promise<PersonRecord[]>
  /** The disabled flag of a person whose record is elsewhere (a YAML person), by username. */
  setConfigDisabled(username: string, disabled: boolean): Promise<void>
  configDisabled(username: string): Promise<boolean>
  /** Keep a password link (by its hash) until `record.expiresAtMs`. */
  putPasswordLink(hash: string, record: PasswordLinkRecord): Promise<void>
  /** The link's record, without using it (null when unknown, used or expired): the page's GET. */
  peekPasswordLink(hash: string): Promise<PasswordLinkRecord | null>
  /** Use the link: atomic, of N concurrent takes exactly one gets the record; null when unknown, used or expired. */
  takePasswordLink(hash: string): Promise<PasswordLinkRecord | null>
}

/**
 * The key an email is found by: ASCII letters lower-cased, nothing else changed. `toLowerCase()`
 * would fold some non-ASCII letters onto ASCII ones (the Kelvin sign U+212A becomes `k`), so an
 * address nobody holds could name the person whose address merely looks like it.
 */
export function emailKey(email: string): string {
  return email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())
}

/** The key of the email a record's claims hold, or null: the key people are found by (CIBA `login_hint`). */
export function emailKeyOf(claims: Readonly<Record<string, unknown>>): string | null {
  const email = claims.email
  return typeof email === 'string' && email !== '' ? emailKey(email) : null
}
