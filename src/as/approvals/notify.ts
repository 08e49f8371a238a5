/**
 * Approval notifications (issue #41, docs/approvals.md "Notifications"): for each new pending approval,
 * a small JSON event is POSTed to the deployer's `notify.url` (the route's `mcp.approvals.notify`, else
 * the top-level `approvals.notify`), so they can push it to the person (chat, phone).
 *
 * - Signed: `Bearward-Signature: t=<epoch s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` (the receiver
 *   checks the MAC and that `t` is recent, so a captured event cannot be replayed later).
 * - Never a token, nor the tool's arguments: the approval's id, kind, client, person, tool, times and page URL.
 * - Queued in the store (`deliveries`, queue `apn`), so the call that opened the approval never waits:
 *   any instance delivers; a failure is retried with doubling backoff (1 s ... 60 s) until GIVE_UP_MS,
 *   then dropped. Every outcome is counted (`bearward_approval_notifications_total{outcome}`) and logged.
 *   The secret stays in the config: the job names its target (a route, or `*` for the top level).
 */
import { createHmac } from 'node:crypto'
import { Agent, request } from 'undici'
import type { Clock } from '../../clock.js'
import type { ApprovalNotifyConfig } from '../../config/validated-config.js'
import { randomToken } from '../../crypto/random.js'
import type { Logger } from '../../log.js'
import type { Metrics } from '../../metrics.js'
import { DrainRuns } from '../../store/deliveries/drain-runs.js'
import type { ApprovalRecord, Store } from '../../store/types.js'

export const NOTIFY_QUEUE = 'apn'
const MAX_QUEUED = 10_000
const POLL_MS = 1000
const LEASE_MS = 30_000
const BATCH = 16
const FETCH_TIMEOUT_MS = 5000
const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 60_000
export const GIVE_UP_MS = 10 * 60_000
/** The header carrying the timestamp and the MAC. */
export const SIGNATURE_HEADER = 'bearward-signature'

/** The target name of the top-level `approvals.notify`. */
export const TOP_LEVEL_TARGET = '*'

interface NotifyJob {
  target: string
  body: string
}

/** The MAC of one event: what a receiver recomputes. */
export function notificationSignature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`
}

/** The event for one new pending approval (what the receiver reads). */
export function notificationEvent(record: ApprovalRecord, pageUrl: string): string {
  const s = record.subject
  return JSON.stringify({
    type: 'approval.requested',
    id: record.id,
    kind: record.kind,
    sub: record.sub,
    client_id: record.clientId,
    ...(s.kind === 'mcp_tool' ? { tool: s.tool } : { binding_message: s.bindingMessage }),
    created_at: record.createdAt,
    expires_at: record.expiresAt,
    url: pageUrl,
  })
}

export interface NotifierDeps {
  readonly store: Pick<Store, 'deliveries'>
  readonly clock: Clock
  readonly log: Logger
  readonly metrics: Metrics
  /** Target name → where and with which secret. */
  readonly targets: ReadonlyMap<string, ApprovalNotifyConfig>
}

export class ApprovalNotifier {
  readonly #d: NotifierDeps
  readonly #agent = new Agent({ keepAliveTimeout: 30_000, connections: 8, headersTimeout: FETCH_TIMEOUT_MS, bodyTimeout: FETCH_TIMEOUT_MS })
  readonly #runs = new DrainRuns(() => this.#drainOnce(), POLL_MS)

  constructor(deps: NotifierDeps) {
    this.#d = deps
  }

  /** Whether `target` has somewhere to notify. */
  has(target: string): boolean {
    return this.#d.targets.has(target)
  }

  start(): void {
    if (this.#d.targets.size > 0) this.#runs.start()
  }

  async close(): Promise<void> {
    await this.#runs.close()
    await this.#agent.close()
  }

  runOnce(): Promise<void> {
    return this.#runs.run()
  }

  /** Queue the event of a new pending approval; never throws (a failure is logged and counted). */
  async queue(target: string, record: ApprovalRecord, pageUrl: string): Promise<void> {
    if (!this.#d.targets.has(target)) return
    try {
      const job: NotifyJob = { target, body: notificationEvent(record, pageUrl) }
      const dropped = await this.#d.store.deliveries.enqueue(NOTIFY_QUEUE, randomToken(), JSON.stringify(job), MAX_QUEUED)
      if (dropped > 0) this.#d.metrics.approvalNotifications.inc({ outcome: 'dropped' }, dropped)
      void this.runOnce()
    } catch (err) {
      this.#d.metrics.approvalNotifications.inc({ outcome: 'dropped' })
      this.#d.log.warn({ event: 'approval_notification_dropped', reason: 'store', err }, 'an approval notification could not be queued')
    }
  }

  async #drainOnce(): Promise<'done' | 'stop'> {
    try {
      let jobs = await this.#d.store.deliveries.claim(NOTIFY_QUEUE, LEASE_MS, BATCH)
      while (jobs.length > 0 && !this.#runs.closed) {
        await Promise.all(jobs.map((j) => this.#deliver(j.id, j.payload, j.attempts, j.queuedAtMs)))
        jobs = await this.#d.store.deliveries.claim(NOTIFY_QUEUE, LEASE_MS, BATCH)
      }
      return 'done'
    } catch (err) {
      this.#d.log.warn({ event: 'approval_notification_store_failed', err }, 'approval notifications could not be read')
      return 'stop'
    }
  }

  async #deliver(id: string, payload: string, attempts: number, queuedAtMs: number): Promise<void> {
    const d = this.#d
    const job = JSON.parse(payload) as NotifyJob
    const target = d.targets.get(job.target)
    const outcome = target === undefined ? { ok: false as const, reason: 'no longer configured', permanent: true } : await this.#post(target, job.body)
    if (outcome.ok) {
      await d.store.deliveries.complete(NOTIFY_QUEUE, id)
      d.metrics.approvalNotifications.inc({ outcome: 'delivered' })
      return
    }
    const nextAt = d.clock.now() + Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** attempts)
    if (outcome.permanent || nextAt - queuedAtMs > GIVE_UP_MS) {
      await d.store.deliveries.complete(NOTIFY_QUEUE, id)
      d.metrics.approvalNotifications.inc({ outcome: 'dropped' })
      d.log.warn(
        { event: 'approval_notification_dropped', reason: outcome.reason, attempts: attempts + 1 },
        'an approval notification was not delivered; given up',
      )
      return
    }
    await d.store.deliveries.retry(NOTIFY_QUEUE, id, nextAt)
    d.metrics.approvalNotifications.inc({ outcome: 'failed' })
    d.log.info(
      { event: 'approval_notification_failed', reason: outcome.reason, attempts: attempts + 1 },
      'an approval notification was not delivered; will retry',
    )
  }

  async #post(target: ApprovalNotifyConfig, body: string): Promise<{ ok: true } | { ok: false; reason: string; permanent: boolean }> {
    const timestamp = Math.floor(this.#d.clock.now() / 1000)
    try {
      const res = await request(target.url, {
        dispatcher: this.#agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: notificationSignature(target.secret, timestamp, body) },
        body,
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      })
      res.body.on('error', () => undefined)
      res.body.destroy()
      if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true }
      return { ok: false, reason: `status ${res.statusCode}`, permanent: false }
    } catch (err) {
      return { ok: false, reason: err instanceof Error ? err.message : 'request failed', permanent: false }
    }
  }
}
