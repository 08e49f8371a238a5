/**
 * Upstream sign-ins and people on Redis.
 *
 * Keys: `p upl:{stateHash}` string {v: UpstreamLoginRecord, e: expires ms}
 * (taken with GETDEL); `p person:{sub}` string {v: UpstreamPersonRecord, e: expires ms}.
 */
import type { RedisConnection } from '../redis/connection.js'
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
  }

  async getPerson(sub: string): Promise<UpstreamPersonRecord | null> {
    return this.#r.getExpiring<UpstreamPersonRecord>(this.#r.key('person', sub))
  }
}
