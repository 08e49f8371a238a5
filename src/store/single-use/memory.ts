/** Single-use values in memory. */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { SingleUseStore } from './types.js'

export class MemorySingleUse implements SingleUseStore, MemoryFamily {
  readonly #s: MemoryScope
  /** Keys → epoch ms until which they count as used. */
  readonly #used = new Map<string, number>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#used.size
  }

  sweep(nowMs: number): void {
    for (const [k, until] of this.#used) if (nowMs >= until) this.#used.delete(k)
  }

  async use(key: string, ttlSec: number): Promise<boolean> {
    this.#s.open()
    const now = this.#s.nowMs()
    const until = this.#used.get(key)
    if (until !== undefined && now < until) return false
    this.#used.set(key, now + ttlSec * 1000)
    return true
  }
}
