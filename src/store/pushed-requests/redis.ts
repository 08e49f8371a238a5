/**
 * Authorization requests held by reference, on Redis.
 *
 * Keys: `p par:{key}` string {v: PushedRequestRecord, e: expires ms} (taken with GETDEL).
 */
import type { RedisConnection } from '../redis/connection.js'
import type { PushedRequestRecord, PushedRequestStore } from './types.js'

export class RedisPushedRequests implements PushedRequestStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(key: string, record: PushedRequestRecord, ttlSec: number): Promise<void> {
    await this.#r.putExpiring(this.#r.key('par', key), record, ttlSec)
  }

  async get(key: string): Promise<PushedRequestRecord | null> {
    return this.#r.getExpiring<PushedRequestRecord>(this.#r.key('par', key))
  }

  async take(key: string): Promise<PushedRequestRecord | null> {
    return this.#r.takeExpiring<PushedRequestRecord>(this.#r.key('par', key))
  }
}
