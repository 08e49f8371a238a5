/**
 * What every memory family shares: the injected clock and whether the store
 * was closed (a closed store answers like an unreachable one).
 */
import type { Clock } from '../../clock.js'
import { StoreUnavailableError } from '../../errors.js'

export class MemoryScope {
  readonly clock: Clock
  #closed = false

  constructor(clock: Clock) {
    this.clock = clock
  }

  nowMs(): number {
    return this.clock.now()
  }

  nowSec(): number {
    return Math.floor(this.clock.now() / 1000)
  }

  /** Every method goes through here: a closed store answers like an unreachable one. */
  open(): void {
    if (this.#closed) throw new StoreUnavailableError('store closed')
  }

  close(): void {
    this.#closed = true
  }
}

/** A memory family: its entries can be counted and the expired ones dropped. */
export interface MemoryFamily {
  /** Entries held, expired ones included until swept. */
  readonly size: number
  /** Drop every entry whose time has passed at `nowMs`. */
  sweep(nowMs: number): void
}
