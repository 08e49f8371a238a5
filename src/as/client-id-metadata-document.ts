/**
 * Client ID Metadata Documents (MCP authorization 2025-11-25; IETF draft
 * "OAuth Client ID Metadata Document"): a `client_id` that is an https URL
 * names a JSON document, served there, that describes the client. Off by
 * default (`client_id_metadata_documents.enabled`).
 *
 * Fetching a URL a stranger chose is a server-side request forgery risk, so
 * the fetch:
 * - takes https only, with no credentials or fragment in the URL;
 * - connects only to global unicast addresses that are not this host's own
 *   (src/http/public-address.ts: IANA's special-purpose registries, the
 *   IPv4 embedded in mapped, NAT64, 6to4 and Teredo forms); the address
 *   checked is the one the connection uses (the connector's DNS lookup
 *   resolves once and filters what it resolved, so a name that answers a
 *   public address to a check and a private one to the connect gets
 *   nowhere), IP literals are checked before connecting, and hosts in
 *   `allow_hosts` are the only exception;
 * - follows no redirect, reads at most 5 KB, and gives up after 5 s;
 * - trusts the system CAs, or `ca_file` for a private CA.
 * The document must name the URL itself as its `client_id`, and its metadata
 * passes the registration rules (`validateClientMetadata`); the client has
 * no secret: it is public (`none`), or proves itself with its key
 * (`private_key_jwt` with `jwks` or `jwks_uri`, RFC 7523 2.2). Documents are
 * cached as HTTP says (Cache-Control max-age, within bounds); failures briefly.
 */
import { readFileSync } from 'node:fs'
import { Agent, request } from 'undici'
import type { Clock } from '../clock.js'
import type { ClientConfig, ClientIdMetadataDocumentsConfig } from '../config/validated-config.js'
import { PublicAddresses, type PublicAddressOptions } from '../http/public-address.js'
import { validateClientMetadata } from './client-metadata.js'
import { selfDescribedClientScopes } from './scope.js'
import { clientFromMetadata } from './self-registered.js'

/** The draft's guidance: documents are small, and a slow host must not hold a sign-in. */
export const MAX_DOCUMENT_BYTES = 5 * 1024
export const FETCH_TIMEOUT_MS = 5000
/** Cache lifetime bounds: a document that says nothing is kept 5 minutes; none longer than a day. */
const DEFAULT_TTL_MS = 5 * 60_000
const MAX_TTL_MS = 24 * 3600_000
/** A failed fetch is remembered this long, so a bad client_id cannot make us fetch in a loop. */
const FAILURE_TTL_MS = 30_000
const MAX_ENTRIES = 1000

/** Why a client_id cannot be a metadata document URL, or undefined. */
export function documentUrlProblem(clientId: string): string | undefined {
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return 'not a URL'
  }
  if (url.protocol !== 'https:') return 'not https'
  if (url.username !== '' || url.password !== '' || clientId.includes('#')) return 'credentials or fragment'
  if (url.pathname === '/' || url.pathname === '') return 'no path'
  return undefined
}

class Refused extends Error {}

interface Cached {
  readonly client: ClientConfig | null
  readonly untilMs: number
}

export interface DocumentFetchOptions {
  /** Overall time limit per fetch (default 5 s; tests shorten it). */
  timeoutMs?: number
  /** This host's interfaces, for the own-address rule (default `os.networkInterfaces`; tests pass their own). */
  interfaces?: PublicAddressOptions['interfaces']
  /** RFC 9396 10: the authorization details types the server declares, which a document may name (default none). */
  declaredDetailsTypes?: readonly string[]
}

/** The documents of one Runtime: the fetcher, its connection pool and its cache. */
export class MetadataDocuments {
  readonly #scopes: readonly string[]
  readonly #detailsTypes: readonly string[]
  readonly #clock: Clock
  readonly #agent: Agent
  readonly #timeoutMs: number
  readonly #cache = new Map<string, Cached>()
  readonly #pending = new Map<string, Promise<ClientConfig | null>>()

  constructor(config: ClientIdMetadataDocumentsConfig, clock: Clock, options: DocumentFetchOptions = {}) {
    this.#scopes = selfDescribedClientScopes(config.scopes)
    this.#detailsTypes = options.declaredDetailsTypes ?? []
    this.#clock = clock
    this.#timeoutMs = options.timeoutMs ?? FETCH_TIMEOUT_MS
    // The address check lives in the connector: what is checked is what is connected to.
    const addresses = new PublicAddresses({ allowHosts: config.allowHosts, ...(options.interfaces !== undefined ? { interfaces: options.interfaces } : {}) })
    this.#agent = new Agent({
      connect: addresses.connector({ ...(config.caFile !== null ? { ca: readFileSync(config.caFile, 'utf8') } : {}), timeout: this.#timeoutMs }),
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
      connections: 8,
    })
  }

  /** The client a metadata document URL describes, or undefined when it cannot be had (every refusal). */
  async find(clientId: string): Promise<ClientConfig | undefined> {
    if (documentUrlProblem(clientId) !== undefined) return undefined
    const now = this.#clock.now()
    const cached = this.#cache.get(clientId)
    if (cached !== undefined && now < cached.untilMs) return cached.client ?? undefined
    let pending = this.#pending.get(clientId)
    if (pending === undefined) {
      pending = this.#load(clientId).finally(() => this.#pending.delete(clientId))
      this.#pending.set(clientId, pending)
    }
    return (await pending) ?? undefined
  }

  async #load(clientId: string): Promise<ClientConfig | null> {
    let client: ClientConfig | null = null
    let ttlMs = FAILURE_TTL_MS
    try {
      const { document, maxAgeMs } = await this.#fetch(clientId)
      client = this.#client(clientId, document)
      ttlMs = maxAgeMs
    } catch {
      client = null
    }
    if (this.#cache.size >= MAX_ENTRIES) this.#cache.delete(this.#cache.keys().next().value as string)
    if (ttlMs > 0) this.#cache.set(clientId, { client, untilMs: this.#clock.now() + ttlMs })
    return client
  }

  async #fetch(clientId: string): Promise<{ document: unknown; maxAgeMs: number }> {
    const url = new URL(clientId)
    const res = await request(url, {
      dispatcher: this.#agent,
      method: 'GET',
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(this.#timeoutMs),
    })
    try {
      if (res.statusCode !== 200) throw new Refused(`status ${res.statusCode}`)
      const declared = Number(res.headers['content-length'] ?? '0')
      if (declared > MAX_DOCUMENT_BYTES) throw new Refused('too large')
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length
        if (size > MAX_DOCUMENT_BYTES) throw new Refused('too large')
        chunks.push(chunk as Buffer)
      }
      return { document: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown, maxAgeMs: maxAge(res.headers['cache-control']) }
    } finally {
      // A body we stopped reading is dropped; its abort is expected, not an error to surface.
      res.body.on('error', () => undefined)
      if (!res.body.readableEnded) res.body.destroy()
    }
  }

  #client(clientId: string, document: unknown): ClientConfig {
    if (typeof document !== 'object' || document === null || (document as Record<string, unknown>).client_id !== clientId) {
      throw new Refused('the document names another client_id')
    }
    const metadata = validateClientMetadata(
      { token_endpoint_auth_method: 'none', ...document },
      { allowedScopes: this.#scopes, declaredDetailsTypes: this.#detailsTypes },
    )
    // It can hold no secret, but it may prove itself with its key (private_key_jwt, jwks or jwks_uri in the document).
    const method = metadata.token_endpoint_auth_method
    if (method !== 'none' && method !== 'private_key_jwt') throw new Refused('a metadata document client has no secret')
    return clientFromMetadata(clientId, metadata, null, 'metadata_document', this.#scopes)
  }

  async close(): Promise<void> {
    await this.#agent.close()
  }
}

/** How long a response may be reused (RFC 9111 5.2.2): max-age, bounded; no-store and no-cache mean not at all. */
function maxAge(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '')
  if (/(?:^|,)\s*(?:no-store|no-cache)\s*(?:,|$)/i.test(value)) return 0
  const m = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(value)
  if (m === null) return DEFAULT_TTL_MS
  return Math.min(Number(m[1]) * 1000, MAX_TTL_MS)
}
