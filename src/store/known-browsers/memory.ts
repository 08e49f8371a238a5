/** Known browsers in memory. */
import { type Expiring, live, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { KnownBrowserStore } from './types.js'

export class MemoryKnownBrowsers implements KnownBrowserStore, MemoryFamily {
  readonly #s: MemoryScope
  /** Cookie hash → the sub it was issued for. */
  readonly #browsers = new Map<string, Expiring<string>>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#browsers.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#browsers, nowMs)
  }

  async put(tokenHash: string, sub: string, ttlSec: number): Promise<void> {
    this.#s.open()
    this.#browsers.set(tokenHash, { value: sub, expMs: this.#s.nowMs() + ttlSec * 1000 })
  }

  async get(tokenHash: string): Promise<string | null> {
    this.#s.open()
    return live(this.#browsers, tokenHash, this.#s.nowMs())
  }
}
