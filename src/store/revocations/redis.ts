/**
 * The revocation list on Redis.
 *
 * Keys: `p revoked:{jti}`, `p revoked:{grant}` sorted sets, score = exp
 * (epoch s); channel `p revocations` carries each entry as JSON (pubsub.ts).
 */
import type { RedisConnection } from '../redis/connection.js'
import type { Client } from '../redis/link.js'
import type { RevocationFeed } from '../redis/pubsub.js'
import { num, str } from '../redis/replies.js'
import { ADD_REVOCATION } from './scripts.js'
import { REVOCATION_KINDS, type RevocationEntry, type RevocationKind, type RevocationStore } from './types.js'

const KINDS: readonly RevocationKind[] = REVOCATION_KINDS

/** The sorted set of revoked ids of one kind. */
export function revokedKey(r: RedisConnection, kind: RevocationKind): string {
  return r.key('revoked', kind)
}

/**
 * Cluster only: write the revoked-grants entry a grant script could not (the
 * set lives in another slot than the family; the script published already).
 */
export async function durableGrantRevocation(r: RedisConnection, c: Client, grantId: string, until: number): Promise<void> {
  if (!r.cluster) return
  await r.eval(c, ADD_REVOCATION, [revokedKey(r, 'grant')], ['grant', grantId, until, r.clock.now(), r.channel, '0'])
}

export class RedisRevocations implements RevocationStore {
  readonly #r: RedisConnection
  readonly #feed: RevocationFeed

  constructor(r: RedisConnection, feed: RevocationFeed) {
    this.#r = r
    this.#feed = feed
  }

  async add(entry: RevocationEntry): Promise<void> {
    const r = this.#r
    const key = revokedKey(r, entry.kind)
    await r.do(async (c) => {
      await r.eval(c, ADD_REVOCATION, [key], [entry.kind, entry.id, entry.exp, r.clock.now(), r.channel, '1'])
      await r.confirmReplicated(c, [key])
    })
  }

  async list(): Promise<RevocationEntry[]> {
    const r = this.#r
    const nowSec = Math.floor(r.clock.now() / 1000)
    return r.do(async (c) => {
      const replies = await Promise.all(KINDS.map((kind) => c.zrangebyscore(revokedKey(r, kind), nowSec, '+inf', 'WITHSCORES')))
      const out: RevocationEntry[] = []
      KINDS.forEach((kind, i) => {
        const flat = replies[i] ?? []
        for (let j = 0; j + 1 < flat.length; j += 2) out.push({ kind, id: str(flat[j]), exp: num(flat[j + 1]) })
      })
      return out
    })
  }

  subscribe(onEntry: (entry: RevocationEntry) => void, onFeed?: (up: boolean) => void): Promise<() => Promise<void>> {
    return this.#feed.subscribe(onEntry, onFeed)
  }
}
