/**
 * The POSTs bearward itself sends to a client's own endpoint: logout tokens to its
 * `backchannel_logout_uri` (OIDC Back-Channel Logout 1.0) and CIBA pings to its
 * `backchannel_client_notification_endpoint` (OpenID CIBA Core 1.0 10.2). One set of rules for both:
 *
 * - A configured client's URI is fetched as the operator wrote it. A stranger's (registered, or a
 *   metadata document) is fetched under the metadata-document address rules
 *   (src/http/public-address.ts: global unicast only, never this host, `allow_hosts` excepted); a
 *   refused address is a permanent failure, never retried.
 * - No redirect is followed; the answer's body is not read beyond what closing needs; one POST
 *   takes at most FETCH_TIMEOUT_MS.
 */
import { readFileSync } from 'node:fs'
import { Agent, request } from 'undici'
import type { AuthorizationServerConfig, ClientConfig } from '../config/validated-config.js'
import { NonPublicAddressError, PublicAddresses } from '../http/public-address.js'

/** One POST's time limit. */
export const FETCH_TIMEOUT_MS = 5000

export type PushOutcome = { ok: true; status: number } | { ok: false; reason: string; permanent: boolean }

/**
 * Whether a client's URLs (jwks_uri, back-channel logout, CIBA notification)
 * came from outside the operator's YAML: registration, a metadata document,
 * or an admin API token. Such URLs are fetched only at public addresses; a
 * stolen admin token must not point bearward at an internal one.
 */
export function urlsFromOutside(client: Pick<ClientConfig, 'selfRegistered' | 'adminManaged'>): boolean {
  return client.selfRegistered !== undefined || client.adminManaged === true
}

/** What one POST carries. */
export interface ClientPush {
  readonly uri: string
  /** The client is a stranger (self-registered or a metadata document): public addresses only. */
  readonly stranger: boolean
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** The connection pools of one Runtime's pushes to clients. */
export class ClientPushes {
  readonly #trusted = new Agent({ keepAliveTimeout: 30_000, connections: 8 })
  readonly #stranger: Agent

  constructor(as: Pick<AuthorizationServerConfig, 'clientIdMetadataDocuments'>) {
    const documents = as.clientIdMetadataDocuments
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

  /** POST once; a 2xx is delivered, anything else a failure (permanent for a refused address). Never throws. */
  async post(push: ClientPush): Promise<PushOutcome> {
    try {
      const res = await request(push.uri, {
        dispatcher: push.stranger ? this.#stranger : this.#trusted,
        method: 'POST',
        headers: { ...push.headers },
        body: push.body,
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      })
      // Nothing in the answer matters beyond its status.
      res.body.on('error', () => undefined)
      res.body.destroy()
      if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true, status: res.statusCode }
      return { ok: false, reason: `status ${res.statusCode}`, permanent: false }
    } catch (err) {
      if (err instanceof NonPublicAddressError || (err instanceof Error && err.cause instanceof NonPublicAddressError)) {
        return { ok: false, reason: 'address refused: not a public address', permanent: true }
      }
      return { ok: false, reason: err instanceof Error ? err.message : 'request failed', permanent: false }
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.#trusted.close(), this.#stranger.close()])
  }
}
