/**
 * Browser sessions and remembered consent on Redis.
 *
 * Keys: `p sess:{sha256(id)}`, `p consent:{sub}:client` strings {v, e: expires ms};
 * `p sessrp:{sha256(id)}` set of the client ids that received an id_token in the session (its
 * tag, so taking a session is one script); `p usess:{sub}` and
 * `p idpsess:{provider sid}:provider` sorted sets of sha256(id) (score = expires ms): the
 * indexes that end a person's sessions, or those of one upstream provider session. An index is
 * written before the session; on Cluster it lies in another slot than the sessions it names, so
 * ending takes the index (one script) and then each session (one script each). A sign-in racing
 * an end of the same person can survive it (documented in docs/threat-model.md).
 * A person's consent keys share `sub`'s hash tag with their allowances
 * (allowances/redis.ts): a withdrawal is one script.
 */
import { hashToken } from '../hash.js'
import type { RedisConnection } from '../redis/connection.js'
import { part } from '../redis/keys.js'
import { list, str } from '../redis/replies.js'
import { INDEX_SESSION, NOTE_SESSION_CLIENT, TAKE_SESSION, TAKE_SESSION_INDEX } from './scripts.js'
import { type ConsentStore, type EndedSession, MAX_CLIENTS_PER_SESSION, MAX_SESSIONS_PER_PERSON, type SessionRecord, type SessionStore } from './types.js'

/** Where (sub, client)'s remembered consent is kept. */
export function consentKey(r: RedisConnection, sub: string, clientId: string): string {
  return r.key('consent', sub, `:${part(clientId)}`)
}

export class RedisSessions implements SessionStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  /** Session ids are bearer secrets (cookie values): only their hash becomes a key, or an index member. */
  #key(sessionId: string): string {
    return this.#r.key('sess', hashToken(sessionId))
  }

  /** The clients of a session (by the hash of its id): same tag as the session, so taking both is one script. */
  #clientsKey(hash: string): string {
    return this.#r.key('sessrp', hash)
  }

  #subKey(sub: string): string {
    return this.#r.key('usess', sub)
  }

  #providerKey(provider: string, providerSid: string): string {
    return this.#r.key('idpsess', providerSid, `:${part(provider)}`)
  }

  async put(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void> {
    const r = this.#r
    const hash = hashToken(sessionId)
    const expMs = r.clock.now() + ttlSec * 1000
    // Indexes first: once the session exists it is findable by person and provider session.
    const evicted = await r.do(async (c) => {
      const index = (key: string): Promise<unknown> => r.eval(c, INDEX_SESSION, [key], [hash, expMs, r.clock.now(), MAX_SESSIONS_PER_PERSON])
      const over = list(await index(this.#subKey(record.sub))).map(str)
      if (record.provider !== undefined && record.providerSid !== undefined) await index(this.#providerKey(record.provider, record.providerSid))
      return over.filter((h) => h !== hash)
    })
    await r.putExpiring(this.#key(sessionId), record, ttlSec)
    for (const h of evicted) await this.#take(h)
  }

  async get(sessionId: string): Promise<SessionRecord | null> {
    return this.#r.getExpiring<SessionRecord>(this.#key(sessionId))
  }

  async delete(sessionId: string): Promise<EndedSession | null> {
    const hash = hashToken(sessionId)
    const ended = await this.#take(hash)
    if (ended === null) return null
    const r = this.#r
    const { record } = ended
    await r.do(async (c) => {
      await c.zrem(this.#subKey(record.sub), hash)
      if (record.provider !== undefined && record.providerSid !== undefined) await c.zrem(this.#providerKey(record.provider, record.providerSid), hash)
    })
    return ended
  }

  async noteClient(sessionId: string, clientId: string): Promise<void> {
    const r = this.#r
    await r.do((c) => r.eval(c, NOTE_SESSION_CLIENT, [this.#key(sessionId), this.#clientsKey(hashToken(sessionId))], [clientId, MAX_CLIENTS_PER_SESSION]))
  }

  async endAllOf(sub: string): Promise<EndedSession[]> {
    return this.#endIndexed(this.#subKey(sub))
  }

  async endByProviderSession(provider: string, providerSid: string): Promise<EndedSession[]> {
    return this.#endIndexed(this.#providerKey(provider, providerSid))
  }

  /** Take the index, then each session it names (another slot on Cluster: one script each). */
  async #endIndexed(indexKey: string): Promise<EndedSession[]> {
    const r = this.#r
    const hashes = list(await r.do((c) => r.eval(c, TAKE_SESSION_INDEX, [indexKey], [r.clock.now()]))).map(str)
    const ended: EndedSession[] = []
    for (const h of hashes) {
      const e = await this.#take(h)
      if (e !== null) ended.push(e)
    }
    return ended
  }

  /** GET and DEL of the session (by the hash of its id) and its clients in one script: of concurrent takes one gets it. */
  async #take(hash: string): Promise<EndedSession | null> {
    const r = this.#r
    const reply = list(await r.do((c) => r.eval(c, TAKE_SESSION, [r.key('sess', hash), this.#clientsKey(hash)], [])))
    const raw = reply[0]
    if (raw === null || raw === false || raw === undefined) return null
    const { v, e } = JSON.parse(str(raw)) as { v: SessionRecord; e: number }
    if (r.clock.now() >= e) return null
    return { record: v, clients: reply.slice(1).map(str) }
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
