/**
 * Queued deliveries on Redis.
 *
 * Keys: `p dq:{queue}` sorted set (job id, score = due ms; a claimed job's score is the end of its
 * lease) and `p dqj:{queue}` hash (job id → JSON {id, payload, attempts, queuedAtMs}). Both carry
 * the queue's tag, so every transition is one script (Cluster-safe).
 */
import type { RedisConnection } from '../redis/connection.js'
import { list, num, str } from '../redis/replies.js'
import { CLAIM_DELIVERIES, ENQUEUE_DELIVERY, QUEUE_KEEP_MS, RETRY_DELIVERY } from './scripts.js'
import type { DeliveryStore, QueuedDelivery } from './types.js'

export class RedisDeliveries implements DeliveryStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #keys(queue: string): string[] {
    return [this.#r.key('dq', queue), this.#r.key('dqj', queue)]
  }

  async enqueue(queue: string, id: string, payload: string, maxQueued: number): Promise<number> {
    const r = this.#r
    const now = r.clock.now()
    const job: QueuedDelivery = { id, payload, attempts: 0, queuedAtMs: now }
    return num(await r.do((c) => r.eval(c, ENQUEUE_DELIVERY, this.#keys(queue), [id, JSON.stringify(job), now, maxQueued, QUEUE_KEEP_MS])))
  }

  async claim(queue: string, leaseMs: number, max: number): Promise<QueuedDelivery[]> {
    const r = this.#r
    const reply = list(await r.do((c) => r.eval(c, CLAIM_DELIVERIES, this.#keys(queue), [r.clock.now(), leaseMs, max])))
    return reply.map((raw) => {
      const j = JSON.parse(str(raw)) as QueuedDelivery
      return { id: j.id, payload: j.payload, attempts: Number(j.attempts), queuedAtMs: Number(j.queuedAtMs) }
    })
  }

  async complete(queue: string, id: string): Promise<void> {
    const [due, jobs] = this.#keys(queue) as [string, string]
    await this.#r.do(async (c) => {
      await c.zrem(due, id)
      await c.hdel(jobs, id)
    })
  }

  async retry(queue: string, id: string, atMs: number): Promise<void> {
    const r = this.#r
    await r.do((c) => r.eval(c, RETRY_DELIVERY, this.#keys(queue), [id, atMs]))
  }
}
