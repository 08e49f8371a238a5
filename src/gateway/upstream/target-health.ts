import type { Clock } from '../../clock.js'
import type { UpstreamPoolConfig } from '../../config/validated-config.js'

/** What a change of a target's health is reported to: the gauge and the one log line per change. */
export type HealthListener = (healthy: boolean, reason: string) => void

/**
 * One pool target's health (docs/traffic.md, "Upstream pools"). Two
 * sources feed it:
 * - passive: a request that could not connect (refused, reset or timed out
 *   before a byte was written) is a failure, any answer a success;
 * - active (`health.path`): each check passes or fails.
 * `unhealthy_after` consecutive failures of either kind eject the target.
 * Without active checks an ejected target is tried again `interval` after
 * its ejection (the next failure ejects it again at once, an answer returns
 * it); with them, only `healthy_after` consecutive passing checks return it.
 *
 * Time is the Clock's, so the rest is measured, not slept through.
 */
export class TargetHealth {
  readonly #clock: Clock
  readonly #settings: UpstreamPoolConfig['health']
  readonly #listener: HealthListener
  #healthy = true
  #failures = 0
  #passes = 0
  /** When an ejected target without active checks may be tried again. */
  #retryAt = 0
  /** Requests sent to the target and not settled (least_request reads it). */
  inFlight = 0

  constructor(clock: Clock, settings: UpstreamPoolConfig['health'], listener: HealthListener) {
    this.#clock = clock
    this.#settings = settings
    this.#listener = listener
  }

  get healthy(): boolean {
    return this.#healthy
  }

  /** Whether a request may be sent here: healthy, or ejected passively long enough ago to be tried. */
  eligible(): boolean {
    return this.#healthy || (this.#settings.path === null && this.#clock.now() >= this.#retryAt)
  }

  /** A connection could not be made (passive). */
  connectFailed(code: string): void {
    this.#fail(`connect: ${code}`)
  }

  /** The target answered a request (passive): its connections work. */
  answered(): void {
    this.#failures = 0
    // With active checks, the checks alone decide the return: one answer
    // while in panic mode says little about a target the checks fail.
    if (!this.#healthy && this.#settings.path === null) this.#set(true, 'answered a request')
  }

  /** An active check passed. */
  checkPassed(): void {
    this.#failures = 0
    if (this.#healthy) return
    this.#passes++
    if (this.#passes >= this.#settings.healthyAfter) this.#set(true, `${this.#passes} checks passed`)
  }

  /** An active check failed (`reason`: status or error code). */
  checkFailed(reason: string): void {
    this.#fail(`check: ${reason}`)
  }

  #fail(reason: string): void {
    this.#passes = 0
    this.#failures++
    if (this.#healthy) {
      if (this.#failures >= this.#settings.unhealthyAfter) {
        this.#retryAt = this.#clock.now() + this.#settings.intervalMs
        this.#set(false, `${this.#failures} consecutive failures, last ${reason}`)
      }
      return
    }
    // Tried again after its rest and failed: another rest, no new log line.
    this.#retryAt = this.#clock.now() + this.#settings.intervalMs
  }

  #set(healthy: boolean, reason: string): void {
    this.#healthy = healthy
    this.#failures = 0
    this.#passes = 0
    this.#listener(healthy, reason)
  }
}
