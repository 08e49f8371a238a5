/**
 * The one way the authorization server finds a client by its id: the
 * configured clients first, then (when `registration.enabled`) the clients
 * that registered themselves (RFC 7591), kept in the store. Every endpoint
 * (authorize, token, revoke, introspect, device) asks here, so a rule about
 * clients cannot hold at one door and not another.
 *
 * A registered client is forgotten after `client_ttl` unused: each lookup
 * that finds it moves its expiry on, written at most once per tenth of the
 * ttl (a lookup per request must not become a store write per request).
 */
import { epochSeconds, type Clock } from '../clock.js'
import type { AuthorizationServerConfig, ClientConfig } from '../config/types.js'
import type { Store } from '../store/types.js'
import { clientFromMetadata } from './self-registered.js'

export class ClientDirectory {
  readonly #configured: ReadonlyMap<string, ClientConfig>
  readonly #as: AuthorizationServerConfig
  readonly #store: Store
  readonly #clock: Clock

  constructor(configured: ReadonlyMap<string, ClientConfig>, as: AuthorizationServerConfig, store: Store, clock: Clock) {
    this.#configured = configured
    this.#as = as
    this.#store = store
    this.#clock = clock
  }

  /** The client with this id, or undefined. Rejects with StoreUnavailableError when the store is down. */
  async find(clientId: string): Promise<ClientConfig | undefined> {
    const configured = this.#configured.get(clientId)
    if (configured !== undefined) return configured
    const registration = this.#as.registration
    if (registration === null) return undefined
    const record = await this.#store.getClient(clientId)
    if (record === null) return undefined
    const now = epochSeconds(this.#clock)
    const ttl = registration.clientTtlSec
    if (record.expiresAt - now < ttl - Math.max(1, Math.floor(ttl / 10))) await this.#store.touchClient(clientId, now + ttl)
    return clientFromMetadata(record.clientId, record.metadata, record.secretHash, 'registration', registration.scopes)
  }
}
