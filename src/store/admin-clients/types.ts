/**
 * Clients managed through the admin API (issue #42): created, changed,
 * disabled and deleted at run time beside the YAML clients and the ones that
 * registered themselves. Kept until deleted. Their secret is stored only as
 * a hash; a rotation keeps the previous hash until `previousExpiresAt`.
 */
import type { RegisteredClientMetadata } from '../clients/types.js'

export interface AdminClientRecord {
  clientId: string
  /** The RFC 7591 metadata, as validated by src/as/client-metadata.ts. */
  metadata: RegisteredClientMetadata
  /** The client secret's hash (src/crypto/secret.ts); null for a public or private_key_jwt client. */
  secretHash: string | null
  /** The secret before the last rotation, good until `previousExpiresAt` (epoch seconds); null when none. */
  previousSecretHash: string | null
  previousExpiresAt: number | null
  /** A disabled client gets no token and no authorization. */
  disabled: boolean
  /** Epoch seconds. */
  createdAt: number
  updatedAt: number
  /** Starts at 1, one more at every change: the admin API's ETag. */
  version: number
}

/** What an update changes; fields left out stay as they are. */
export interface AdminClientChange {
  metadata?: RegisteredClientMetadata
  secretHash?: string | null
  previousSecretHash?: string | null
  previousExpiresAt?: number | null
  disabled?: boolean
}

export type AdminClientUpdate =
  | { kind: 'updated'; record: AdminClientRecord }
  /** `ifVersion` was given and the record has moved on: nothing changed. */
  | { kind: 'stale'; current: AdminClientRecord }
  | { kind: 'missing' }

export interface AdminClientStore {
  /** Store a new client; false when the id is taken (atomic: of two creates with one id exactly one succeeds). */
  create(record: AdminClientRecord): Promise<boolean>
  /** The client, or null. */
  get(clientId: string): Promise<AdminClientRecord | null>
  /**
   * Apply `change` at `atSec`, one more version. With `ifVersion` the write
   * happens only while the record is still at that version (compare and set:
   * of two writers from one version exactly one wins).
   */
  update(clientId: string, ifVersion: number | null, change: AdminClientChange, atSec: number): Promise<AdminClientUpdate>
  /** Forget the client; with `ifVersion`, only while it is at that version. */
  delete(clientId: string, ifVersion: number | null): Promise<AdminClientUpdate>
  /** Up to `limit` clients by id (UTF-8 byte order), those after `after` (exclusive): the admin API's pages. */
  list(after: string | null, limit: number): Promise<AdminClientRecord[]>
}
