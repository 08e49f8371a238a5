/**
 * An admin-managed client (src/store/admin-clients/) as the rest of the
 * authorization server sees clients: the same conversion as a registered
 * client's metadata (self-registered.ts), with the scopes it was given and,
 * while a rotation's overlap lasts, its previous secret. A disabled client
 * is no client at all to the flows (client-directory.ts).
 */
import type { ClientConfig } from '../config/validated-config.js'
import type { AdminClientRecord } from '../store/types.js'
import { parseScope } from './scope.js'
import { clientFromMetadata } from './self-registered.js'

/** The ClientConfig of `record` at `nowSec` (the previous secret only until it expires). */
export function adminManagedClient(record: AdminClientRecord, nowSec: number): ClientConfig {
  const client = clientFromMetadata(record.clientId, record.metadata, record.secretHash, 'admin', parseScope(record.metadata.scope))
  const { previousSecretHash: hash, previousExpiresAt: expiresAt } = record
  if (client.secretHash !== null && hash !== null && expiresAt !== null && nowSec < expiresAt) client.previousSecret = { hash, expiresAt }
  return client
}
