/**
 * Queued outgoing deliveries (back-channel logout tokens; any other push a receiver must get once):
 * any instance may deliver a job, and each job is handed to one instance at a time (a lease), so
 * it is delivered once while instances live; a job whose instance died is handed out again when
 * its lease ends.
 */

/** A job as the store hands it out. */
export interface QueuedDelivery {
  id: string
  /** What to deliver, as the enqueuer wrote it (JSON text; the store never reads it). */
  payload: string
  /** Deliveries tried so far (retry raises it). */
  attempts: number
  /** Epoch ms the job was queued: the deliverer gives up after a bounded time from it. */
  queuedAtMs: number
}

export interface DeliveryStore {
  /**
   * Queue a job, due now. A queue holds at most `maxQueued` jobs: beyond it the oldest queued
   * (by due time) are dropped; returns how many were dropped.
   */
  enqueue(queue: string, id: string, payload: string, maxQueued: number): Promise<number>
  /**
   * Atomic: up to `max` jobs that are due, each leased for `leaseMs` (not handed out again before
   * the lease ends, unless retried or completed). Of concurrent claims, each job goes to one.
   */
  claim(queue: string, leaseMs: number, max: number): Promise<QueuedDelivery[]>
  /** The job was delivered (or given up): forget it. */
  complete(queue: string, id: string): Promise<void>
  /** Try again at `atMs` (epoch ms), attempts + 1. No effect on a job no longer queued. */
  retry(queue: string, id: string, atMs: number): Promise<void>
}
