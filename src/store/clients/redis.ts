/**
 * Registered clients (RFC 7591) on Redis.
 *
 * Keys: `p client:{id}` hash {r: RegisteredClientRecord JSON, e: expires ms};
 * `p clients:{index}` sorted set of live client ids, score = expiry ms.
 */
import type { RedisConnection } from '../redis/connection.js'
import type { Client } from '../redis/link.js'
import { list, num } from '../redis/replies.js'
import { byBytes } from '../people/memory.js'
import { SEAT_CLIENT, TOUCH_CLIENT } from './scripts.js'
import type { ClientSeat, ClientStore, RegisteredClientRecord } from './types.js'

export class RedisClients implements ClientStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  /**
   * The live registrations are counted in one sorted set (client id, score
   * = expiry ms), kept beside the records: a Redis key cannot be counted by
   * pattern in one step, and the set's single key keeps the seat atomic in
   * a cluster too.
   */
  #index(): string {
    return this.#r.key('clients', 'index')
  }

  #putRecord(c: Client, record: RegisteredClientRecord, expMs: number): Promise<void> {
    const r = this.#r
    return r.putHash(c, r.key('client', record.clientId), r.ttlMs(expMs), { r: JSON.stringify(record), e: expMs })
  }

  async put(record: RegisteredClientRecord): Promise<void> {
    const expMs = record.expiresAt * 1000
    await this.#r.do(async (c) => {
      await this.#putRecord(c, record, expMs)
      await c.zadd(this.#index(), expMs, record.clientId)
    })
  }

  async putWithin(record: RegisteredClientRecord, maxLive: number): Promise<ClientSeat> {
    const r = this.#r
    const expMs = record.expiresAt * 1000
    return r.do(async (c) => {
      const reply = list(await r.eval(c, SEAT_CLIENT, [this.#index()], [r.clock.now(), maxLive, record.clientId, expMs])).map(num)
      const [seated, live = 0, freeAtMs = 0] = reply
      if (seated !== 1) return { stored: false, live, freeAtMs }
      try {
        await this.#putRecord(c, record, expMs)
      } catch (err) {
        // The record was not stored: give the seat back (best effort; it frees itself at expMs anyway).
        await c.zrem(this.#index(), record.clientId).catch(() => undefined)
        throw err
      }
      return { stored: true, live, freeAtMs: 0 }
    })
  }

  async count(): Promise<number> {
    const r = this.#r
    return num(await r.do((c) => c.zcount(this.#index(), `(${r.clock.now()}`, '+inf')))
  }

  /**
   * The index is ordered by expiry, not id: the live ids (at most
   * `registration.max_clients`, the cap) are read and ordered here.
   */
  async list(after: string | null, limit: number): Promise<RegisteredClientRecord[]> {
    const r = this.#r
    const ids = (await r.do((c) => c.zrangebyscore(this.#index(), `(${r.clock.now()}`, '+inf')))
      .filter((id) => after === null || byBytes(id, after) > 0)
      .sort(byBytes)
    const out: RegisteredClientRecord[] = []
    for (const id of ids) {
      if (out.length >= limit) break
      const record = await this.get(id)
      if (record !== null) out.push(record)
    }
    return out
  }

  async get(clientId: string): Promise<RegisteredClientRecord | null> {
    const r = this.#r
    const [raw, e] = await r.do((c) => c.hmget(r.key('client', clientId), 'r', 'e'))
    if (!raw || !e || r.clock.now() >= Number(e)) return null
    const record = JSON.parse(raw) as RegisteredClientRecord
    return { ...record, expiresAt: Math.floor(Number(e) / 1000) }
  }

  async touch(clientId: string, expiresAt: number): Promise<void> {
    const r = this.#r
    const expMs = expiresAt * 1000
    await r.do(async (c) => {
      const moved = await r.eval(c, TOUCH_CLIENT, [r.key('client', clientId)], [expMs, r.ttlMs(expMs), r.clock.now()])
      // XX: a client deleted meanwhile is not counted again; GT: the expiry never moves earlier.
      if (num(moved) === 1) await c.zadd(this.#index(), 'XX', 'GT', expMs, clientId)
    })
  }

  async delete(clientId: string): Promise<boolean> {
    const r = this.#r
    const live = await this.get(clientId)
    const [removed] = await r.do((c) => Promise.all([c.del(r.key('client', clientId)), c.zrem(this.#index(), clientId)]))
    return live !== null && removed === 1
  }
}
