import type { Pool } from 'undici'
import type { Logger } from '../../log.js'

/**
 * Counts the exchanges in flight and drains the pools when the proxy is
 * retired (a reload swapped its Runtime out, or the process stops).
 */
export class Drain {
  readonly #pools: readonly Pool[]
  readonly #log: Logger
  #inFlight = 0
  #idle: (() => void) | null = null

  constructor(pools: readonly Pool[], log: Logger) {
    this.#pools = pools
    this.#log = log
  }

  /** Exchanges started and not yet closed (what close() waits for). */
  get inFlight(): number {
    return this.#inFlight
  }

  started(): void {
    this.#inFlight++
  }

  /** Called once per started exchange, when its response closed. */
  readonly done = (): void => {
    this.#inFlight--
    if (this.#inFlight === 0 && this.#idle !== null) this.#idle()
  }

  /** Wait for the exchanges in flight, then close every pool; destroy them at the deadline. */
  async close(timeoutMs: number): Promise<void> {
    // Bounded: an exchange that never settles (a stuck upstream) must not
    // keep a retired runtime, or a shutting-down process, alive forever.
    const deadline = Date.now() + timeoutMs
    const until = (ms: number): Promise<void> =>
      new Promise((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, ms))
        timer.unref()
      })
    if (this.#inFlight > 0) {
      await Promise.race([new Promise<void>((resolve) => (this.#idle = resolve)), until(deadline - Date.now())])
    }
    const closed = Promise.all(this.#pools.map((pool) => pool.close())).then(() => true)
    const inTime = await Promise.race([closed, until(deadline - Date.now()).then(() => false)])
    if (!inTime) {
      this.#log.warn({ pools: this.#pools.length, in_flight: this.#inFlight }, 'upstream pools did not drain in time; destroying them')
      await Promise.all(this.#pools.map((pool) => pool.destroy()))
    }
    this.#log.debug({ pools: this.#pools.length }, 'upstream pools closed')
  }
}
