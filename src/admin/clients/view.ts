/**
 * A client as the admin API shows it: never a secret or its hash, only
 * whether one is set. `source` says where it lives and so what may change
 * it: `config` (YAML, read-only), `registration` (RFC 7591),
 * `metadata_document` (fetched), `admin` (this API).
 */
import { adminManagedClient } from '../../as/admin-managed-client.js'
import type { ClientConfig } from '../../config/validated-config.js'
import type { AdminClientRecord } from '../../store/types.js'

export type ClientSource = 'config' | 'registration' | 'metadata_document' | 'admin'

export const CLIENT_SOURCES: readonly ClientSource[] = ['config', 'registration', 'metadata_document', 'admin']

export interface ClientView {
  id: string
  name: string
  source: ClientSource
  type: string
  token_endpoint_auth_method: string
  grant_types: string[]
  redirect_uris: string[]
  scopes: string[]
  has_secret: boolean
  disabled: boolean
  revision?: number
  created_at?: number
  updated_at?: number
  previous_secret_expires_at?: number | null
}

export function sourceOf(client: ClientConfig): ClientSource {
  return client.adminManaged ? 'admin' : (client.selfRegistered ?? 'config')
}

export function clientView(client: ClientConfig, source: ClientSource = sourceOf(client), disabled = false): ClientView {
  return {
    id: client.clientId,
    name: client.name,
    source,
    type: client.type,
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    grant_types: [...client.grantTypes],
    redirect_uris: [...client.redirectUris],
    scopes: [...client.scopes],
    has_secret: client.secretHash !== null,
    disabled,
  }
}

/** An admin-managed client, disabled or not, with its revision (the ETag) and when the previous secret stops working. */
export function adminClientView(record: AdminClientRecord, nowSec: number): ClientView {
  const previous = record.previousExpiresAt !== null && record.previousExpiresAt > nowSec ? record.previousExpiresAt : null
  return {
    ...clientView(adminManagedClient(record, nowSec), 'admin', record.disabled),
    revision: record.version,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    previous_secret_expires_at: previous,
  }
}
