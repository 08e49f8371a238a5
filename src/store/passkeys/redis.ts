/**
 * Passkeys (WebAuthn) on Redis.
 *
 * Keys: `p pkc:{hash}` string {v: PasskeyChallengeRecord, e: expires ms}
 * (taken with GETDEL); `p pk:{sub}` hash r:<credential id> PasskeyRecord
 * JSON, c:<id> counter, b:<id> backed up 1|0, u:<id> last used (s) (the
 * counter script touches this key alone); `p pkid:{id}` string sub: which
 * person a credential id belongs to (SET NX: ids are unique).
 */
import { StoreUnavailableError } from '../../errors.js'
import type { RedisConnection } from '../redis/connection.js'
import { num, str } from '../redis/replies.js'
import { RENAME_PASSKEY, USE_PASSKEY } from './scripts.js'
import type { PasskeyChallengeRecord, PasskeyRecord, PasskeyStore, PasskeyUseResult } from './types.js'

/** A passkey from its fields in `pk:{sub}`, or null when the record field is absent. */
function passkeyFrom(fields: ReadonlyArray<string | null>): PasskeyRecord | null {
  const [r, c, b, u] = fields
  if (!r) return null
  const rest = JSON.parse(r) as Omit<PasskeyRecord, 'counter' | 'backedUp' | 'lastUsedAt'>
  return { ...rest, counter: Number(c ?? 0), backedUp: b === '1', lastUsedAt: u ? Number(u) : null }
}

export class RedisPasskeys implements PasskeyStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async putChallenge(challengeHash: string, record: PasskeyChallengeRecord, ttlSec: number): Promise<void> {
    await this.#r.putExpiring(this.#r.key('pkc', challengeHash), record, ttlSec)
  }

  async takeChallenge(challengeHash: string): Promise<PasskeyChallengeRecord | null> {
    return this.#r.takeExpiring<PasskeyChallengeRecord>(this.#r.key('pkc', challengeHash))
  }

  async add(record: PasskeyRecord): Promise<boolean> {
    const r = this.#r
    const id = record.credentialId
    // The id's owner first, set only if absent: of two people registering one id, one wins.
    const claimed = await r.do((c) => c.set(r.key('pkid', id), record.sub, 'NX'))
    if (claimed === null) return false
    const { counter, backedUp, lastUsedAt, ...rest } = record
    await r.do((c) =>
      c.hset(r.key('pk', record.sub), `r:${id}`, JSON.stringify(rest), `c:${id}`, counter, `b:${id}`, backedUp ? 1 : 0, `u:${id}`, lastUsedAt ?? ''),
    )
    return true
  }

  async get(credentialId: string): Promise<PasskeyRecord | null> {
    const r = this.#r
    const sub = await r.do((c) => c.get(r.key('pkid', credentialId)))
    if (sub === null) return null
    const id = credentialId
    return passkeyFrom(await r.do((c) => c.hmget(r.key('pk', sub), `r:${id}`, `c:${id}`, `b:${id}`, `u:${id}`)))
  }

  async list(sub: string): Promise<PasskeyRecord[]> {
    const all = await this.#r.do((c) => c.hgetall(this.#r.key('pk', sub)))
    const out: PasskeyRecord[] = []
    for (const field of Object.keys(all)) {
      if (!field.startsWith('r:')) continue
      const id = field.slice(2)
      const p = passkeyFrom([all[field] ?? null, all[`c:${id}`] ?? null, all[`b:${id}`] ?? null, all[`u:${id}`] ?? null])
      if (p !== null) out.push(p)
    }
    return out.sort((a, b) => a.createdAt - b.createdAt)
  }

  async rename(sub: string, credentialId: string, name: string): Promise<boolean> {
    const r = this.#r
    const raw = await r.do((c) => c.hget(r.key('pk', sub), `r:${credentialId}`))
    if (!raw) return false
    const record = JSON.stringify({ ...(JSON.parse(raw) as Record<string, unknown>), name })
    return num(await r.do((c) => r.eval(c, RENAME_PASSKEY, [r.key('pk', sub)], [credentialId, record]))) === 1
  }

  async remove(sub: string, credentialId: string): Promise<boolean> {
    const r = this.#r
    const id = credentialId
    const key = r.key('pk', sub)
    // The record field goes first and alone: of concurrent removals exactly one sees it go.
    const removed = await r.do((c) => c.hdel(key, `r:${id}`))
    if (removed === 0) return false
    await r.do((c) => c.hdel(key, `c:${id}`, `b:${id}`, `u:${id}`))
    await r.do((c) => c.del(r.key('pkid', id)))
    return true
  }

  async use(sub: string, credentialId: string, use: { counter: number; backedUp: boolean; at: number }): Promise<PasskeyUseResult> {
    const r = this.#r
    const reply = await r.do((c) => r.eval(c, USE_PASSKEY, [r.key('pk', sub)], [credentialId, use.counter, use.backedUp ? 1 : 0, use.at]))
    const status = str(reply)
    if (status === 'used' || status === 'regressed' || status === 'missing') return status
    throw new StoreUnavailableError(`usePasskey: unexpected reply ${status}`)
  }
}
