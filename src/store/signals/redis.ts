/**
 * The Shared Signals receiver's records on Redis.
 *
 * Keys: `p siglease:{name}` hash {holder, until ms}; `p sigoff:{sub}` string
 * "1": a disabled account, kept until enabled; `p ssfstreams:{all}` hash
 * (receiver client id → its stream, JSON), one key so a cap is one script.
 */
import type { RedisConnection } from '../redis/connection.js'
import { PUT_STREAM, RELEASE_LEASE, TAKE_LEASE } from './scripts.js'
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

  #streams(): string {
    return this.#r.key('ssfstreams', 'all')
  }

  async putStream(clientId: string, stream: string, maxStreams: number): Promise<boolean> {
    const r = this.#r
    return num(await r.do((c) => r.eval(c, PUT_STREAM, [this.#streams()], [clientId, stream, maxStreams]))) === 1
  }

  async getStream(clientId: string): Promise<string | null> {
    const r = this.#r
    return (await r.do((c) => c.hget(this.#streams(), clientId))) ?? null
  }

  async deleteStream(clientId: string): Promise<boolean> {
    const r = this.#r
    return (await r.do((c) => c.hdel(this.#streams(), clientId))) === 1
  }

  async listStreams(): Promise<string[]> {
    const r = this.#r
    return await r.do((c) => c.hkeys(this.#streams()))
  }
}
