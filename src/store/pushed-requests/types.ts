/**
 * An authorization request the server holds for a browser to continue
 * (RFC 9126 2.2, RFC 9101 5.2): pushed by a client to /par, or resolved from
 * a request object or a pushed request at /authorize and carried through the
 * sign-in pages by reference. Kept under the hash of the client id and the
 * reference, so a reference presented for another client finds nothing (and
 * cannot spend the real client's request).
 */
export interface PushedRequestRecord {
  clientId: string
  /**
   * `pushed`: made at /par, taken once by /authorize. `started`: an
   * authorization under way (the pages carry its reference), read by each
   * step and taken when the code is issued or the person denies.
   */
  stage: 'pushed' | 'started'
  /** The authorization request's parameters as validated, form-encoded (client_id included, `request` resolved). */
  params: string
  /** Whether the parameters came from a request object the client signed (RFC 9101). */
  signed: boolean
  /** Whether the client pushed them to /par (RFC 9126). */
  pushed: boolean
  /**
   * Epoch seconds at which the browser started the authorization: a sign-in
   * at or after it satisfies the request's `prompt=login` and `max_age`
   * (the parameters cannot be rewritten in transit as a plain request's are). Absent while pushed.
   */
  startedAt?: number
  /** Epoch seconds. */
  expiresAt: number
}

/** Authorization requests held by reference. */
export interface PushedRequestStore {
  /** Keep `record` under `key` (a hash) for `ttlSec`. */
  put(key: string, record: PushedRequestRecord, ttlSec: number): Promise<void>
  /** The record, unchanged; null when unknown, taken or expired. */
  get(key: string): Promise<PushedRequestRecord | null>
  /** Atomic get-and-delete: of N concurrent calls one gets the record; null when unknown, taken or expired. */
  take(key: string): Promise<PushedRequestRecord | null>
}
