/**
 * Known browsers on Redis.
 *
 * Keys: `p kbc:{cookie hash}` string {v: sub, e: expires ms}. The earlier
 * `p kb:` records are not read: they were written after a password alone,
 * and a browser is known only after a complete sign-in (every factor), so a
 * stranger who had only the password cannot keep a cookie that passes for
 * the owner's browser. They expire on their own.
 */
import type { RedisConnection } from '../redis/connection.js'
import type { KnownBrowserStore } from './types.js'

export class RedisKnownBrowsers implements KnownBrowserStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(tokenHash: string, sub: string, ttlSec: number): Promise<void> {
    await this.#r.putExpiring(this.#r.key('kbc', tokenHash), sub, ttlSec)
  }

  async get(tokenHash: string): Promise<string | null> {
    return this.#r.getExpiring<string>(this.#r.key('kbc', tokenHash))
  }
}
