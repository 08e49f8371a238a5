/**
 * Back-channel logout delivery (OpenID Connect Back-Channel Logout 1.0 2.5-2.8): when sessions
 * end (src/as/sessions/end-sessions.ts), each client that received an id_token in one of them and
 * has a `backchannel_logout_uri` gets a logout token, POSTed as `logout_token=` in an
 * `application/x-www-form-urlencoded` body.
 *
 * - Deliveries are queued in the store (the `deliveries` family, queue `bcl`), so the person's
 *   page never waits on a client and any instance delivers: a claim leases each job to one
 *   instance at a time. The instance that queued a job starts delivering at once; every instance
 *   also looks for due jobs every POLL_MS.
 * - A failure (no answer, not 2xx) is retried with doubling backoff (1 s, 2 s, 4 s ... at most
 *   60 s apart) until GIVE_UP_MS after the job was queued, then dropped; the queue holds at most
 *   MAX_QUEUED jobs (the oldest dropped). Each outcome is counted
 *   (`bearward_backchannel_logout_total{outcome=delivered|failed|dropped}`) and logged, never
 *   with the token.
 * - A configured client's URI is fetched as the operator wrote it. A stranger's (registered, or
 *   a metadata document) is fetched under the metadata-document address rules
 *   (src/http/public-address.ts: global unicast only, never this host, `allow_hosts` excepted);
 *   a refused address is dropped at once, not retried.
 * - No redirect is followed; the answer's body is not read beyond what closing needs.
 */
import { DrainRuns } from '../../store/deliveries/drain-runs.js'
import { readFileSync } from 'node:fs'
import { Agent, request } from 'undici'
import { randomToken } from '../../crypto/random.js'
import { NonPublicAddressError, PublicAddresses } from '../../http/public-address.js'
import type { Clock } from '../../clock.js'
import type { AuthorizationServerConfig, ClientConfig } from '../../config/validated-config.js'
import type { KeySet } from '../../keys/keyset.js'
import type { Logger } from '../../log.js'
import type { Metrics } from '../../metrics.js'
import type { Store } from '../../store/types.js'
import type { SessionEnds, SessionsEnded } from '../sessions/session-ends.js'
import { signLogoutToken } from './logout-token.js'

/** The store queue of logout tokens to deliver. */
export const LOGOUT_QUEUE = 'bcl'
/** At most this many deliveries wait: a client that is down never fills the store. */
export const MAX_QUEUED = 10_000
/** How often every instance looks for due deliveries (its own start at once). */
export const POLL_MS = 500
/** A claimed delivery is not handed to another instance for this long (a POST takes at most FETCH_TIMEOUT_MS). */
const LEASE_MS = 30_000
/** How many deliveries one instance sends at a time. */
const BATCH = 16
/** One POST's time limit. */
export const FETCH_TIMEOUT_MS = 5000
/** The first retry's delay; each later one doubles, up to MAX_BACKOFF_MS. */
export const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 60_000
/** A delivery still failing this long after it was queued is dropped. */
export const GIVE_UP_MS = 10 * 60_000

/** What a queued job says (the token is minted at each attempt, with the job's id as `jti`). */
interface LogoutJob {
  clientId: string
  sub: string
  sid?: string
}

type Outcome = { ok: true; status: number } | { ok: false; reason: string; permanent: boolean }

/** The delay before retry number `attempts + 1`. */
export function backoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** attempts)
}

/** What delivery needs of the authorization server (AsContext's fields of these names). */
export interface DeliveryContext {
  readonly as: AuthorizationServerConfig
  readonly store: Store
  readonly log: Logger
  readonly metrics: Metrics
  readonly clock: Clock
  readonly keys: KeySet
  readonly issuer: string
  readonly sessionEnds: SessionEnds
  findClient(clientId: string): Promise<ClientConfig | undefined>
}

/** The delivery of one Runtime: subscribed to its session ends, with its own connection pools. */
export class BackchannelLogoutDelivery {
  readonly #as: DeliveryContext
  readonly #trusted = new Agent({ keepAliveTimeout: 30_000, connections: 8 })
  readonly #stranger: Agent
  readonly #unsubscribe: () => void
  #timer: NodeJS.Timeout | null = null
  #closed = false
  readonly #runs = new DrainRuns(
    () => this.#drainOnce(),
    () => this.#closed,
  )

  constructor(as: DeliveryContext) {
    this.#as = as
    const documents = as.as.clientIdMetadataDocuments
    // The address check lives in the connector: what is checked is what is connected to.
    const addresses = new PublicAddresses({ allowHosts: documents?.allowHosts ?? [] })
    const ca = documents?.caFile ?? null
    this.#stranger = new Agent({
      connect: addresses.connector({ ...(ca !== null ? { ca: readFileSync(ca, 'utf8') } : {}), timeout: FETCH_TIMEOUT_MS }),
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
      connections: 8,
    })
    this.#unsubscribe = as.sessionEnds.on((ended) => this.#queue(ended))
  }

  /** Look for due deliveries every POLL_MS (unref'd: it never keeps the process alive). */
  start(): void {
    if (this.#timer !== null || this.#closed) return
    this.#timer = setInterval(() => void this.runOnce(), POLL_MS)
    this.#timer.unref()
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#unsubscribe()
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
    await this.#runs.settled()
    await Promise.all([this.#trusted.close(), this.#stranger.close()])
  }

  /**
   * Deliver what is due now, until nothing is; resolves when done. Concurrent calls share one
   * run (and a call during a run makes it look once more). Tests call it to deliver without waiting.
   */
  runOnce(): Promise<void> {
    return this.#runs.run()
  }

  async #drainOnce(): Promise<'done' | 'stop'> {
    try {
      let jobs = await this.#as.store.deliveries.claim(LOGOUT_QUEUE, LEASE_MS, BATCH)
      while (jobs.length > 0 && !this.#closed) {
        await Promise.all(jobs.map((j) => this.#deliver(j.id, j.payload, j.attempts, j.queuedAtMs)))
        jobs = await this.#as.store.deliveries.claim(LOGOUT_QUEUE, LEASE_MS, BATCH)
      }
      return 'done'
    } catch (err) {
      // The store is down: the jobs wait in it (or were never queued); the next poll tries again.
      this.#as.log.warn({ event: 'backchannel_logout_store_failed', err }, 'back-channel logout deliveries could not be read')
      return 'stop'
    }
  }

  /** Queue a logout token for each client told in each ended session; then start delivering. */
  async #queue(ended: SessionsEnded): Promise<void> {
    let queued = 0
    for (const s of ended.sessions) {
      for (const clientId of s.clients) {
        const job: LogoutJob = { clientId, sub: ended.sub, ...(s.record.sid === undefined ? {} : { sid: s.record.sid }) }
        const dropped = await this.#as.store.deliveries.enqueue(LOGOUT_QUEUE, randomToken(), JSON.stringify(job), MAX_QUEUED)
        queued++
        if (dropped > 0) {
          this.#as.metrics.backchannelLogouts.inc({ outcome: 'dropped' }, dropped)
          this.#as.log.warn({ event: 'backchannel_logout_dropped', reason: 'queue full', dropped }, 'back-channel logout deliveries dropped: the queue is full')
        }
      }
    }
    if (queued > 0) void this.runOnce()
  }

  async #deliver(id: string, payload: string, attempts: number, queuedAtMs: number): Promise<void> {
    const as = this.#as
    const job = JSON.parse(payload) as LogoutJob
    const outcome = await this.#post(id, job)
    if (outcome.ok) {
      await as.store.deliveries.complete(LOGOUT_QUEUE, id)
      as.metrics.backchannelLogouts.inc({ outcome: 'delivered' })
      as.log.info({ event: 'backchannel_logout_delivered', client_id: job.clientId, status: outcome.status, attempts: attempts + 1 }, 'logout token delivered')
      return
    }
    const nextAt = as.clock.now() + backoffMs(attempts)
    if (outcome.permanent || nextAt - queuedAtMs > GIVE_UP_MS) {
      await as.store.deliveries.complete(LOGOUT_QUEUE, id)
      as.metrics.backchannelLogouts.inc({ outcome: 'dropped' })
      as.log.warn(
        { event: 'backchannel_logout_dropped', client_id: job.clientId, reason: outcome.reason, attempts: attempts + 1 },
        'logout token not delivered; given up',
      )
      return
    }
    await as.store.deliveries.retry(LOGOUT_QUEUE, id, nextAt)
    as.metrics.backchannelLogouts.inc({ outcome: 'failed' })
    as.log.info(
      { event: 'backchannel_logout_failed', client_id: job.clientId, reason: outcome.reason, attempts: attempts + 1 },
      'logout token not delivered; will retry',
    )
  }

  async #post(jti: string, job: LogoutJob): Promise<Outcome> {
    const client = await this.#as.findClient(job.clientId)
    const target = client?.backchannelLogout
    if (client === undefined || target === undefined) return { ok: false, reason: 'the client no longer has a backchannel_logout_uri', permanent: true }
    const token = await signLogoutToken(this.#as, { clientId: job.clientId, sub: job.sub, ...(job.sid === undefined ? {} : { sid: job.sid }), jti })
    try {
      const res = await request(target.uri, {
        // Only YAML clients reach private addresses: an admin-managed client's URL came through an API token, judged like a stranger's.
        dispatcher: client.selfRegistered === undefined && client.adminManaged !== true ? this.#trusted : this.#stranger,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }).toString(),
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      })
      // Nothing in the answer matters beyond its status (2.8).
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
}
