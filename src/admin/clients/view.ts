/**
 * A client as the admin API shows it: never a secret or its hash, only
 * whether one is set. `source` says where it lives and so what may change
 * it: `config` (YAML, read-only), `registration` (RFC 7591),
 * `metadata_document` (fetched), `admin` (this API).
 */
import type { ClientConfig } from '../../config/validated-config.js'

export type ClientSource = 'config' | 'registration' | 'metadata_document' | 'admin'

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
}

export function sourceOf(client: ClientConfig): ClientSource {
  return client.selfRegistered ?? 'config'
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
