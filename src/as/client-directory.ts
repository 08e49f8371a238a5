/**
 * The one way the authorization server finds a client by its id: the
 * configured clients first, then an https URL as a Client ID Metadata
 * Document (when `client_id_metadata_documents.enabled`), then (when
 * `admin_api.enabled`) the clients created through the admin API, then (when
 * `registration.enabled`) the clients that registered themselves (RFC
 * 7591), kept in the store. Every endpoint
 * (authorize, token, revoke, introspect, device) asks here, so a rule about
 * clients cannot hold at one door and not another.
 *
 * A registered client is forgotten after `client_ttl` unused: each lookup
 * that finds it moves its expiry on, written at most once per tenth of the
 * ttl (a lookup per request must not become a store write per request).
 */
import { epochSeconds, type Clock } from '../clock.js'
import type { AuthorizationServerConfig, ClientConfig, RegistrationConfig } from '../config/validated-config.js'
import type { RegisteredClientRecord, Store } from '../store/types.js'
import { adminManagedClient } from './admin-managed-client.js'
import { MetadataDocuments } from './client-id-metadata-document.js'
import { clientFromMetadata } from './self-registered.js'
import { selfDescribedClientScopes } from './scope.js'

export class ClientDirectory {
  readonly #configured: ReadonlyMap<string, ClientConfig>
  readonly #as: AuthorizationServerConfig
  readonly #store: Store
  readonly #clock: Clock
  readonly #documents: MetadataDocuments | null
  /** `admin_api.enabled`: clients created through the admin API are looked up (with it off, the store is not asked). */
  readonly #adminManaged: boolean

  constructor(
    configured: ReadonlyMap<string, ClientConfig>,
    as: AuthorizationServerConfig,
    store: Store,
    clock: Clock,
    documents: MetadataDocuments | null = null,
    adminManaged = false,
  ) {
    this.#adminManaged = adminManaged
    this.#configured = configured
    this.#as = as
    this.#store = store
    this.#clock = clock
    this.#documents = documents ?? (as.clientIdMetadataDocuments !== null ? new MetadataDocuments(as.clientIdMetadataDocuments, clock) : null)
  }

  /** Release the metadata document fetcher's connections (at Runtime close). */
  async close(): Promise<void> {
    await this.#documents?.close()
  }

  /** The client with this id, or undefined. Rejects with StoreUnavailableError when the store is down. */
  async find(clientId: string): Promise<ClientConfig | undefined> {
    const configured = this.#configured.get(clientId)
    if (configured !== undefined) return configured
    // A client_id that is an https URL names its metadata document; never a registered id.
    if (this.#documents !== null && clientId.startsWith('https://')) return this.#documents.find(clientId)
    if (this.#adminManaged) {
      const managed = await this.#store.adminClients.get(clientId)
      // A disabled client is unknown to every flow: no authorization, no token, no introspection.
      if (managed !== null) return managed.disabled ? undefined : adminManagedClient(managed, epochSeconds(this.#clock))
    }
    const registration = this.#as.registration
    if (registration === null) return undefined
    const record = await this.#store.clients.get(clientId)
    if (record === null) return undefined
    const now = epochSeconds(this.#clock)
    const ttl = registration.clientTtlSec
    if (record.expiresAt - now < ttl - Math.max(1, Math.floor(ttl / 10))) await this.#store.clients.touch(clientId, now + ttl)
    return registeredClient(record, registration)
  }
}

/** A client that registered itself (RFC 7591) as the flows see it: its metadata, within `registration.scopes`. */
export function registeredClient(record: RegisteredClientRecord, registration: RegistrationConfig): ClientConfig {
  return clientFromMetadata(record.clientId, record.metadata, record.secretHash, 'registration', selfDescribedClientScopes(registration.scopes))
}
