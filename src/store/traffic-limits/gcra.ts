/**
 * The arithmetic of one limit, written once for the memory store; the Redis
 * script (scripts.ts) is the same steps in Lua, and the contract suite runs
 * both against the same expectations.
 */
import type { LimitState, QuotaRule, RateRule } from './types.js'

/** Floor of a ratio that float division may leave a hair under a whole number. */
const EPSILON = 1e-9

/** A decision and, when allowed, the value to keep (a rate limit's theoretical arrival time, a quota's count). */
export interface Step {
  readonly allowed: boolean
  readonly next: number
  /** The state once this request is counted (when allowed), or as it stays (when refused). */
  readonly state: LimitState
  /** The state as it stays, for when another limit refuses the request and nothing is counted. */
  readonly unchanged: LimitState
}

/**
 * GCRA: `tat` is the theoretical arrival time of the next request (epoch
 * ms; undefined for a key never seen). A request of `cost` units is allowed
 * when the new TAT lies at most `capacityMs` ahead of now.
 */
export function rateStep(tat: number | undefined, nowMs: number, cost: number, rule: RateRule): Step {
  const from = tat === undefined || tat < nowMs ? nowMs : tat
  const next = from + cost * rule.intervalMs
  const wait = next - rule.capacityMs - nowMs
  const remainingAt = (t: number): number => Math.max(0, Math.floor((rule.capacityMs - (t - nowMs)) / rule.intervalMs + EPSILON))
  const unchanged = { remaining: remainingAt(from), resetMs: Math.ceil(from - nowMs), waitMs: 0 }
  if (wait > 0) return { allowed: false, next: from, state: { ...unchanged, waitMs: Math.ceil(wait) }, unchanged }
  return { allowed: true, next, state: { remaining: remainingAt(next), resetMs: Math.ceil(next - nowMs), waitMs: 0 }, unchanged }
}

/** A calendar quota: `count` units used so far in the period. */
export function quotaStep(count: number, nowMs: number, cost: number, rule: QuotaRule): Step {
  const resetMs = Math.max(0, Math.ceil(rule.endMs - nowMs))
  const unchanged = { remaining: Math.max(0, rule.limit - count), resetMs, waitMs: 0 }
  if (count + cost > rule.limit) return { allowed: false, next: count, state: { ...unchanged, waitMs: resetMs }, unchanged }
  return { allowed: true, next: count + cost, state: { remaining: rule.limit - count - cost, resetMs, waitMs: 0 }, unchanged }
}
