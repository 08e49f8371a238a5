/**
 * Traffic limits on Redis: every limit of a request decided by one script
 * (scripts.ts), and on a single node (or Sentinel) the requests of one
 * event-loop turn decided together by one script call.
 *
 * Keys: `p tl:{<hashed key>}` (rate limit, its TAT) and `p tl:{<hashed
 * key>}<period>` (quota, its count). On a single node the keys of many
 * requests go to one script call whatever their tags; the script decides
 * them one after another, exactly as separate calls in that order would, so
 * batching changes what a request costs, never what is decided. It exists
 * because the script call, not the script, is what a limit costs bearward:
 * encoding the command and reading its reply once per request was a third
 * of the gateway's CPU per request (docs/traffic.md, "Cost").
 *
 * On Redis Cluster the limits of one request hash to different slots, so
 * each is its own call, sent together (still one round trip of latency): a
 * request one limit refuses is then still counted by the others that had
 * room (stricter, never looser; docs/traffic.md). Cluster calls are not
 * batched across requests (their keys are in different slots too).
 */
import type { Arg, RedisConnection } from '../redis/connection.js'
import { list, num } from '../redis/replies.js'
import { TAKE_LIMITS } from './scripts.js'
import type { LimitState, LimitTake, LimitVerdict, TrafficLimitStore } from './types.js'

/** Keys per script call at most: a burst of requests is split so no one call holds Redis for long. */
const MAX_KEYS_PER_CALL = 256

interface Waiting {
  readonly takes: readonly LimitTake[]
  readonly resolve: (v: LimitVerdict) => void
  readonly reject: (err: unknown) => void
}

export class RedisTrafficLimits implements TrafficLimitStore {
  readonly #r: RedisConnection
  /** Requests of this turn of the event loop, decided together at its end. */
  #waiting: Waiting[] = []

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #key(take: LimitTake): string {
    return this.#r.key('tl', take.key, take.rule.kind === 'quota' ? take.rule.period : '')
  }

  take(takes: readonly LimitTake[]): Promise<LimitVerdict> {
    if (this.#r.cluster) return this.#takeOnCluster(takes)
    return new Promise((resolve, reject) => {
      // setImmediate, not a microtask: it runs after every request the
      // socket reads of this turn delivered, so they share one call.
      if (this.#waiting.length === 0) setImmediate(() => this.#flush())
      this.#waiting.push({ takes, resolve, reject })
    })
  }

  async #takeOnCluster(takes: readonly LimitTake[]): Promise<LimitVerdict> {
    if (takes.length === 1) return (await this.#decide([takes]))[0] as LimitVerdict
    const each = await Promise.all(takes.map(async (t) => (await this.#decide([[t]]))[0] as LimitVerdict))
    return { allowed: each.every((v) => v.allowed), states: each.flatMap((v) => v.states) }
  }

  #flush(): void {
    const waiting = this.#waiting
    this.#waiting = []
    let from = 0
    while (from < waiting.length) {
      let keys = 0
      let to = from
      do keys += (waiting[to++] as Waiting).takes.length
      while (to < waiting.length && keys + (waiting[to] as Waiting).takes.length <= MAX_KEYS_PER_CALL)
      const part = waiting.slice(from, to)
      this.#decide(part.map((w) => w.takes)).then(
        (verdicts) => {
          for (const [i, w] of part.entries()) w.resolve(verdicts[i] as LimitVerdict)
        },
        (err: unknown) => {
          for (const w of part) w.reject(err)
        },
      )
      from = to
    }
  }

  /** One script call deciding `requests` in order. */
  async #decide(requests: readonly (readonly LimitTake[])[]): Promise<LimitVerdict[]> {
    const r = this.#r
    const now = r.clock.now()
    const args: Arg[] = [now]
    const keys: string[] = []
    for (const takes of requests) {
      args.push(takes.length)
      for (const t of takes) {
        keys.push(this.#key(t))
        if (t.rule.kind === 'rate') args.push('r', t.cost, t.rule.intervalMs, t.rule.capacityMs)
        else args.push('q', t.cost, t.rule.limit, t.rule.endMs)
      }
    }
    const out = list(await r.do((c) => r.eval(c, TAKE_LIMITS, keys, args)))
    const verdicts: LimitVerdict[] = []
    let at = 0
    for (const takes of requests) {
      const allowed = num(out[at]) === 1
      const states: LimitState[] = takes.map((_, i) => ({
        remaining: num(out[at + 3 * i + 1]),
        resetMs: num(out[at + 3 * i + 2]),
        waitMs: num(out[at + 3 * i + 3]),
      }))
      verdicts.push({ allowed, states })
      at += 1 + 3 * takes.length
    }
    return verdicts
  }
}
