import { addressBucket } from '../http/address-bucket.js'
import { hashToken } from '../store/hash.js'
import type { AsContext } from './context.js'

/**
 * Failure throttling for everything that checks a secret a stranger can
 * guess: passwords at /login, user codes at /device, client secrets at the
 * back-channel endpoints. Counters are fixed windows of `rate_limit.window`
 * in the store, so every instance shares them.
 *
 * The rule behind the shapes below (ASVS 5.0 6.1, CWE-645): a counter that
 * anyone can fill must never refuse someone else's correct secret. So
 * lockouts are keyed by what the guesser controls — their address (an IPv6
 * one by its network, see `addressBucket` in http/address-bucket.ts), or the pair (name,
 * address) — and never by a name alone. Guessing one name from
 * many addresses is slowed by a bounded, doubling wait instead (see
 * {@link LoginThrottle}), which a browser that signed in as that user before
 * does not share.
 */

/** The bucket of `address` by the configured `rate_limit.ipv6_prefix`. */
function bucketOf(as: AsContext, address: string): string {
  return addressBucket(address, as.as.rateLimit.ipv6Prefix)
}

/** `45 seconds`, `1 minute`, `13 minutes`: a wait as a person reads it (rounded up), for the pages that say how long. */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`
  const minutes = Math.ceil(seconds / 60)
  return minutes === 1 ? '1 minute' : `${minutes} minutes`
}

/** One fixed-window failure counter and how many failures it allows. */
export interface FailureCounter {
  readonly key: string
  readonly max: number
}

/** Whole seconds from now until `resetMs`, at least 1 (Retry-After is never 0 for a refusal). */
function secondsUntil(as: AsContext, resetMs: number): number {
  return Math.max(1, Math.ceil((resetMs - as.clock.now()) / 1000))
}

/** A set of counters that refuse, for the rest of their window, once any reaches its limit. */
export class FailureLimit {
  readonly #as: AsContext
  readonly #counters: readonly FailureCounter[]

  constructor(as: AsContext, counters: readonly FailureCounter[]) {
    this.#as = as
    this.#counters = counters
  }

  /**
   * Seconds until every counter at its limit has reset (the honest
   * Retry-After); 0 when none is at its limit. Checked before the secret,
   * so a locked guesser learns nothing and costs no hash verification.
   */
  async lockedFor(): Promise<number> {
    const windows = await Promise.all(this.#counters.map((c) => this.#as.store.rateLimits.window(c.key)))
    let seconds = 0
    windows.forEach((w, i) => {
      if (w.count >= (this.#counters[i]?.max ?? Infinity)) seconds = Math.max(seconds, secondsUntil(this.#as, w.resetMs))
    })
    return seconds
  }

  async fail(): Promise<void> {
    await Promise.all(this.#counters.map((c) => this.#as.store.rateLimits.hit(c.key, this.#as.as.rateLimit.windowSec)))
  }

  /** Forget these counters: a success proves the secret to whoever they name. */
  async clear(): Promise<void> {
    await Promise.all(this.#counters.map((c) => this.#as.store.rateLimits.clear(c.key)))
  }
}

/** Counter keys never hold a name as typed: hashed, so key length is bounded and no personal data is stored in names. */
function nameKey(name: string): string {
  return hashToken(name.toLowerCase())
}

/** What a login attempt may do now. */
export type LoginVerdict =
  | { kind: 'go' }
  /** This address, this (username, address) pair or this known browser failed too often: wait for the window. */
  | { kind: 'locked'; retryAfterSec: number }
  /** The username is under attack from elsewhere: unknown browsers wait their turn. */
  | { kind: 'delayed'; retryAfterSec: number }

/**
 * Throttling of one login attempt, after OWASP's "Slow Down Online Guessing
 * Attacks with Device Cookies".
 *
 * - A browser holding a known-browser cookie issued for this user is judged
 *   by that cookie's own counter only (`login_max_failures` per window):
 *   nobody else's failures can keep the owner out of their usual browser.
 * - Any other client is refused for the rest of the window after
 *   `login_max_failures` failures for the pair (username, address), or
 *   `login_address_max_failures` from its address whatever the usernames.
 * - Failures of one username from unknown browsers, whatever the address,
 *   are counted together. Once there are `login_max_failures` of them, an
 *   unknown browser waits 1 s, then 2 s, 4 s ... (doubling with each further
 *   failure) up to `login_delay_max` after the previous attempt; one attempt
 *   per wait gets through (the turn is taken atomically in the store, so a
 *   thousand addresses firing at once still get one guess). That bounds
 *   guessing from many addresses to about one per `login_delay_max`, and a
 *   person on a new browser waits at most that long for their turn (longer
 *   only if an attacker keeps taking the turns first: the known-browser
 *   cookie is what keeps the owner in).
 *
 * While refused (either kind), the password is not checked at all, even if
 * it is right: checking it would hand the guesser an oracle that ignores the
 * limit. Unknown usernames are counted like known ones, so nothing here tells
 * which exist.
 */
export class LoginThrottle {
  readonly #as: AsContext
  readonly #own: FailureLimit
  /** What a success clears: the browser's counter, or the (username, address) pair's. */
  readonly #cleared: FailureLimit
  readonly #userKey: string | null

  /**
   * @param knownBrowserHash hash of the known-browser cookie valid for this
   *   username, or null for an unknown browser.
   */
  constructor(as: AsContext, address: string, username: string, knownBrowserHash: string | null) {
    this.#as = as
    const bucket = bucketOf(as, address)
    const max = as.as.rateLimit.loginMaxFailures
    if (knownBrowserHash !== null) {
      this.#own = new FailureLimit(as, [{ key: `login:browser:${knownBrowserHash}`, max }])
      this.#cleared = this.#own
      this.#userKey = null
    } else {
      const user = nameKey(username)
      const pair = { key: `login:pair:${user}:${bucket}`, max }
      this.#own = new FailureLimit(as, [pair, { key: `login:ip:${bucket}`, max: as.as.rateLimit.loginAddressMaxFailures }])
      this.#cleared = new FailureLimit(as, [pair])
      this.#userKey = `login:user:${user}`
    }
  }

  /** True when the attempt is judged by a known-browser cookie. */
  get known(): boolean {
    return this.#userKey === null
  }

  /** Ask before checking the password; a `go` from an unknown browser may take the username's turn. */
  async check(): Promise<LoginVerdict> {
    const locked = await this.#own.lockedFor()
    if (locked > 0) return { kind: 'locked', retryAfterSec: locked }
    if (this.#userKey === null) return { kind: 'go' }
    const { loginMaxFailures } = this.#as.as.rateLimit
    const failures = await this.#as.store.rateLimits.count(this.#userKey)
    if (failures < loginMaxFailures) return { kind: 'go' }
    // The first hit of a fresh window is the turn, and the window is the wait
    // the next attempt faces should this one fail too; everyone else waits.
    const turn = this.#turnKey(this.#userKey)
    if ((await this.#as.store.rateLimits.hit(turn, this.#delaySec(failures + 1))) === 1) return { kind: 'go' }
    const w = await this.#as.store.rateLimits.window(turn)
    return { kind: 'delayed', retryAfterSec: w.count === 0 ? 1 : secondsUntil(this.#as, w.resetMs) }
  }

  async fail(): Promise<void> {
    const user = this.#userKey
    if (user === null) return this.#own.fail()
    const [, failures] = await Promise.all([this.#own.fail(), this.#as.store.rateLimits.hit(user, this.#as.as.rateLimit.windowSec)])
    // The failure that reaches the limit starts the first wait itself (later
    // waits start when a turn is taken), so the wait follows it at once.
    if (failures === this.#as.as.rateLimit.loginMaxFailures) await this.#as.store.rateLimits.hit(this.#turnKey(user), this.#delaySec(failures))
  }

  /** 1 s once `login_max_failures` is reached, doubling with each further failure, at most `login_delay_max`. */
  #delaySec(failures: number): number {
    const { loginMaxFailures, loginDelayMaxSec } = this.#as.as.rateLimit
    return Math.min(2 ** Math.min(Math.max(0, failures - loginMaxFailures), 20), loginDelayMaxSec)
  }

  #turnKey(userKey: string): string {
    return `${userKey}:turn`
  }

  /**
   * The password was right: forget this browser's or this (username,
   * address)'s failures. The per-address and per-username counts stay, since
   * they may be someone else's.
   */
  async succeed(): Promise<void> {
    await this.#cleared.clear()
  }
}

/**
 * Guesses at a person's second factor (authenticator-app codes, recovery
 * codes) after their right password, at /second-factor.
 *
 * Only someone who knows the password gets this far, so here a count per
 * person may lock: it is what bounds a stranger who has the password, however
 * many sign-ins, browsers and addresses they use (each password sign-in used
 * to start a fresh count). The owner is kept in by the known-browser cookie,
 * which only a complete sign-in (every factor) sets:
 *
 * - a browser holding a known-browser cookie issued for this person is judged
 *   by that cookie's own counter only (`login_max_failures` per window), so a
 *   stranger's failures never slow the owner's usual browser;
 * - any other browser is refused for the rest of the window once the person
 *   has had `login_max_failures` attempts from browsers they never completed
 *   a sign-in with (whatever the session, browser or address), or its address
 *   (an IPv6 one by its network) has `login_address_max_failures` failures,
 *   whatever the people.
 *
 * While refused the code is not checked, even a right one.
 */
export class SecondFactorThrottle {
  readonly #as: AsContext
  /** Counted before the code is checked: the person's (or the known browser's) attempts. */
  readonly #attempts: FailureCounter
  /** Counted after a wrong code: the address's failures (null for a known browser). */
  readonly #address: FailureLimit | null

  /** @param knownBrowserHash hash of the known-browser cookie issued for this person, or null. */
  constructor(as: AsContext, address: string, sub: string, knownBrowserHash: string | null) {
    const { loginMaxFailures, loginAddressMaxFailures } = as.as.rateLimit
    this.#as = as
    this.#attempts = { key: knownBrowserHash !== null ? `2fa:browser:${knownBrowserHash}` : `2fa:person:${hashToken(sub)}`, max: loginMaxFailures }
    this.#address = knownBrowserHash !== null ? null : new FailureLimit(as, [{ key: `2fa:ip:${bucketOf(as, address)}`, max: loginAddressMaxFailures }])
  }

  /** True when the attempt is judged by a known-browser cookie. */
  get known(): boolean {
    return this.#address === null
  }

  /**
   * Take one attempt before the code is checked: seconds to wait (the
   * Retry-After) when refused, else 0. The per-person (or known-browser)
   * count is taken here, atomically, rather than after a failure: checked
   * first and counted after, a burst of guesses sent at once all passed the
   * check before the first was counted.
   */
  async attempt(): Promise<number> {
    const addressWait = (await this.#address?.lockedFor()) ?? 0
    if (addressWait > 0) return addressWait
    const { rateLimits } = this.#as.store
    if ((await rateLimits.hit(this.#attempts.key, this.#as.as.rateLimit.windowSec)) <= this.#attempts.max) return 0
    return secondsUntil(this.#as, (await rateLimits.window(this.#attempts.key)).resetMs)
  }

  /** The code was wrong (its attempt is counted already): the address's count. */
  async fail(): Promise<void> {
    await this.#address?.fail()
  }

  /**
   * The code was right: a known browser's count starts again. The person's
   * count gives back this attempt only: it may hold a stranger's guesses
   * (clearing it when the owner signs in would hand the stranger a new
   * allowance), but the owner's own right codes, from browsers not yet
   * known, must not use it up. The address's count stays.
   */
  async succeed(): Promise<void> {
    const { rateLimits } = this.#as.store
    if (this.#address === null) await rateLimits.clear(this.#attempts.key)
    else await rateLimits.unhit(this.#attempts.key)
  }
}

/** RFC 8628 5.1: wrong user codes, counted per client address, so codes cannot be guessed. */
export function userCodeLimit(as: AsContext, address: string): FailureLimit {
  return new FailureLimit(as, [{ key: `device:ip:${bucketOf(as, address)}`, max: as.as.rateLimit.loginMaxFailures }])
}

/**
 * Failed client authentications (wrong secret, or a secret for an unknown
 * client id), limited per (client_id, address) and per address. Client ids
 * are public, so a limit per client id alone would let anyone lock a client
 * out; a client presenting its right secret from an address that has not
 * failed is never refused.
 */
export function clientAuthLimit(as: AsContext, address: string, clientId: string): FailureLimit {
  const { clientAuthMaxFailures, clientAuthAddressMaxFailures } = as.as.rateLimit
  const bucket = bucketOf(as, address)
  return new FailureLimit(as, [
    { key: `client-auth:pair:${hashToken(clientId)}:${bucket}`, max: clientAuthMaxFailures },
    { key: `client-auth:ip:${bucket}`, max: clientAuthAddressMaxFailures },
  ])
}

/**
 * Requests to /passkey-options, counted per address whatever comes of them
 * (`passkey_options_per_address` per window): each challenge handed out is
 * kept in the store for minutes, so without a bound a stranger could grow
 * the store at will. The count is one atomic hit, so a burst of parallel
 * requests cannot overshoot it. 0 when this request may go on, else the
 * seconds until the window ends (the Retry-After).
 */
export async function passkeyOptionsWait(as: AsContext, address: string): Promise<number> {
  const key = `passkey-options:ip:${bucketOf(as, address)}`
  const { windowSec, passkeyOptionsPerAddress } = as.as.rateLimit
  if ((await as.store.rateLimits.hit(key, windowSec)) <= passkeyOptionsPerAddress) return 0
  return secondsUntil(as, (await as.store.rateLimits.window(key)).resetMs)
}
