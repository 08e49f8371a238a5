/** One fixed-window counter as it stands. */
export interface HitWindow {
  count: number
  /** Epoch ms at which the window ends and the count returns to 0; 0 when count is 0. */
  resetMs: number
}

/** Fixed-window counters per client, per address, per person. */
export interface RateLimitStore {
  /** Count one hit in the fixed window of `windowSec` for key; returns the count so far in that window. */
  hit(key: string, windowSec: number): Promise<number>
  /** Current count without adding. */
  count(key: string): Promise<number>
  /** Current count and when its window ends (epoch ms; 0 when there is no window), for an honest Retry-After. */
  window(key: string): Promise<HitWindow>
  /**
   * Give back one hit of the current window (never below 0; nothing when the
   * window is over): for a limit counted before the attempt is judged, whose
   * successes should not use up the allowance.
   */
  unhit(key: string): Promise<void>
  clear(key: string): Promise<void>
}
