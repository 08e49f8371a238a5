/**
 * The drain of a delivery queue for its deliverers (back-channel logout,
 * the Shared Signals transmitter, CIBA pings, approval notifications): one
 * drain at a time (a call while a drain runs joins it and makes it look once
 * more when it ends, so a job queued during a run does not wait for the next
 * poll), a poll every `pollMs` once started, and a close that waits for the
 * run under way.
 */
export class DrainRuns {
  readonly #pass: () => Promise<'done' | 'stop'>
  readonly #pollMs: number
  #running: Promise<void> | null = null
  #again = false
  #timer: NodeJS.Timeout | null = null
  #closed = false

  /** `pass` drains once; `stop` ends the run (the store failed: the next poll tries again). */
  constructor(pass: () => Promise<'done' | 'stop'>, pollMs: number) {
    this.#pass = pass
    this.#pollMs = pollMs
  }

  /** Closed: no run starts, and a pass under way stops between jobs. */
  get closed(): boolean {
    return this.#closed
  }

  /** Look for due jobs every pollMs (unref'd: it never keeps the process alive). */
  start(): void {
    if (this.#timer !== null || this.#closed) return
    this.#timer = setInterval(() => void this.run(), this.#pollMs)
    this.#timer.unref()
  }

  /** Stop polling; resolves when the run under way, if any, has ended. */
  close(): Promise<void> {
    this.#closed = true
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
    return this.#running ?? Promise.resolve()
  }

  /** Drain until nothing is due; concurrent calls share one run. */
  run(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    if (this.#running !== null) {
      this.#again = true
      return this.#running
    }
    this.#running = this.#loop().finally(() => {
      this.#running = null
    })
    return this.#running
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false
      if ((await this.#pass()) === 'stop') return
    } while (this.#again && !this.#closed)
  }
}
