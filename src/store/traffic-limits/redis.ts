/**
 * Traffic limits on Redis: every limit of a request decided by one script
 * (scripts.ts), and on a single node (or Sentinel) the requests of one
 * event-loop turn decided together by one script call. A rate limit large
 * enough to lease (`RateRule.lease`) is mostly decided here, from units
 * leased from the shared state (lease.ts), without a store call.
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
import { list, num, str } from '../redis/replies.js'
import { type Lease, leaseLifetimeMs, leaseState, MAX_LEASES } from './lease.js'
import { REPLIES_PER_KEY, TAKE_LIMITS } from './scripts.js'
import type { LimitState, LimitTake, LimitVerdict, RateRule, TrafficLimitStore } from './types.js'

/** Keys per script call at most: a burst of requests is split so no one call holds Redis for long. */
const MAX_KEYS_PER_CALL = 256

/** One limit as the script is asked about it. */
interface Ask {
  readonly take: LimitTake
  /** The Redis key. */
  readonly key: string
  /** Units to count when there is room for more than the take's cost (a lease); the cost itself otherwise. */
  readonly want: number
  /** Unused units of an earlier lease of this key to give back first, and the run they were counted in. */
  readonly back: number
  readonly run: string
}

/** The script's answer for one request. */
interface Decided {
  readonly allowed: boolean
  readonly states: LimitState[]
  /** Per ask: units counted (more than the cost for a lease granted), and the key's run. */
  readonly granted: number[]
  readonly runs: string[]
  /** The "now" the script decided at (this instance's clock). */
  readonly nowMs: number
}

interface Waiting {
  readonly asks: readonly Ask[]
  readonly resolve: (v: Decided) => void
  readonly reject: (err: unknown) => void
}

/** Each take's cost spent from its lease: the request decided here, without the store. */
function spentFrom(leases: readonly Lease[], takes: readonly LimitTake[], now: number): LimitVerdict {
  for (const [i, l] of leases.entries()) l.left -= (takes[i] as LimitTake).cost
  return { allowed: true, states: leases.map((l) => leaseState(l, now)), leased: true }
}

function isLeasable(t: LimitTake): t is LimitTake & { rule: RateRule & { lease: number } } {
  return t.rule.kind === 'rate' && t.named !== true && t.rule.lease !== undefined && t.rule.lease > t.cost
}

export class RedisTrafficLimits implements TrafficLimitStore {
  readonly #r: RedisConnection
  /** Requests of this turn of the event loop, decided together at its end. */
  #waiting: Waiting[] = []
  /** This instance's leases, by Redis key. */
  readonly #leases = new Map<string, Lease>()
  /** Keys with a lease being asked for: one call per key at a time, the others wait for its answer. */
  readonly #pending = new Map<string, Promise<void>>()

  constructor(r: RedisConnection) {
    this.#r = r
  }

  /** Leases held now (tests; the memory bound docs/traffic.md states). */
  get leases(): number {
    return this.#leases.size
  }

  #key(take: LimitTake): string {
    return this.#r.key('tl', take.key, take.rule.kind === 'quota' ? take.rule.period : '')
  }

  take(takes: readonly LimitTake[]): LimitVerdict | Promise<LimitVerdict> {
    if (!takes.some(isLeasable)) {
      return this.#send(takes.map((take) => ({ take, key: this.#key(take), want: take.cost, back: 0, run: '' }))).then((d) => ({
        allowed: d.allowed,
        states: d.states,
      }))
    }
    const keys = takes.map((t) => this.#key(t))
    return this.#fromLeases(takes, keys) ?? this.#takeLeased(takes, keys)
  }

  /** The lease of `key` when it may still be spent and has room for `cost`, else null. */
  #leaseWithRoom(key: string, cost: number, now: number): Lease | null {
    const lease = this.#leases.get(key)
    return lease !== undefined && now < lease.expiresMs && lease.left >= cost ? lease : null
  }

  /** The verdict when every limit of the request has a lease here with room for it (spent now), else null. */
  #fromLeases(takes: readonly LimitTake[], keys: readonly string[]): LimitVerdict | null {
    // Spent only while the connection is up: in an outage the store's on_store_failure decides, as without leases.
    if (!this.#r.main.up) return null
    const now = this.#r.clock.now()
    const leases: Lease[] = []
    for (const [i, t] of takes.entries()) {
      const lease = this.#leaseWithRoom(keys[i] as string, t.cost, now)
      if (lease === null) return null
      leases.push(lease)
    }
    return spentFrom(leases, takes, now)
  }

  /**
   * Decide from this instance's leases where each limit of the request has
   * one with room (no store call); else ask the store about the limits
   * without, asking a lease for those that may have one, while the others
   * spend theirs (given back here when the store refuses the request).
   */
  async #takeLeased(takes: readonly LimitTake[], keys: readonly string[]): Promise<LimitVerdict> {
    let waited = false
    let retried = false
    for (;;) {
      const now = this.#r.clock.now()
      // Spent only while the connection is up: in an outage the store's on_store_failure decides, as without leases.
      const up = this.#r.main.up
      const local = takes.map((t, i) => (up ? this.#leaseWithRoom(keys[i] as string, t.cost, now) : null))
      if (local.every((l) => l !== null)) return spentFrom(local, takes, now)
      if (!waited) {
        const pending = keys.flatMap((k, i) => (local[i] === null ? (this.#pending.get(k) ?? []) : []))
        if (pending.length > 0) {
          // Another request is asking for this key's lease: wait for it once, then spend from it or ask ourselves.
          waited = true
          await Promise.all(pending)
          continue
        }
      }
      const verdict = await this.#askStore(takes, keys, local)
      // Refused while a request of this instance's own batch was leasing the key: spend that lease rather than withhold it.
      if (verdict.allowed || retried || !this.#usable(takes, keys)) return verdict
      retried = true
      waited = true
    }
  }

  /** Every limit of the request has a lease here with room for it. */
  #usable(takes: readonly LimitTake[], keys: readonly string[]): boolean {
    const now = this.#r.clock.now()
    return takes.every((t, i) => this.#leaseWithRoom(keys[i] as string, t.cost, now) !== null)
  }

  async #askStore(takes: readonly LimitTake[], keys: readonly string[], local: readonly (Lease | null)[]): Promise<LimitVerdict> {
    let settle = (): void => {}
    const settled = new Promise<void>((resolve) => {
      settle = resolve
    })
    const mine: string[] = []
    const asks: Ask[] = []
    const asked: number[] = []
    for (const [i, t] of takes.entries()) {
      const lease = local[i]
      if (lease !== null && lease !== undefined) {
        lease.left -= t.cost
        continue
      }
      const key = keys[i] as string
      const old = this.#leases.get(key)
      if (old !== undefined) this.#drop(key, old)
      let want = t.cost
      // Leases held and being asked for count against the bound alike.
      if (isLeasable(t) && !this.#pending.has(key) && (old !== undefined || this.#leases.size + this.#pending.size < MAX_LEASES)) {
        want = t.rule.lease
        this.#pending.set(key, settled)
        mine.push(key)
      }
      asks.push({ take: t, key, want, back: old?.left ?? 0, run: old?.run ?? '' })
      asked.push(i)
    }
    const undoLocal = (): void => {
      for (const [i, l] of local.entries()) if (l !== null) l.left += (takes[i] as LimitTake).cost
    }
    let d: Decided
    try {
      d = await this.#send(asks)
    } catch (err) {
      undoLocal()
      throw err
    } finally {
      for (const key of mine) if (this.#pending.get(key) === settled) this.#pending.delete(key)
      settle()
    }
    if (!d.allowed) undoLocal()
    const states: LimitState[] = local.map((l) => (l === null ? { remaining: 0, resetMs: 0, waitMs: 0 } : leaseState(l, d.nowMs)))
    for (const [j, i] of asked.entries()) {
      const ask = asks[j] as Ask
      const granted = d.granted[j] as number
      let state = d.states[j] as LimitState
      if (d.allowed && granted > ask.take.cost && ask.take.rule.kind === 'rate') {
        const lease = this.#lease(ask, granted, state, d.runs[j] as string, d.nowMs)
        state = leaseState(lease, d.nowMs)
      }
      states[i] = state
    }
    return { allowed: d.allowed, states }
  }

  /** Keep the units of `ask`'s key granted beyond its cost, to spend here until the lease expires. */
  #lease(ask: Ask, granted: number, state: LimitState, run: string, nowMs: number): Lease {
    const rule = ask.take.rule as RateRule
    const lifetimeMs = leaseLifetimeMs(granted, rule)
    const lease: Lease = {
      left: granted - ask.take.cost,
      expiresMs: nowMs + lifetimeMs,
      rule,
      remainingAfter: state.remaining,
      tatMs: nowMs + state.resetMs,
      run,
      timer: null,
    }
    this.#leases.set(ask.key, lease)
    this.#arm(ask.key, lease, lifetimeMs)
    return lease
  }

  #arm(key: string, lease: Lease, inMs: number): void {
    lease.timer = setTimeout(() => this.#expire(key, lease), Math.max(1, Math.ceil(inMs)))
    lease.timer.unref()
  }

  #drop(key: string, lease: Lease): void {
    if (lease.timer !== null) clearTimeout(lease.timer)
    lease.timer = null
    if (this.#leases.get(key) === lease) this.#leases.delete(key)
  }

  /** A lease ran out of time: its unused units go back to the shared state (lost if the store fails: stricter only). */
  #expire(key: string, lease: Lease): void {
    // The injected clock decides (a test's clock may not have moved as far as the timer's).
    const left = lease.expiresMs - this.#r.clock.now()
    if (left > 0) return this.#arm(key, lease, left)
    this.#drop(key, lease)
    if (lease.left <= 0) return
    const back = lease.left
    lease.left = 0
    this.#send([{ take: { key: '', cost: 0, rule: lease.rule }, key, want: 0, back, run: lease.run }]).catch(() => undefined)
  }

  #send(asks: readonly Ask[]): Promise<Decided> {
    if (this.#r.cluster) return this.#sendOnCluster(asks)
    return new Promise((resolve, reject) => {
      // setImmediate, not a microtask: it runs after every request the
      // socket reads of this turn delivered, so they share one call.
      if (this.#waiting.length === 0) setImmediate(() => this.#flush())
      this.#waiting.push({ asks, resolve, reject })
    })
  }

  async #sendOnCluster(asks: readonly Ask[]): Promise<Decided> {
    if (asks.length === 1) return (await this.#decide([asks]))[0] as Decided
    const each = await Promise.all(asks.map(async (a) => (await this.#decide([[a]]))[0] as Decided))
    return {
      allowed: each.every((d) => d.allowed),
      states: each.flatMap((d) => d.states),
      granted: each.flatMap((d) => d.granted),
      runs: each.flatMap((d) => d.runs),
      nowMs: Math.min(...each.map((d) => d.nowMs)),
    }
  }

  #flush(): void {
    const waiting = this.#waiting
    this.#waiting = []
    let from = 0
    while (from < waiting.length) {
      let keys = 0
      let to = from
      do keys += (waiting[to++] as Waiting).asks.length
      while (to < waiting.length && keys + (waiting[to] as Waiting).asks.length <= MAX_KEYS_PER_CALL)
      const part = waiting.slice(from, to)
      this.#decide(part.map((w) => w.asks)).then(
        (decided) => {
          for (const [i, w] of part.entries()) w.resolve(decided[i] as Decided)
        },
        (err: unknown) => {
          for (const w of part) w.reject(err)
        },
      )
      from = to
    }
  }

  /** One script call deciding `requests` in order. */
  async #decide(requests: readonly (readonly Ask[])[]): Promise<Decided[]> {
    const r = this.#r
    const now = r.clock.now()
    const args: Arg[] = [now]
    const keys: string[] = []
    for (const asks of requests) {
      args.push(asks.length)
      for (const a of asks) {
        const t = a.take
        keys.push(a.key)
        if (t.rule.kind === 'rate') args.push('r', t.cost, t.rule.intervalMs, t.rule.capacityMs, a.want, a.back, a.run)
        else args.push('q', t.cost, t.rule.limit, t.rule.endMs, 0, 0, '')
      }
    }
    const out = list(await r.do((c) => r.eval(c, TAKE_LIMITS, keys, args)))
    const decided: Decided[] = []
    let at = 0
    for (const asks of requests) {
      const allowed = num(out[at]) === 1
      const states: LimitState[] = []
      const granted: number[] = []
      const runs: string[] = []
      for (let i = 0; i < asks.length; i++) {
        const base = at + 1 + REPLIES_PER_KEY * i
        states.push({ remaining: num(out[base]), resetMs: num(out[base + 1]), waitMs: num(out[base + 2]) })
        granted.push(num(out[base + 3]))
        runs.push(str(out[base + 4]))
      }
      decided.push({ allowed, states, granted, runs, nowMs: now })
      at += 1 + REPLIES_PER_KEY * asks.length
    }
    return decided
  }
}
