/**
 * Leased allowances of rate limits on Redis (docs/traffic.md, "Leases"): an
 * instance counts several units of a key in the shared state in one script
 * call, and spends them here, one request at a time, without a store call.
 *
 * Why it is never looser than exact counting: the units are counted in the
 * shared state when leased (every instance's decisions see them), and a
 * lease is spent only until `granted × interval` after it was counted
 * (capped at MAX_LEASE_MS). Within that time the TAT cannot have passed (it
 * lies at least that far ahead of the lease's "now", and no give-back moves
 * it back before the latest lease's end: scripts.ts, `hold`), so GCRA has
 * not forgotten them yet, and a unit spent a little after it was counted is
 * decided as strictly as if it had been counted when spent. What it costs:
 * units leased but not yet spent on one instance are refused to the same
 * client on the others, at most one lease per key per instance, each for
 * at most its lifetime; at expiry the unused units are given back (the TAT
 * moves back by them, only within the run they were counted in: scripts.ts).
 */
import type { RateRule } from './types.js'

/** A lease lives at most this long: unused units are not withheld from other instances for longer. */
export const MAX_LEASE_MS = 1000

/** Leases held at most per instance: beyond it, new keys are decided per request (exact), so a flood of keys costs no memory here. */
export const MAX_LEASES = 10_000

/** Units of one key counted in the shared state and not yet spent here. */
export interface Lease {
  /** Units still to spend. */
  left: number
  /** Until when (this instance's clock, epoch ms) they may be spent. */
  readonly expiresMs: number
  readonly rule: RateRule
  /** What the shared state said remained once the whole lease was counted. */
  readonly remainingAfter: number
  /** The TAT (epoch ms) once the whole lease was counted. */
  readonly tatMs: number
  /** The run the units were counted in (scripts.ts): the give-back is honoured only within it. */
  readonly run: string
  timer: NodeJS.Timeout | null
}

/** How long a lease of `granted` units of `rule` may be spent (see the file's comment). */
export function leaseLifetimeMs(granted: number, rule: RateRule): number {
  return Math.min(MAX_LEASE_MS, granted * rule.intervalMs)
}

/**
 * Where a key stands when a request was decided from its lease: what
 * remained once the lease was counted, plus what this instance has not
 * spent of it (never more than the shared state said at lease time), and
 * the TAT without those unspent units.
 */
export function leaseState(lease: Lease, nowMs: number): { remaining: number; resetMs: number; waitMs: number } {
  return {
    remaining: lease.remainingAfter + lease.left,
    resetMs: Math.max(0, Math.ceil(lease.tatMs - lease.left * lease.rule.intervalMs - nowMs)),
    waitMs: 0,
  }
}
