/** Authorization codes in memory. */
import { copy } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { CodeRecord, CodeStore, TakeCodeResult } from './types.js'

interface CodeEntry {
  record: CodeRecord
  used: boolean
  grantId: string | null
  /** Epoch ms after which neither the code nor its Used tombstone exists. */
  deadlineMs: number
}

export class MemoryCodes implements CodeStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #codes = new Map<string, CodeEntry>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#codes.size
  }

  sweep(nowMs: number): void {
    for (const [k, e] of this.#codes) if (nowMs >= e.deadlineMs) this.#codes.delete(k)
  }

  async put(codeHash: string, record: CodeRecord, ttlSec: number): Promise<void> {
    this.#s.open()
    const deadlineMs = Math.max(this.#s.nowMs() + ttlSec * 1000, record.expiresAt * 1000)
    this.#codes.set(codeHash, { record: copy(record), used: false, grantId: null, deadlineMs })
  }

  async take(codeHash: string): Promise<TakeCodeResult> {
    this.#s.open()
    const e = this.#live(codeHash)
    if (!e) return { status: 'missing' }
    if (e.used) return { status: 'used', record: copy(e.record), grantId: e.grantId }
    if (this.#s.nowMs() >= e.record.expiresAt * 1000) return { status: 'missing' }
    e.used = true
    return { status: 'taken', record: copy(e.record) }
  }

  async linkGrant(codeHash: string, grantId: string): Promise<void> {
    this.#s.open()
    const e = this.#live(codeHash)
    if (e?.used) e.grantId = grantId
  }

  #live(codeHash: string): CodeEntry | null {
    const e = this.#codes.get(codeHash)
    if (!e) return null
    if (this.#s.nowMs() >= e.deadlineMs) {
      this.#codes.delete(codeHash)
      return null
    }
    return e
  }
}
