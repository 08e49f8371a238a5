/**
 * Opaque access tokens on Redis.
 *
 * Keys: `p at:{hash}` hash {r: opaque token JSON, exp}.
 */
import type { RedisConnection } from '../redis/connection.js'
import { num } from '../redis/replies.js'
import { DELETE_OPAQUE } from './scripts.js'
import type { OpaqueTokenRecord, OpaqueTokenStore } from './types.js'

export class RedisOpaqueTokens implements OpaqueTokenStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(tokenHash: string, record: OpaqueTokenRecord): Promise<void> {
    const r = this.#r
    await r.do((c) => r.putHash(c, r.key('at', tokenHash), r.ttlMs(record.exp * 1000), { r: JSON.stringify(record), exp: record.exp }))
  }

  async get(tokenHash: string): Promise<OpaqueTokenRecord | null> {
    const r = this.#r
    const [raw, exp] = await r.do((c) => c.hmget(r.key('at', tokenHash), 'r', 'exp'))
    if (!raw || !exp || r.clock.now() >= Number(exp) * 1000) return null
    return JSON.parse(raw) as OpaqueTokenRecord
  }

  async delete(tokenHash: string): Promise<boolean> {
    const r = this.#r
    const n = await r.do((c) => r.eval(c, DELETE_OPAQUE, [r.key('at', tokenHash)], [r.clock.now()]))
    return num(n) === 1
  }
}
