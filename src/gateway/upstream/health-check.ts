import type { Pool } from 'undici'
import type { UpstreamPoolConfig } from '../../config/validated-config.js'
import { errorCode } from './failure.js'
import type { TargetHealth } from './target-health.js'

/** Where a check is sent: the target's pool, the Host it is named by and its TLS server name. */
export interface CheckTarget {
  readonly pool: Pool
  readonly host: string
  readonly servername: string | undefined
}

/**
 * Active checks of one target (`upstreams.health.path`): `GET path` every
 * `interval` (the next one `interval` after the last settled, so a slow
 * target is never checked twice at once), bounded by `timeout`. A 2xx or
 * 3xx answer passes; anything else, a timeout or an error fails. The
 * checker runs from the target's first use to its last release
 * (targets.ts): stop() clears its timer and aborts a check in flight.
 */
export class HealthChecker {
  readonly #target: CheckTarget
  readonly #settings: UpstreamPoolConfig['health'] & { path: string }
  readonly #health: TargetHealth
  #timer: NodeJS.Timeout | null = null
  #inFlight: AbortController | null = null
  #stopped = false

  constructor(target: CheckTarget, settings: UpstreamPoolConfig['health'] & { path: string }, health: TargetHealth) {
    this.#target = target
    this.#settings = settings
    this.#health = health
  }

  /** The first check runs at once: a target that is down at start is found within `unhealthy_after` intervals. */
  start(): void {
    void this.#check()
  }

  /** Whether a check or its timer is pending (tests show nothing is left after stop()). */
  get active(): boolean {
    return this.#timer !== null || this.#inFlight !== null
  }

  stop(): void {
    this.#stopped = true
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#inFlight?.abort()
    this.#inFlight = null
  }

  async #check(): Promise<void> {
    this.#timer = null
    if (this.#stopped) return
    const abort = new AbortController()
    this.#inFlight = abort
    const timeout = setTimeout(() => abort.abort(), this.#settings.timeoutMs)
    let outcome: string | null
    try {
      const res = await this.#target.pool.request({
        method: 'GET',
        path: this.#settings.path,
        headers: { host: this.#target.host },
        signal: abort.signal,
        ...(this.#target.servername !== undefined ? { servername: this.#target.servername } : {}),
      } as Parameters<Pool['request']>[0])
      await res.body.dump()
      // dump() settles quietly when the timeout aborts it: a head followed by a body that never ends is a timeout, not a pass.
      if (abort.signal.aborted) throw new Error('timeout')
      outcome = res.statusCode >= 200 && res.statusCode < 400 ? null : `status ${res.statusCode}`
    } catch (err) {
      outcome = abort.signal.aborted ? 'timeout' : errorCode(err)
    } finally {
      clearTimeout(timeout)
    }
    if (this.#stopped) return
    this.#inFlight = null
    if (outcome === null) this.#health.checkPassed()
    else this.#health.checkFailed(outcome)
    this.#timer = setTimeout(() => void this.#check(), this.#settings.intervalMs)
    this.#timer.unref()
  }
}
