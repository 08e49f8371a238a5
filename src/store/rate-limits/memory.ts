/** Rate-limit counters in memory. */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { HitWindow, RateLimitStore } from './types.js'

export class MemoryRateLimits implements RateLimitStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #windows = new Map<string, HitWindow>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#windows.size
  }

  sweep(nowMs: number): void {
    for (const [k, w] of this.#windows) if (nowMs >= w.resetMs) this.#windows.delete(k)
  }

  async hit(key: string, windowSec: number): Promise<number> {
    this.#s.open()
    const now = this.#s.nowMs()
    const w = this.#windows.get(key)
    if (!w || now >= w.resetMs) {
      this.#windows.set(key, { count: 1, resetMs: now + windowSec * 1000 })
      return 1
    }
    w.count += 1
    return w.count
  }

  async count(key: string): Promise<number> {
    this.#s.open()
    const w = this.#windows.get(key)
    return w && this.#s.nowMs() < w.resetMs ? w.count : 0
  }

  async window(key: string): Promise<HitWindow> {
    this.#s.open()
    const w = this.#windows.get(key)
    return w && this.#s.nowMs() < w.resetMs ? { count: w.count, resetMs: w.resetMs } : { count: 0, resetMs: 0 }
  }

  async unhit(key: string): Promise<void> {
    this.#s.open()
    const w = this.#windows.get(key)
    if (w && this.#s.nowMs() < w.resetMs && w.count > 0) w.count -= 1
  }

  async clear(key: string): Promise<void> {
    this.#s.open()
    this.#windows.delete(key)
  }
}
