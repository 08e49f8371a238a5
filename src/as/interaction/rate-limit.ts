import { hashToken } from '../../store/hash.js'
import type { AsContext } from '../context.js'

/**
 * Failure counters in fixed windows (`rate_limit.login_max_failures` per
 * `rate_limit.window`), kept in the store so every instance shares them.
 */
export class FailureLimit {
  readonly #as: AsContext
  readonly #keys: readonly string[]

  constructor(as: AsContext, keys: readonly string[]) {
    this.#as = as
    this.#keys = keys
  }

  /** True when any key has reached the limit: refuse before checking anything. */
  async blocked(): Promise<boolean> {
    const counts = await Promise.all(this.#keys.map((k) => this.#as.store.hits(k)))
    return counts.some((n) => n >= this.#as.as.rateLimit.loginMaxFailures)
  }

  async fail(): Promise<void> {
    await Promise.all(this.#keys.map((k) => this.#as.store.hit(k, this.#as.as.rateLimit.windowSec)))
  }

  /** Retry-After for a refusal: at most one window. */
  retryAfter(): Record<string, string> {
    return { 'retry-after': String(this.#as.as.rateLimit.windowSec) }
  }
}

/**
 * Failed logins, counted per username and per client address (OWASP ASVS
 * 2.2.1): the per-username count slows guessing one account from many
 * addresses, the per-address count slows trying many accounts from one.
 * Unknown usernames are counted like known ones, so a refusal never tells
 * which exist. The username is hashed into the key (bounded length, no
 * personal data in key names).
 */
export function loginLimit(as: AsContext, address: string, username: string): FailureLimit {
  return new FailureLimit(as, [`login:ip:${address}`, `login:user:${hashToken(username.toLowerCase())}`])
}

/** RFC 8628 5.1: wrong user codes, counted per client address, so codes cannot be guessed. */
export function userCodeLimit(as: AsContext, address: string): FailureLimit {
  return new FailureLimit(as, [`device:ip:${address}`])
}

