/**
 * Browser sessions and remembered consent on Redis.
 *
 * Keys: `p sess:{sha256(id)}`, `p consent:{sub}:client` strings {v, e: expires ms}.
 * A person's consent keys share `sub`'s hash tag with their allowances
 * (allowances/redis.ts): a withdrawal is one script.
 */
import { hashToken } from '../hash.js'
import type { RedisConnection } from '../redis/connection.js'
import { part } from '../redis/keys.js'
import type { ConsentStore, SessionRecord, SessionStore } from './types.js'

/** Where (sub, client)'s remembered consent is kept. */
export function consentKey(r: RedisConnection, sub: string, clientId: string): string {
  return r.key('consent', sub, `:${part(clientId)}`)
}

export class RedisSessions implements SessionStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  /** Session ids are bearer secrets (cookie values): only their hash becomes a key. */
  #key(sessionId: string): string {
    return this.#r.key('sess', hashToken(sessionId))
  }

  async put(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void> {
    await this.#r.putExpiring(this.#key(sessionId), record, ttlSec)
  }

  async get(sessionId: string): Promise<SessionRecord | null> {
    return this.#r.getExpiring<SessionRecord>(this.#key(sessionId))
  }

  async delete(sessionId: string): Promise<void> {
    await this.#r.do((c) => c.del(this.#key(sessionId)))
  }
}

export class RedisConsents implements ConsentStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(sub: string, clientId: string, scopes: string[], ttlSec: number): Promise<void> {
    await this.#r.putExpiring(consentKey(this.#r, sub, clientId), scopes, ttlSec)
  }

  async get(sub: string, clientId: string): Promise<string[] | null> {
    return this.#r.getExpiring<string[]>(consentKey(this.#r, sub, clientId))
  }
}
