/**
 * Rate-limit counters on Redis.
 *
 * Keys: `p rl:{key}` hash {c: count, r: window reset ms}.
 */
import type { RedisConnection } from '../redis/connection.js'
import { list, num } from '../redis/replies.js'
import { HIT, HIT_WINDOWS, UNHIT } from './scripts.js'
import type { HitWindow, RateLimitStore } from './types.js'

/** window() calls of one tick, answered by one read. */
interface WindowBatch {
  keys: string[]
  waiters: Array<{ resolve: (w: HitWindow) => void; reject: (err: unknown) => void }>
}

export class RedisRateLimits implements RateLimitStore {
  readonly #r: RedisConnection
  /** The failure windows asked for in this tick, read together (window). */
  #windowBatch: WindowBatch | null = null

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #key(key: string): string {
    return this.#r.key('rl', key)
  }

  async hit(key: string, windowSec: number): Promise<number> {
    const r = this.#r
    return num(await r.do((c) => r.eval(c, HIT, [this.#key(key)], [r.clock.now(), windowSec])))
  }

  async count(key: string): Promise<number> {
    const [count, reset] = await this.#r.do((c) => c.hmget(this.#key(key), 'c', 'r'))
    return count && reset && this.#r.clock.now() < Number(reset) ? Number(count) : 0
  }

  /**
   * On a single node, the windows asked for in the same tick (a FailureLimit
   * checks its per-pair and per-address counters at once) are read with one
   * command, so a client authentication that succeeds costs one round trip
   * and one command. On a cluster the keys may lie in different slots: one
   * HMGET each.
   */
  window(key: string): Promise<HitWindow> {
    if (this.#r.cluster) return this.#readWindows([key]).then((w) => w[0] as HitWindow)
    return new Promise<HitWindow>((resolve, reject) => {
      let batch = this.#windowBatch
      if (batch === null) {
        const fresh: WindowBatch = { keys: [], waiters: [] }
        batch = fresh
        this.#windowBatch = fresh
        queueMicrotask(() => {
          this.#windowBatch = null
          this.#readWindows(fresh.keys).then(
            (windows) => {
              for (const [i, w] of fresh.waiters.entries()) w.resolve(windows[i] as HitWindow)
            },
            (err: unknown) => {
              for (const w of fresh.waiters) w.reject(err)
            },
          )
        })
      }
      batch.keys.push(key)
      batch.waiters.push({ resolve, reject })
    })
  }

  async #readWindows(keys: readonly string[]): Promise<HitWindow[]> {
    const r = this.#r
    const flat: Array<string | null> =
      keys.length === 1 || r.cluster
        ? (await Promise.all(keys.map((k) => r.do((c) => c.hmget(this.#key(k), 'c', 'r'))))).flat()
        : list(
            await r.do((c) =>
              r.eval(
                c,
                HIT_WINDOWS,
                keys.map((k) => this.#key(k)),
                [],
              ),
            ),
          ).map((v) => (typeof v === 'string' ? v : null))
    const now = r.clock.now()
    return keys.map((_, i) => {
      const count = flat[2 * i]
      const reset = flat[2 * i + 1]
      return count && reset && now < Number(reset) ? { count: Number(count), resetMs: Number(reset) } : { count: 0, resetMs: 0 }
    })
  }

  async unhit(key: string): Promise<void> {
    const r = this.#r
    await r.do((c) => r.eval(c, UNHIT, [this.#key(key)], [r.clock.now()]))
  }

  async clear(key: string): Promise<void> {
    await this.#r.do((c) => c.del(this.#key(key)))
  }
}
