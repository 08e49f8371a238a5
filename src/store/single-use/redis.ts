/**
 * Single-use values on Redis.
 *
 * Keys: `p once:{key}` string: used-until ms.
 */
import type { RedisConnection } from '../redis/connection.js'
import { num } from '../redis/replies.js'
import { USE_ONCE } from './scripts.js'
import type { SingleUseStore } from './types.js'

export class RedisSingleUse implements SingleUseStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async use(key: string, ttlSec: number): Promise<boolean> {
    const r = this.#r
    const reply = await r.do((c) => r.eval(c, USE_ONCE, [r.key('once', key)], [r.clock.now(), Math.max(1, Math.round(ttlSec * 1000))]))
    return num(reply) === 1
  }
}
