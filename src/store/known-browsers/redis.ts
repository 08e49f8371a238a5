/**
 * Known browsers on Redis.
 *
 * Keys: `p kbc:{cookie hash}` string {v: {sub, at: put ms}, e: expires ms}
 * (written before the time was kept: {v: sub, ...}, read as put at 0). The earlier
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
    await this.#r.putExpiring(this.#r.key('kbc', tokenHash), { sub, at: this.#r.clock.now() }, ttlSec)
  }

  async get(tokenHash: string): Promise<string | null> {
    return (await this.remembered(tokenHash))?.sub ?? null
  }

  async remembered(tokenHash: string): Promise<{ sub: string; atMs: number } | null> {
    const value = await this.#r.getExpiring<unknown>(this.#r.key('kbc', tokenHash))
    if (typeof value === 'string') return { sub: value, atMs: 0 }
    if (typeof value !== 'object' || value === null) return null
    const { sub, at } = value as { sub?: unknown; at?: unknown }
    return typeof sub === 'string' && typeof at === 'number' ? { sub, atMs: at } : null
  }
}
