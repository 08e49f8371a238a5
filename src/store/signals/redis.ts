/**
 * The Shared Signals receiver's records on Redis.
 *
 * Keys: `p siglease:{name}` hash {holder, until ms}; `p sigoff:{sub}` string
 * "1": a disabled account, kept until enabled.
 */
import type { RedisConnection } from '../redis/connection.js'
import { RELEASE_LEASE, TAKE_LEASE } from './scripts.js'
import type { SignalStore } from './types.js'
import { num } from '../redis/replies.js'

export class RedisSignals implements SignalStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async lease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const r = this.#r
    const reply = await r.do((c) => r.eval(c, TAKE_LEASE, [r.key('siglease', name)], [holder, r.clock.now(), Math.max(1, Math.round(ttlMs))]))
    return num(reply) === 1
  }

  async release(name: string, holder: string): Promise<void> {
    const r = this.#r
    await r.do((c) => r.eval(c, RELEASE_LEASE, [r.key('siglease', name)], [holder]))
  }

  async disableAccount(sub: string): Promise<void> {
    const r = this.#r
    await r.do((c) => c.set(r.key('sigoff', sub), '1'))
  }

  async enableAccount(sub: string): Promise<void> {
    const r = this.#r
    await r.do((c) => c.del(r.key('sigoff', sub)))
  }

  async isDisabled(sub: string): Promise<boolean> {
    const r = this.#r
    return (await r.do((c) => c.exists(r.key('sigoff', sub)))) === 1
  }
}
