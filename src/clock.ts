/**
 * The one source of time. Everything that expires (codes, tokens, sessions,
 * rate-limit windows) reads it, so tests move time instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** Seconds since the Unix epoch, as JWT NumericDate claims use. */
export function epochSeconds(clock: Clock): number {
  return Math.floor(clock.now() / 1000)
}

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  #ms: number
  constructor(startMs: number = Date.UTC(2026, 0, 1)) {
    this.#ms = startMs
  }
  now(): number {
    return this.#ms
  }
  advance(ms: number): void {
    this.#ms += ms
  }
  set(ms: number): void {
    this.#ms = ms
  }
}
