/**
 * Known browsers on Redis.
 *
 * Keys: `p kb:{cookie hash}` string {v: sub, e: expires ms}.
 */
import type { RedisConnection } from '../redis/connection.js'
import type { KnownBrowserStore } from './types.js'

export class RedisKnownBrowsers implements KnownBrowserStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(tokenHash: string, sub: string, ttlSec: number): Promise<void> {
    await this.#r.putExpiring(this.#r.key('kb', tokenHash), sub, ttlSec)
  }

  async get(tokenHash: string): Promise<string | null> {
    return this.#r.getExpiring<string>(this.#r.key('kb', tokenHash))
  }
}
