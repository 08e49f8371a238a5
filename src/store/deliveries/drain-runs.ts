/**
 * One drain of a delivery queue at a time, for the queues' deliverers
 * (back-channel logout, the Shared Signals transmitter): a call while a
 * drain runs joins it and makes it look once more when it ends, so a job
 * queued during a run does not wait for the next poll.
 */
export class DrainRuns {
  readonly #pass: () => Promise<'done' | 'stop'>
  readonly #closed: () => boolean
  #running: Promise<void> | null = null
  #again = false

  /** `pass` drains once; `stop` ends the run (the store failed: the next poll tries again). */
  constructor(pass: () => Promise<'done' | 'stop'>, closed: () => boolean) {
    this.#pass = pass
    this.#closed = closed
  }

  /** Drain until nothing is due; concurrent calls share one run. */
  run(): Promise<void> {
    if (this.#closed()) return Promise.resolve()
    if (this.#running !== null) {
      this.#again = true
      return this.#running
    }
    this.#running = this.#loop().finally(() => {
      this.#running = null
    })
    return this.#running
  }

  /** Resolves when the run under way, if any, has ended. */
  settled(): Promise<void> {
    return this.#running ?? Promise.resolve()
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false
      if ((await this.#pass()) === 'stop') return
    } while (this.#again && !this.#closed())
  }
}
