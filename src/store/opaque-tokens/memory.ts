/** Opaque access tokens in memory. */
import { copy } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { OpaqueTokenRecord, OpaqueTokenStore } from './types.js'

export class MemoryOpaqueTokens implements OpaqueTokenStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #tokens = new Map<string, OpaqueTokenRecord>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#tokens.size
  }

  sweep(nowMs: number): void {
    for (const [k, r] of this.#tokens) if (nowMs >= r.exp * 1000) this.#tokens.delete(k)
  }

  async put(tokenHash: string, record: OpaqueTokenRecord): Promise<void> {
    this.#s.open()
    this.#tokens.set(tokenHash, copy(record))
  }

  async get(tokenHash: string): Promise<OpaqueTokenRecord | null> {
    this.#s.open()
    const r = this.#live(tokenHash)
    return r ? copy(r) : null
  }

  async delete(tokenHash: string): Promise<boolean> {
    this.#s.open()
    const r = this.#live(tokenHash)
    this.#tokens.delete(tokenHash)
    return r !== null
  }

  #live(tokenHash: string): OpaqueTokenRecord | null {
    const r = this.#tokens.get(tokenHash)
    if (!r) return null
    if (this.#s.nowMs() >= r.exp * 1000) {
      this.#tokens.delete(tokenHash)
      return null
    }
    return r
  }
}
