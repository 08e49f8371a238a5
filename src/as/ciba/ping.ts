/**
 * Ping mode (OpenID CIBA Core 1.0 10.2): when the person decides a ping client's request (approve
 * or deny), bearward POSTs `{"auth_req_id": ...}` to the client's
 * `backchannel_client_notification_endpoint` with the request's `client_notification_token` as a
 * Bearer token; the client then fetches the answer at /token.
 *
 * - The job is queued in the store (the `deliveries` family, queue `ciba`) when the request is
 *   made, before its approval is opened (a failure to queue opens nothing: no approval the person
 *   could decide for a client that got a 503), parked until the request's expiry, so nothing is lost when another instance decides: the
 *   deciding instance's desk tells this module (`onDecided`), which makes the job due at once, and
 *   any instance delivers it. A job that reaches its expiry undecided is dropped unsent (the
 *   client's poll says expired_token).
 * - The auth_req_id and the notification token are bearer secrets: the job holds them sealed
 *   (AES-256-GCM, keys derived from the signing keys, the approval id as additional data), so
 *   reading the store is not enough to redeem a request or to call the client's endpoint.
 * - Delivery follows every push to a client (src/as/client-push.ts): a stranger's endpoint only at
 *   public addresses. A failure is retried with doubling backoff (1 s ... 60 s) until GIVE_UP_MS
 *   after the decision, then dropped; outcomes are counted (`bearward_ciba_pings_total{outcome}`)
 *   and logged, never with a token.
 */
import type { Clock } from '../../clock.js'
import { Sealer, sealingKey } from '../../crypto/sealed.js'
import type { ClientConfig } from '../../config/validated-config.js'
import type { KeySet } from '../../keys/keyset.js'
import type { Logger } from '../../log.js'
import type { Metrics } from '../../metrics.js'
import type { ApprovalRecord } from '../../store/approvals/types.js'
import { DrainRuns } from '../../store/deliveries/drain-runs.js'
import type { DeliveryStore } from '../../store/deliveries/types.js'
import { type ClientPushes, urlsFromOutside } from '../client-push.js'

/** The store queue of pings. */
export const PING_QUEUE = 'ciba'
/** At most this many pings wait (pending requests included): a client that is down never fills the store. */
export const MAX_QUEUED = 10_000
/** How often every instance looks for due pings (the deciding instance starts at once). */
export const POLL_MS = 500
/** A claimed ping is not handed to another instance for this long (a POST takes at most 5 s). */
const LEASE_MS = 30_000
const BATCH = 16
export const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 60_000
/** A ping still failing this long after the decision is dropped (the client can still poll). */
export const GIVE_UP_MS = 10 * 60_000
/** HKDF info: keys made for this never seal anything else. */
const PURPOSE = 'ciba ping v1'

/** What a queued ping holds: the request's two bearer secrets, sealed, and when the request lapses. */
interface PingJob {
  clientId: string
  authReqId: string
  token: string
  /** Epoch seconds; absent in jobs queued before it was kept (they are dropped when their approval is gone). */
  expiresAt?: number
}

/** What a ping needs to read of a request, and of the client. */
export interface PingContext {
  readonly deliveries: DeliveryStore
  readonly log: Logger
  readonly metrics: Metrics
  readonly clock: Clock
  readonly pushes: ClientPushes
  /** The approval as it stands (status `expired` once past its expiry), or null when forgotten. */
  approval(id: string): Promise<ApprovalRecord | null>
  findClient(clientId: string): Promise<ClientConfig | undefined>
}

/** The ping deliveries of one Runtime. */
export class CibaPings {
  readonly #c: PingContext
  readonly #sealer: Sealer
  readonly #runs = new DrainRuns(() => this.#drainOnce(), POLL_MS)

  constructor(c: PingContext, keys: KeySet) {
    this.#c = c
    const material = keys.all.map((k) => Buffer.from(String(k.privateKey.export({ format: 'jwk' }).d), 'base64url'))
    this.#sealer = new Sealer(material.map((m) => sealingKey(m, PURPOSE)))
  }

  /** Look for due pings every POLL_MS (unref'd: it never keeps the process alive). */
  start(): void {
    this.#runs.start()
  }

  async close(): Promise<void> {
    await this.#runs.close()
  }

  /** Deliver what is due now; concurrent calls share one run. Tests call it to deliver without waiting. */
  runOnce(): Promise<void> {
    return this.#runs.run()
  }

  /**
   * Queue the ping of a new request, parked until it expires (a decision makes it due). Called before
   * the approval is opened: a queue that fails leaves no approval the person could still decide.
   */
  async queue(approvalId: string, clientId: string, authReqId: string, token: string, expiresAt: number): Promise<void> {
    const job: PingJob = {
      clientId,
      authReqId: this.#sealer.seal(authReqId, approvalId),
      token: this.#sealer.seal(token, approvalId),
      expiresAt,
    }
    const dropped = await this.#c.deliveries.enqueue(PING_QUEUE, approvalId, JSON.stringify(job), MAX_QUEUED)
    await this.#c.deliveries.retry(PING_QUEUE, approvalId, expiresAt * 1000)
    if (dropped > 0) {
      this.#c.metrics.cibaPings.inc({ outcome: 'dropped' }, dropped)
      this.#c.log.warn({ event: 'ciba_ping_dropped', reason: 'queue full', dropped }, 'CIBA pings dropped: the queue is full')
    }
  }

  /** The approval a queued ping was for was never opened: forget the ping (best effort; else it is dropped at its expiry). */
  async forget(approvalId: string): Promise<void> {
    await this.#c.deliveries.complete(PING_QUEUE, approvalId)
  }

  /** The desk's `onDecided`: a ping client's request was approved or denied here; send its ping now. */
  decided(record: ApprovalRecord): void {
    if (record.kind !== 'ciba' || (record.status !== 'approved' && record.status !== 'denied')) return
    void this.#c.deliveries
      .retry(PING_QUEUE, record.id, this.#c.clock.now())
      .then(() => this.runOnce())
      .catch((err: unknown) => this.#c.log.warn({ event: 'ciba_ping_store_failed', err }, 'a CIBA ping could not be made due; the poll at expiry drops it'))
  }

  async #drainOnce(): Promise<'done' | 'stop'> {
    try {
      let jobs = await this.#c.deliveries.claim(PING_QUEUE, LEASE_MS, BATCH)
      while (jobs.length > 0 && !this.#runs.closed) {
        await Promise.all(jobs.map((j) => this.#deliver(j.id, j.payload, j.attempts)))
        jobs = await this.#c.deliveries.claim(PING_QUEUE, LEASE_MS, BATCH)
      }
      return 'done'
    } catch (err) {
      this.#c.log.warn({ event: 'ciba_ping_store_failed', err }, 'CIBA pings could not be read')
      return 'stop'
    }
  }

  async #deliver(approvalId: string, payload: string, attempts: number): Promise<void> {
    const c = this.#c
    const job = JSON.parse(payload) as PingJob
    const record = await c.approval(approvalId)
    const now = c.clock.now()
    if (record?.status === 'pending') {
      // Claimed before it was parked (or the clock moved): wait for the decision, or the expiry.
      await c.deliveries.retry(PING_QUEUE, approvalId, Math.max(record.expiresAt * 1000, now + FIRST_BACKOFF_MS))
      return
    }
    if (record === null && job.expiresAt !== undefined && now < job.expiresAt * 1000) {
      // Queued before its approval is opened (or the opening failed): wait for it, or the expiry.
      await c.deliveries.retry(PING_QUEUE, approvalId, Math.max(job.expiresAt * 1000, now + FIRST_BACKOFF_MS))
      return
    }
    // Decided and already fetched (`used`) also deserves no ping: the client has its answer.
    if (record === null || (record.status !== 'approved' && record.status !== 'denied')) {
      await c.deliveries.complete(PING_QUEUE, approvalId)
      return
    }
    const outcome = await this.#post(approvalId, job)
    if (outcome.ok) {
      await c.deliveries.complete(PING_QUEUE, approvalId)
      c.metrics.cibaPings.inc({ outcome: 'delivered' })
      c.log.info({ event: 'ciba_ping_delivered', client_id: job.clientId, status: outcome.status }, 'CIBA ping delivered')
      return
    }
    // Parking it when queued and making it due at the decision each counted an attempt: the first failure waits FIRST_BACKOFF_MS.
    const failures = Math.max(0, attempts - 2)
    const nextAt = now + Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** failures)
    const decidedMs = (record.decidedAt ?? 0) * 1000
    if (outcome.permanent || nextAt - decidedMs > GIVE_UP_MS) {
      await c.deliveries.complete(PING_QUEUE, approvalId)
      c.metrics.cibaPings.inc({ outcome: 'dropped' })
      c.log.warn({ event: 'ciba_ping_dropped', client_id: job.clientId, reason: outcome.reason }, 'CIBA ping not delivered; given up')
      return
    }
    await c.deliveries.retry(PING_QUEUE, approvalId, nextAt)
    c.metrics.cibaPings.inc({ outcome: 'failed' })
    c.log.info({ event: 'ciba_ping_failed', client_id: job.clientId, reason: outcome.reason }, 'CIBA ping not delivered; will retry')
  }

  async #post(approvalId: string, job: PingJob): Promise<{ ok: true; status: number } | { ok: false; reason: string; permanent: boolean }> {
    const client = await this.#c.findClient(job.clientId)
    const mode = client?.ciba
    if (client === undefined || mode?.deliveryMode !== 'ping') return { ok: false, reason: 'the client is no longer a ping client', permanent: true }
    const authReqId = this.#sealer.open(job.authReqId, approvalId)
    const token = this.#sealer.open(job.token, approvalId)
    if (!authReqId.ok || !token.ok) return { ok: false, reason: 'the sealed request no longer opens (signing keys changed)', permanent: true }
    return this.#c.pushes.post({
      uri: mode.notificationEndpoint,
      stranger: urlsFromOutside(client),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token.plain}` },
      body: JSON.stringify({ auth_req_id: authReqId.plain }),
    })
  }
}
