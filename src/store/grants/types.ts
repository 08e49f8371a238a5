/**
 * A grant: one user's authorization of one client for a scope, the root of a
 * refresh-token family. Every access token issued under it carries its id
 * (claim `grant_id`), so revoking the grant revokes them all.
 */
export interface GrantRecord {
  grantId: string
  clientId: string
  sub: string
  /** Scope granted at authorization; refreshes may narrow but never widen. */
  scope: string
  authTime: number
  /** How the person signed in: every token of the family keeps it (absent on grants of an older version). */
  amr?: string[]
  acr?: string
  resource: string | null
  /** Epoch seconds the family was created. */
  createdAt: number
  /** Epoch seconds when the family ends (refresh TTL from creation or last rotation). */
  expiresAt: number
  /** Latest exp of any access token issued under this grant (revocation must outlive it). */
  maxAccessExp: number
  /** RFC 9449 5: a public client's refresh tokens are bound to this DPoP key thumbprint. */
  jkt?: string
  /** RFC 8705 4: a public client's refresh tokens are bound to this certificate thumbprint (`x5t#S256`). */
  x5t?: string
  /** The `sid` of the session the grant was authorized in: id_tokens issued at refresh carry it too. */
  sid?: string
}

export type RotateResult =
  | { status: 'rotated'; grant: GrantRecord }
  /** A replaced token was presented: the family is now revoked (atomically). */
  | { status: 'reused'; grant: GrantRecord }
  | { status: 'missing' }

/** What a refresh-token hash is, for revocation and introspection. */
export interface RefreshLookup {
  grant: GrantRecord
  /** True for the family's current token; false for a replaced one. */
  current: boolean
  /** Epoch seconds this refresh token was issued. */
  issuedAt: number
}

/** Grants and their refresh-token families: rotate current → next; a replaced token presented again revokes the family. */
export interface GrantStore {
  /** Create a grant, with its first refresh token when one is issued. */
  create(grant: GrantRecord, refreshHash: string | null): Promise<void>
  get(grantId: string): Promise<GrantRecord | null>
  /** Raise maxAccessExp (after issuing an access token under the grant). */
  noteAccessExp(grantId: string, exp: number): Promise<void>
  /**
   * Atomic rotation. Current token → `rotated` (old hash becomes Replaced, `newHash` becomes current,
   * grant.expiresAt = newExpiresAt). A Replaced token → `reused`: the family is deleted and its grant id
   * added to the revocation list (and published) in the same step. Unknown → `missing`.
   * With `newHash` null (no rotation), the token stays current and `rotated` is returned.
   * `grantId`, when the caller found the token's grant already (findRefresh), saves a lookup; the
   * rotation still checks that `oldHash` belongs to that family. `accessExp`, the expiry of the
   * access token issued with this rotation, raises maxAccessExp in the same step (a `rotated`
   * result's grant carries it), so no noteAccessExp is needed after it.
   */
  rotate(oldHash: string, newHash: string | null, newExpiresAt: number, grantId?: string, accessExp?: number): Promise<RotateResult>
  findRefresh(refreshHash: string): Promise<RefreshLookup | null>
  /** Delete the family and put the grant id on the revocation list until `until` (published). Idempotent. */
  revoke(grantId: string, until: number): Promise<void>
  /**
   * Up to `limit` live grants of one client, by grant id (UTF-8 byte order), those after `after`
   * (exclusive): the admin API's grants of a client. The index behind it is a hint kept beside the
   * families; an entry whose family is gone (expired, revoked) is dropped when met.
   */
  listByClient(clientId: string, after: string | null, limit: number): Promise<GrantRecord[]>
}
