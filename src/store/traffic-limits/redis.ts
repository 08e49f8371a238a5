/**
 * Traffic limits on Redis: every limit of a request decided by one script,
 * one round trip (scripts.ts).
 *
 * Keys: `p tl:{<hashed key>}` (rate limit, its TAT) and `p tl:{<hashed
 * key>}<period>` (quota, its count). On a single node (or Sentinel) the
 * request's keys go to one script call whatever their tags. On Redis
 * Cluster the limits of one request hash to different slots, so each is its
 * own call, sent together (still one round trip of latency): a request one
 * limit refuses is then still counted by the others that had room (stricter,
 * never looser; docs/traffic.md).
 */
import type { Arg, RedisConnection } from '../redis/connection.js'
import { list, num } from '../redis/replies.js'
import { TAKE_LIMITS } from './scripts.js'
import type { LimitState, LimitTake, LimitVerdict, TrafficLimitStore } from './types.js'

export class RedisTrafficLimits implements TrafficLimitStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #key(take: LimitTake): string {
    return this.#r.key('tl', take.key, take.rule.kind === 'quota' ? take.rule.period : '')
  }

  async take(takes: readonly LimitTake[]): Promise<LimitVerdict> {
    if (!this.#r.cluster || takes.length === 1) return this.#takeTogether(takes)
    const each = await Promise.all(takes.map((t) => this.#takeTogether([t])))
    return { allowed: each.every((v) => v.allowed), states: each.flatMap((v) => v.states) }
  }

  async #takeTogether(takes: readonly LimitTake[]): Promise<LimitVerdict> {
    const r = this.#r
    const now = r.clock.now()
    const args: Arg[] = [now]
    for (const t of takes) {
      if (t.rule.kind === 'rate') args.push('r', t.cost, t.rule.intervalMs, t.rule.capacityMs)
      else args.push('q', t.cost, t.rule.limit, t.rule.endMs)
    }
    const keys = takes.map((t) => this.#key(t))
    const out = list(await r.do((c) => r.eval(c, TAKE_LIMITS, keys, args)))
    const states: LimitState[] = takes.map((_, i) => ({ remaining: num(out[3 * i + 1]), resetMs: num(out[3 * i + 2]), waitMs: num(out[3 * i + 3]) }))
    return { allowed: num(out[0]) === 1, states }
  }
}
