/**
 * An admin-managed client (src/store/admin-clients/) as the rest of the
 * authorization server sees clients: the same conversion as a registered
 * client's metadata (self-registered.ts), with the scopes it was given and,
 * while a rotation's overlap lasts, its previous secret. A disabled client
 * is no client at all to the flows (client-directory.ts).
 */
import type { ClientConfig } from '../config/validated-config.js'
import type { AdminClientRecord, AdminClientStore } from '../store/types.js'
import { parseScope } from './scope.js'
import { clientFromMetadata } from './self-registered.js'

/** The ClientConfig of `record` at `nowSec` (the previous secret only until it expires). */
export function adminManagedClient(record: AdminClientRecord, nowSec: number): ClientConfig {
  const client = clientFromMetadata(record.clientId, record.metadata, record.secretHash, 'admin', parseScope(record.metadata.scope))
  const { previousSecretHash: hash, previousExpiresAt: expiresAt } = record
  if (client.secretHash !== null && hash !== null && expiresAt !== null && nowSec < expiresAt) client.previousSecret = { hash, expiresAt }
  return client
}

/**
 * At load: the YAML clients whose id a client created through the admin API already holds. The
 * configured client is found first, so it would silently take the stored one's place (its grants,
 * its refresh tokens) with another secret and other scopes: the load is refused, naming both.
 */
export async function clientsShadowingStore(
  clients: readonly ClientConfig[],
  store: Pick<AdminClientStore, 'get'>,
): Promise<Array<{ index: number; message: string }>> {
  const found: Array<{ index: number; message: string }> = []
  for (const [index, c] of clients.entries()) {
    if ((await store.get(c.clientId)) !== null)
      found.push({ index, message: `client_id ${c.clientId} is also a client created through the admin API: delete one of them` })
  }
  return found
}
