/** Known browsers in memory. */
import { type Expiring, live, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { KnownBrowserStore } from './types.js'

export class MemoryKnownBrowsers implements KnownBrowserStore, MemoryFamily {
  readonly #s: MemoryScope
  /** Cookie hash → the sub it was issued for, and when. */
  readonly #browsers = new Map<string, Expiring<{ sub: string; atMs: number }>>()

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
    const nowMs = this.#s.nowMs()
    this.#browsers.set(tokenHash, { value: { sub, atMs: nowMs }, expMs: nowMs + ttlSec * 1000 })
  }

  async get(tokenHash: string): Promise<string | null> {
    return (await this.remembered(tokenHash))?.sub ?? null
  }

  async remembered(tokenHash: string): Promise<{ sub: string; atMs: number } | null> {
    this.#s.open()
    return live(this.#browsers, tokenHash, this.#s.nowMs())
  }
}
