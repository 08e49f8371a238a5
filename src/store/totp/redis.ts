/**
 * Authenticator apps (TOTP) on Redis.
 *
 * Keys: `p totp:{sub}` string TotpRecord JSON, kept until removed.
 */
import type { RedisConnection } from '../redis/connection.js'
import type { TotpRecord, TotpStore } from './types.js'

export class RedisTotp implements TotpStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(sub: string, record: TotpRecord): Promise<void> {
    await this.#r.do((c) => c.set(this.#r.key('totp', sub), JSON.stringify(record)))
  }

  async get(sub: string): Promise<TotpRecord | null> {
    const raw = await this.#r.do((c) => c.get(this.#r.key('totp', sub)))
    return raw === null ? null : (JSON.parse(raw) as TotpRecord)
  }

  async delete(sub: string): Promise<void> {
    await this.#r.do((c) => c.del(this.#r.key('totp', sub)))
  }
}
