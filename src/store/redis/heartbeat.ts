/**
 * A PING on a connection every HEARTBEAT_INTERVAL_MS. A TCP black hole (a cut
 * link that sends no RST) leaves ioredis believing it is connected for
 * minutes; an unanswered PING finds it within interval + deadline.
 */

/** How often each connection is probed with PING. */
export const HEARTBEAT_INTERVAL_MS = 250
/** Most a PING may stay unanswered before the link is declared dead (also capped by the command timeout). */
export const HEARTBEAT_DEADLINE_MS = 750

export interface HeartbeatOptions {
  /** Send one PING. */
  ping: () => Promise<unknown>
  /** Whether a PING may be sent now (the connection is ready, answering and not closing). */
  mayPing: () => boolean
  /** A PING went unanswered for `deadlineMs`: the link is silent. */
  onSilent: (deadlineMs: number) => void
  deadlineMs: number
}

export class Heartbeat {
  readonly #o: HeartbeatOptions
  /** Bumped by reset(): a reply to a PING sent before it does not count. */
  #generation = 0
  /** performance.now() when the unanswered PING was sent, or null. */
  #pingSentAt: number | null = null
  /** Fires when the PING in flight reaches its deadline unanswered. */
  #pingDeadline: NodeJS.Timeout | null = null
  readonly #timer: NodeJS.Timeout

  constructor(options: HeartbeatOptions) {
    this.#o = options
    this.#timer = setInterval(() => this.#beat(), HEARTBEAT_INTERVAL_MS)
    this.#timer.unref()
  }

  /** The connection was made anew or lost: the PING in flight, if any, no longer counts. */
  reset(): void {
    this.#generation++
    this.#pingSentAt = null
    this.#clearDeadline()
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#clearDeadline()
  }

  /**
   * One tick: send a PING unless one is in flight. Each PING has its own
   * deadline timer, so a silent link is found the deadline after the first
   * unanswered PING (at most interval + deadline after the silence began),
   * not at the first tick after it, which could be a whole interval later.
   */
  #beat(): void {
    if (!this.#o.mayPing() || this.#pingSentAt !== null) return
    const generation = this.#generation
    const sentAt = performance.now()
    this.#pingSentAt = sentAt
    this.#pingDeadline = setTimeout(() => this.#pastDeadline(sentAt), this.#o.deadlineMs)
    this.#pingDeadline.unref()
    this.#o.ping().then(
      () => {
        if (this.#generation !== generation || this.#pingSentAt !== sentAt) return
        this.#pingSentAt = null
        this.#clearDeadline()
      },
      () => undefined, // a failed PING is judged by the deadline, or by the close that caused it
    )
  }

  #pastDeadline(sentAt: number): void {
    // Let pending socket reads run first (setImmediate comes after the poll
    // phase): a reply that was only held up by a busy event loop must not
    // count as a dead link.
    setImmediate(() => {
      if (this.#pingSentAt !== sentAt || !this.#o.mayPing()) return
      this.#pingSentAt = null
      this.#pingDeadline = null
      this.#o.onSilent(this.#o.deadlineMs)
    })
  }

  #clearDeadline(): void {
    if (this.#pingDeadline !== null) clearTimeout(this.#pingDeadline)
    this.#pingDeadline = null
  }
}
