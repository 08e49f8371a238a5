/**
 * When a dead worker process is started again. The first restart is quick
 * (a worker killed once is back within a quarter of a second); each exit
 * that follows a short life doubles the wait, up to half a minute, so a
 * worker that cannot start (a store that refuses it, a file it cannot read)
 * costs a start every 30 s rather than a spinning core. A worker that
 * served for `STABLE_MS` starts the count again.
 */
export const FIRST_DELAY_MS = 250
export const MAX_DELAY_MS = 30_000
export const STABLE_MS = 30_000

/** The wait before restart number `failures` (1 for the first exit in a row). */
export function restartDelayMs(failures: number): number {
  const n = Math.max(1, Math.floor(failures))
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(n - 1, 20))
}

/** Exits in a row, counting this one: a worker that lived `livedMs` or longer broke no streak. */
export function nextFailureCount(previous: number, livedMs: number): number {
  return livedMs >= STABLE_MS ? 1 : previous + 1
}
