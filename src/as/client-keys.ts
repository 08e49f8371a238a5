/**
 * The public keys a `private_key_jwt` client signs its assertions with
 * (RFC 7523 2.2, OIDC Core 9): inline (`jwks`) or published at `jwks_uri`.
 *
 * A published set is fetched by the JWKS client the gateway uses for
 * trusted issuers (`gateway/jwks-client.ts`): cached as Cache-Control says
 * (5 minutes to a day), refetched on an unknown `kid` at most once per 30 s,
 * at most 512 KiB, 5 s to answer. Who chose the URL decides how it is
 * fetched:
 * - a configured client's `jwks_uri` was written by the operator: fetched
 *   as written (an internal key server is fine);
 * - a registered client's or a metadata document's `jwks_uri` was chosen by
 *   a stranger: https only, and only to public addresses, by the rule the
 *   metadata document fetcher follows (`http/public-address.ts`: the address
 *   checked is the one connected to; `client_id_metadata_documents.allow_hosts`
 *   and `ca_file` are the only exceptions). Such key sets are cached per URL,
 *   at most {@link MAX_STRANGER_SETS} of them.
 */
import type { KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Agent } from 'undici'
import type { Clock } from '../clock.js'
import type { ClientConfig, ClientIdMetadataDocumentsConfig } from '../config/validated-config.js'
import { JwksClient, type JwksSettings } from '../gateway/jwks-client.js'
import { parseJwks } from '../keys/jwk-set.js'
import type { Logger } from '../log.js'
import { StaticKeys, type KeyLookup } from '../tokens/verify-jwt.js'
import { PublicAddresses } from '../http/public-address.js'

/** A slow key server must not hold a token request longer than a metadata document fetch would (5 s). */
const FETCH_TIMEOUT_MS = 5000

/** How a client's key set is fetched and kept. */
export const CLIENT_JWKS_SETTINGS: JwksSettings = {
  minTtlSec: 300,
  maxTtlSec: 86_400,
  cooldownSec: 30,
  staleSec: 3600,
  firstFetchWaitMs: FETCH_TIMEOUT_MS,
  timeoutMs: FETCH_TIMEOUT_MS,
}

/** Key sets of self-described clients kept at once; the oldest is dropped past this. */
export const MAX_STRANGER_SETS = 1000

/** Why a stranger's `jwks_uri` is not fetched at all, or undefined (the address rule is the connector's). */
export function strangerJwksUriProblem(uri: string): string | undefined {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return 'not a URL'
  }
  if (url.protocol !== 'https:') return 'not https'
  if (url.username !== '' || url.password !== '' || uri.includes('#')) return 'credentials or fragment'
  return undefined
}

/** An inline set never changes: parse it once per client object. */
const EMPTY = new StaticKeys([])

/** The key sets of one Runtime's clients. */
export class ClientKeySets {
  readonly #clock: Clock
  readonly #log: Logger
  readonly #trusted = new Agent({ keepAliveTimeout: 30_000, connections: 8 })
  readonly #stranger: Agent
  readonly #inline = new WeakMap<object, KeyLookup>()
  readonly #certificateKeys = new WeakMap<object, readonly KeyObject[]>()
  /** Configured clients' remote sets, by URL (few, kept for the Runtime's life). */
  readonly #configured = new Map<string, JwksClient>()
  /** Self-described clients' remote sets, by URL, oldest first. */
  readonly #strangers = new Map<string, JwksClient>()

  constructor(clock: Clock, log: Logger, documents: ClientIdMetadataDocumentsConfig | null) {
    this.#clock = clock
    this.#log = log
    // The address check lives in the connector: what is checked is what is connected to.
    const addresses = new PublicAddresses({ allowHosts: documents?.allowHosts ?? [] })
    const ca = documents?.caFile ?? null
    this.#stranger = new Agent({
      connect: addresses.connector({ ...(ca !== null ? { ca: readFileSync(ca, 'utf8') } : {}), timeout: FETCH_TIMEOUT_MS }),
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
      connections: 8,
    })
  }

  /**
   * Where `client`'s keys are found, or a reason why there are none to use
   * (a stranger's URL that must not be fetched). The lookup's `resolve`
   * rejects with TemporarilyUnavailable when a remote set cannot be loaded.
   */
  lookup(client: ClientConfig): KeyLookup | string {
    if (client.jwks !== undefined) {
      let keys = this.#inline.get(client.jwks)
      if (keys === undefined) {
        const parsed = parseJwks(client.jwks)
        keys = parsed === undefined ? EMPTY : new StaticKeys(parsed)
        this.#inline.set(client.jwks, keys)
      }
      return keys
    }
    const uri = client.jwksUri
    if (uri === undefined) return 'the client has no keys'
    // Only YAML clients' keys come from private addresses: an admin-managed client's URL came through an API token, fetched like a stranger's.
    if (client.selfRegistered === undefined && client.adminManaged !== true) return this.#remote(this.#configured, uri, this.#trusted, Number.POSITIVE_INFINITY)
    const problem = strangerJwksUriProblem(uri)
    if (problem !== undefined) return `jwks_uri refused: ${problem}`
    return this.#remote(this.#strangers, uri, this.#stranger, MAX_STRANGER_SETS)
  }

  /**
   * The public keys of a `self_signed_tls_client_auth` client's inline
   * `jwks`, which its certificate's key must be one of (RFC 8705 2.2).
   */
  certificateKeys(client: ClientConfig): readonly KeyObject[] {
    if (client.jwks === undefined) return []
    let keys = this.#certificateKeys.get(client.jwks)
    if (keys === undefined) {
      keys = (parseJwks(client.jwks) ?? []).map((k) => k.key)
      this.#certificateKeys.set(client.jwks, keys)
    }
    return keys
  }

  #remote(cache: Map<string, JwksClient>, uri: string, dispatcher: Agent, max: number): JwksClient {
    const known = cache.get(uri)
    if (known !== undefined) {
      // Most recently used last: the one dropped when full is the one least used.
      cache.delete(uri)
      cache.set(uri, known)
      return known
    }
    if (cache.size >= max) {
      const [oldestUri, oldest] = cache.entries().next().value as [string, JwksClient]
      oldest.close()
      cache.delete(oldestUri)
    }
    const created = new JwksClient(`client jwks ${uri}`, uri, CLIENT_JWKS_SETTINGS, { clock: this.#clock, log: this.#log, dispatcher })
    cache.set(uri, created)
    return created
  }

  /** Stop fetches in flight and release the connections (at Runtime close). */
  async close(): Promise<void> {
    for (const c of [...this.#configured.values(), ...this.#strangers.values()]) c.close()
    this.#configured.clear()
    this.#strangers.clear()
    await Promise.all([this.#trusted.close(), this.#stranger.close()])
  }
}
