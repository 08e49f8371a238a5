/**
 * Push delivery (RFC 8935) of bearward's Security Event Tokens to each
 * receiver's `endpoint_url`, through the store's queued deliveries (the
 * family back-channel logout uses): any instance delivers, each job leased to
 * one instance at a time.
 *
 * - One queue per receiver (`ssf:<hash of its client id>`), holding at most
 *   `signals.transmitter.queue.max` events: a receiver that is down never
 *   fills the store; past the bound the oldest are dropped, counted
 *   (`bearward_ssf_events_total{outcome="dropped"}`) and logged.
 * - A failure (no answer, 5xx, 429, any status but 2xx or 400) is retried with
 *   doubling backoff (1 s ... 60 s apart) for GIVE_UP_MS. A 400 is the
 *   receiver refusing that SET (RFC 8935 2.4 `err`): the same SET would be
 *   refused again, so it is dropped and its `err` logged.
 * - Every receiver URL is a client's choice, fetched under the
 *   metadata-document address rules (src/http/public-address.ts: global
 *   unicast only, never this host) unless its host is in `allow_hosts`; a
 *   refused address is dropped at once, not retried.
 * - A paused stream keeps its queue (delivered when enabled again); a
 *   disabled or deleted one drops what reaches the head of it.
 * - No redirect is followed; the answer's body is read up to 4 KiB (the `err`).
 */
import { DrainRuns } from '../../store/deliveries/drain-runs.js'
import { Agent, request } from 'undici'
import type { Clock } from '../../clock.js'
import type { SignalTransmitterOutConfig } from '../../config/validated-config.js'
import { randomToken } from '../../crypto/random.js'
import { NonPublicAddressError, PublicAddresses } from '../../http/public-address.js'
import type { KeySet } from '../../keys/keyset.js'
import type { Logger } from '../../log.js'
import type { Metrics } from '../../metrics.js'
import { hashToken } from '../../store/hash.js'
import type { Store } from '../../store/types.js'
import { type OutgoingEvent, signSet } from './events.js'
import { parseStored } from './streams.js'

/** How often every instance looks for due events (the queuing instance starts at once). */
export const POLL_MS = 1000
const LEASE_MS = 30_000
const BATCH = 16
export const FETCH_TIMEOUT_MS = 5000
const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 60_000
/** A SET still undelivered this long after it was queued is dropped: by then its news is stale. */
export const GIVE_UP_MS = 24 * 3_600_000
/** How long a paused stream's head waits before it is looked at again. */
const PAUSED_RECHECK_MS = 5000
/** The most of a receiver's answer read (its RFC 8935 `err`). */
const MAX_ANSWER_BYTES = 4096

/** What a queued job says: the SET is signed at each attempt, with the job's id as `jti`. */
interface SetJob {
  clientId: string
  event: OutgoingEvent
}

type Outcome = { ok: true; status: number } | { ok: false; reason: string; permanent: boolean } | { ok: 'wait' }

/** The delay before retry `attempts + 1`. */
function backoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** attempts)
}

/** The store queue of one receiver's events. */
export function receiverQueue(clientId: string): string {
  return `ssf:${hashToken(clientId).slice(0, 32)}`
}

export interface TransmitterContext {
  readonly store: Store
  readonly log: Logger
  readonly metrics: Metrics
  readonly clock: Clock
  readonly keys: KeySet
  readonly issuer: string
}

export class SetDelivery {
  readonly #as: TransmitterContext
  readonly #config: SignalTransmitterOutConfig
  readonly #agent: Agent
  readonly #runs = new DrainRuns(() => this.#drainOnce(), POLL_MS)

  constructor(as: TransmitterContext, config: SignalTransmitterOutConfig) {
    this.#as = as
    this.#config = config
    // The address check lives in the connector: what is checked is what is connected to.
    const addresses = new PublicAddresses({ allowHosts: config.allowHosts })
    this.#agent = new Agent({
      connect: addresses.connector({ timeout: FETCH_TIMEOUT_MS }),
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
      connections: 8,
    })
  }

  start(): void {
    this.#runs.start()
  }

  async close(): Promise<void> {
    await this.#runs.close()
    await this.#agent.close()
  }

  /** Queue one event for one receiver; the oldest beyond the bound are dropped, counted and logged. Then deliver. */
  async queue(clientId: string, event: OutgoingEvent): Promise<void> {
    const job: SetJob = { clientId, event }
    const dropped = await this.#as.store.deliveries.enqueue(receiverQueue(clientId), randomToken(), JSON.stringify(job), this.#config.queueMax)
    this.#as.metrics.ssfEvents.inc({ outcome: 'queued' })
    if (dropped > 0) {
      this.#as.metrics.ssfEvents.inc({ outcome: 'dropped' }, dropped)
      this.#as.log.warn(
        { event: 'ssf_event_dropped', client_id: clientId, reason: 'queue full', dropped, queue_max: this.#config.queueMax },
        "security events dropped: the receiver's queue is full",
      )
    }
    void this.runOnce()
  }

  /**
   * Forget what waits for a receiver whose stream was deleted (the loop reads only the queues of
   * streams that exist, so it would otherwise wait in the store); returns how many were dropped.
   */
  async forget(clientId: string): Promise<number> {
    const queue = receiverQueue(clientId)
    let dropped = 0
    for (;;) {
      const jobs = await this.#as.store.deliveries.claim(queue, LEASE_MS, 100)
      if (jobs.length === 0) break
      for (const j of jobs) await this.#as.store.deliveries.complete(queue, j.id)
      dropped += jobs.length
    }
    if (dropped > 0) this.#as.metrics.ssfEvents.inc({ outcome: 'dropped' }, dropped)
    return dropped
  }

  /** Deliver what is due now, on every receiver's queue; concurrent calls share one run. Tests call it to deliver without waiting. */
  runOnce(): Promise<void> {
    return this.#runs.run()
  }

  async #drainOnce(): Promise<'done' | 'stop'> {
    const store = this.#as.store
    try {
      for (const clientId of await store.signals.listStreams()) {
        const queue = receiverQueue(clientId)
        let jobs = await store.deliveries.claim(queue, LEASE_MS, BATCH)
        // One receiver's jobs in order (oldest first): a receiver sees events as they happened.
        while (jobs.length > 0 && !this.#runs.closed) {
          for (const j of jobs) await this.#deliver(queue, j.id, j.payload, j.attempts, j.queuedAtMs)
          jobs = await store.deliveries.claim(queue, LEASE_MS, BATCH)
        }
      }
      return 'done'
    } catch (err) {
      this.#as.log.warn({ event: 'ssf_store_failed', err }, 'security event deliveries could not be read')
      return 'stop'
    }
  }

  async #deliver(queue: string, id: string, payload: string, attempts: number, queuedAtMs: number): Promise<void> {
    const as = this.#as
    const job = JSON.parse(payload) as SetJob
    const outcome = await this.#post(id, job)
    if (outcome.ok === 'wait') {
      await as.store.deliveries.retry(queue, id, as.clock.now() + PAUSED_RECHECK_MS)
      return
    }
    if (outcome.ok) {
      await as.store.deliveries.complete(queue, id)
      as.metrics.ssfEvents.inc({ outcome: 'delivered' })
      as.log.info(
        { event: 'ssf_event_delivered', client_id: job.clientId, type: job.event.type, status: outcome.status, attempts: attempts + 1 },
        'security event delivered',
      )
      return
    }
    const nextAt = as.clock.now() + backoffMs(attempts)
    if (outcome.permanent || nextAt - queuedAtMs > GIVE_UP_MS) {
      await as.store.deliveries.complete(queue, id)
      as.metrics.ssfEvents.inc({ outcome: 'dropped' })
      as.log.warn(
        { event: 'ssf_event_dropped', client_id: job.clientId, type: job.event.type, reason: outcome.reason, attempts: attempts + 1 },
        'security event not delivered; given up',
      )
      return
    }
    await as.store.deliveries.retry(queue, id, nextAt)
    as.metrics.ssfEvents.inc({ outcome: 'failed' })
    as.log.info(
      { event: 'ssf_event_failed', client_id: job.clientId, type: job.event.type, reason: outcome.reason, attempts: attempts + 1 },
      'security event not delivered; will retry',
    )
  }

  async #post(jti: string, job: SetJob): Promise<Outcome> {
    const stream = parseStored(await this.#as.store.signals.getStream(job.clientId))
    if (stream === null) return { ok: false, reason: 'the receiver has no stream', permanent: true }
    if (stream.status === 'disabled') return { ok: false, reason: 'the stream is disabled', permanent: true }
    if (stream.status === 'paused') return { ok: 'wait' }
    const set = await signSet(this.#as, job.clientId, jti, job.event)
    try {
      const res = await request(stream.endpointUrl, {
        dispatcher: this.#agent,
        method: 'POST',
        headers: {
          'content-type': 'application/secevent+jwt',
          accept: 'application/json',
          ...(stream.authorizationHeader === null ? {} : { authorization: stream.authorizationHeader }),
        },
        body: set,
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      })
      if (res.statusCode >= 200 && res.statusCode < 300) {
        res.body.on('error', () => undefined)
        res.body.destroy()
        return { ok: true, status: res.statusCode }
      }
      if (res.statusCode === 400) return { ok: false, reason: `refused: ${await answerErr(res.body)}`, permanent: true }
      res.body.on('error', () => undefined)
      res.body.destroy()
      return { ok: false, reason: `status ${res.statusCode}`, permanent: false }
    } catch (err) {
      if (err instanceof NonPublicAddressError || (err instanceof Error && err.cause instanceof NonPublicAddressError)) {
        return { ok: false, reason: 'address refused: not a public address', permanent: true }
      }
      return { ok: false, reason: err instanceof Error ? err.message : 'request failed', permanent: false }
    }
  }
}

/** The RFC 8935 2.4 `err` of a 400 answer (at most MAX_ANSWER_BYTES read), or `unknown`. */
async function answerErr(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of body) {
      chunks.push(chunk)
      size += chunk.length
      if (size >= MAX_ANSWER_BYTES) break
    }
  } catch {
    return 'unknown'
  } finally {
    body.destroy()
  }
  try {
    const err = (JSON.parse(Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8')) as { err?: unknown }).err
    return typeof err === 'string' && /^[a-z_]{1,64}$/.test(err) ? err : 'unknown'
  } catch {
    return 'unknown'
  }
}
