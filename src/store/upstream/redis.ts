/**
 * Upstream sign-ins and people on Redis.
 *
 * Keys: `p upl:{stateHash}` string {v: UpstreamLoginRecord, e: expires ms}
 * (taken with GETDEL); `p person:{sub}` string {v: UpstreamPersonRecord, e: expires ms};
 * `p upem:{<lower-cased email>}` hash sub → expires ms of the people whose claims held that email
 * at a sign-in (each read checks the person's record still holds it).
 */
import type { RedisConnection } from '../redis/connection.js'
import { emailKey, emailKeyOf } from '../people/types.js'
import type { UpstreamLoginRecord, UpstreamPersonRecord, UpstreamStore } from './types.js'

export class RedisUpstream implements UpstreamStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async putLogin(stateHash: string, record: UpstreamLoginRecord, ttlSec: number): Promise<void> {
    await this.#r.putExpiring(this.#r.key('upl', stateHash), record, ttlSec)
  }

  async takeLogin(stateHash: string): Promise<UpstreamLoginRecord | null> {
    return this.#r.takeExpiring<UpstreamLoginRecord>(this.#r.key('upl', stateHash))
  }

  async putPerson(sub: string, record: UpstreamPersonRecord, ttlSec: number): Promise<void> {
    await this.#r.putExpiring(this.#r.key('person', sub), record, ttlSec)
    const email = emailKeyOf(record.claims)
    if (email === null) return
    const r = this.#r
    const key = r.key('upem', email)
    const expMs = r.clock.now() + ttlSec * 1000
    await r.do(async (c) => {
      const entries = await c.hgetall(key)
      // Entries of people whose records have lapsed go; the rest stay until the key's own expiry.
      const lapsed = Object.entries(entries).filter(([s, e]) => s !== sub && Number(e) <= r.clock.now())
      if (lapsed.length > 0) await c.hdel(key, ...lapsed.map(([s]) => s))
      await c.hset(key, sub, expMs)
      if ((await c.pttl(key)) < r.ttlMs(expMs)) await c.pexpire(key, r.ttlMs(expMs))
    })
  }

  async getPerson(sub: string): Promise<UpstreamPersonRecord | null> {
    return this.#r.getExpiring<UpstreamPersonRecord>(this.#r.key('person', sub))
  }

  async subsByEmail(email: string): Promise<string[]> {
    const key = emailKey(email)
    const entries = await this.#r.do((c) => c.hgetall(this.#r.key('upem', key)))
    const subs: string[] = []
    for (const [sub, expMs] of Object.entries(entries)) {
      if (Number(expMs) <= this.#r.clock.now()) continue
      // The person may have signed in since with another email: only their latest claims count.
      const person = await this.getPerson(sub)
      if (person !== null && emailKeyOf(person.claims) === key) subs.push(sub)
    }
    return subs
  }
}
