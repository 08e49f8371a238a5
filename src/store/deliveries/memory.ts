/** Queued deliveries in memory: one process delivers them all. */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { DeliveryStore, QueuedDelivery } from './types.js'

interface Job {
  job: QueuedDelivery
  dueMs: number
}

export class MemoryDeliveries implements DeliveryStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #queues = new Map<string, Map<string, Job>>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    let n = 0
    for (const q of this.#queues.values()) n += q.size
    return n
  }

  /** Jobs end when delivered or given up (the deliverer decides); nothing expires by itself. */
  sweep(): void {
    for (const [name, q] of this.#queues) if (q.size === 0) this.#queues.delete(name)
  }

  async enqueue(queue: string, id: string, payload: string, maxQueued: number): Promise<number> {
    this.#s.open()
    let q = this.#queues.get(queue)
    if (q === undefined) {
      q = new Map()
      this.#queues.set(queue, q)
    }
    const now = this.#s.nowMs()
    q.set(id, { job: { id, payload, attempts: 0, queuedAtMs: now }, dueMs: now })
    const over = q.size - maxQueued
    if (over <= 0) return 0
    for (const [oldId] of [...q].sort((a, b) => a[1].dueMs - b[1].dueMs).slice(0, over)) q.delete(oldId)
    return over
  }

  async claim(queue: string, leaseMs: number, max: number): Promise<QueuedDelivery[]> {
    this.#s.open()
    const q = this.#queues.get(queue)
    if (q === undefined) return []
    const now = this.#s.nowMs()
    const due = [...q.values()]
      .filter((j) => j.dueMs <= now)
      .sort((a, b) => a.dueMs - b.dueMs)
      .slice(0, max)
    for (const j of due) j.dueMs = now + leaseMs
    return due.map((j) => ({ ...j.job }))
  }

  async complete(queue: string, id: string): Promise<void> {
    this.#s.open()
    this.#queues.get(queue)?.delete(id)
  }

  async retry(queue: string, id: string, atMs: number): Promise<void> {
    this.#s.open()
    const j = this.#queues.get(queue)?.get(id)
    if (j === undefined) return
    j.job.attempts += 1
    j.dueMs = atMs
  }
}
