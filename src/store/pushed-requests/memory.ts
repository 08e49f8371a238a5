/** Authorization requests held by reference, in memory. */
import { copy, type Expiring, live, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { PushedRequestRecord, PushedRequestStore } from './types.js'

export class MemoryPushedRequests implements PushedRequestStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #records = new Map<string, Expiring<PushedRequestRecord>>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#records.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#records, nowMs)
  }

  async put(key: string, record: PushedRequestRecord, ttlSec: number): Promise<void> {
    this.#s.open()
    this.#records.set(key, { value: copy(record), expMs: this.#s.nowMs() + ttlSec * 1000 })
  }

  async get(key: string): Promise<PushedRequestRecord | null> {
    this.#s.open()
    const r = live(this.#records, key, this.#s.nowMs())
    return r ? copy(r) : null
  }

  async take(key: string): Promise<PushedRequestRecord | null> {
    this.#s.open()
    const r = live(this.#records, key, this.#s.nowMs())
    this.#records.delete(key)
    return r ? copy(r) : null
  }
}
