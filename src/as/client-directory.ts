/**
 * The one way the authorization server finds a client by its id: the
 * configured clients first, then an https URL as a Client ID Metadata
 * Document (when `client_id_metadata_documents.enabled`), then (when
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
import type { AuthorizationServerConfig, ClientConfig } from '../config/validated-config.js'
import type { Store } from '../store/types.js'
import { MetadataDocuments } from './client-id-metadata-document.js'
import { clientFromMetadata } from './self-registered.js'
import { selfDescribedClientScopes } from './scope.js'

export class ClientDirectory {
  readonly #configured: ReadonlyMap<string, ClientConfig>
  readonly #as: AuthorizationServerConfig
  readonly #store: Store
  readonly #clock: Clock
  readonly #documents: MetadataDocuments | null

  constructor(
    configured: ReadonlyMap<string, ClientConfig>,
    as: AuthorizationServerConfig,
    store: Store,
    clock: Clock,
    documents: MetadataDocuments | null = null,
  ) {
    this.#configured = configured
    this.#as = as
    this.#store = store
    this.#clock = clock
    this.#documents =
      documents ??
      (as.clientIdMetadataDocuments !== null
        ? new MetadataDocuments(as.clientIdMetadataDocuments, clock, { declaredDetailsTypes: Object.keys(as.authorizationDetailsTypes ?? {}) })
        : null)
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
    const registration = this.#as.registration
    if (registration === null) return undefined
    const record = await this.#store.clients.get(clientId)
    if (record === null) return undefined
    const now = epochSeconds(this.#clock)
    const ttl = registration.clientTtlSec
    if (record.expiresAt - now < ttl - Math.max(1, Math.floor(ttl / 10))) await this.#store.clients.touch(clientId, now + ttl)
    return clientFromMetadata(record.clientId, record.metadata, record.secretHash, 'registration', selfDescribedClientScopes(registration.scopes))
  }
}
