/**
 * Grants and refresh-token families on Redis.
 *
 * Keys: `p grant:{gid}` hash {g: grant JSON, exp, max, cur: current hash,
 * rev: revoked-until (tombstone), t:<hash>: issuedAt}; `p rt:{hash}` string
 * grant id (the refresh-token index); `p grantsof:{client id}` sorted set of
 * the client's grant ids (score 0, by lex: the admin API's pages), a hint
 * written beside the family (another slot on a cluster) and cleaned of gone
 * families when listed.
 *
 * The caller gives only a token hash, so `rt:{hash}` maps it to its grant id
 * (one GET), and the rotation script then runs on the grant's key alone and
 * re-checks that the hash is a member of that family (field `t:<hash>`): a
 * race between the lookup and the script can only make it answer `missing`.
 * The new token's index key is written before the script, so once the
 * rotation commits the new token is findable; a leftover index key pointing
 * at a family that does not hold the hash is harmless.
 * On reuse the family becomes a tombstone (`rev`), which still recognises the
 * family's tokens as `reused` (so N concurrent replays of one token give one
 * `rotated` and N-1 `reused`) but serves nothing. On a single node the same
 * script adds the grant to `revoked:{grant}` and publishes; on Cluster that set
 * lives in another slot, so the script publishes and the client adds the entry
 * right after (re-added on any later replay, as ZADD GT is idempotent).
 */
import type { Arg, RedisConnection } from '../redis/connection.js'
import type { Client } from '../redis/link.js'
import { list, num, str } from '../redis/replies.js'
import { durableGrantRevocation, revokedKey } from '../revocations/redis.js'
import { NOTE_ACCESS_EXP, PUT_GRANT, REVOKE_GRANT, ROTATE_REFRESH } from './scripts.js'
import type { GrantRecord, GrantStore, RefreshLookup, RotateResult } from './types.js'

export class RedisGrants implements GrantStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  /** Keys of a revoke-capable script: the revoked-grants set joins only on a single node. */
  #revokeKeys(grantId: string): string[] {
    const grantKey = this.#r.key('grant', grantId)
    return this.#r.cluster ? [grantKey] : [grantKey, revokedKey(this.#r, 'grant')]
  }

  /** Every key a grant's revocation writes (the family's tombstone and the revoked-grants set). */
  #revocationKeys(grantId: string): string[] {
    return [this.#r.key('grant', grantId), revokedKey(this.#r, 'grant')]
  }

  async create(grant: GrantRecord, refreshHash: string | null): Promise<void> {
    const r = this.#r
    const ttl = r.ttlMs(grant.expiresAt * 1000)
    const fields: Record<string, Arg> = {
      g: JSON.stringify(grant),
      exp: grant.expiresAt,
      max: grant.maxAccessExp,
    }
    if (refreshHash !== null) {
      fields.cur = refreshHash
      fields[`t:${refreshHash}`] = Math.floor(r.clock.now() / 1000)
    }
    await r.do(async (c) => {
      // Index first: once the family exists its token is findable. One
      // connection runs its commands in the order written, so on a single
      // node both go out together (one round trip); a cluster may put them
      // on different nodes, so there the index is confirmed first.
      // The family and its client's index (listByClient checks each family): one script on a
      // single node; on a cluster the index is another slot, written beside the family.
      const family = r.key('grant', grant.grantId)
      const index = this.#ofClient(grant.clientId)
      const put = (): Promise<unknown> =>
        r.cluster
          ? Promise.all([r.putHash(c, family, ttl, fields), c.zadd(index, 0, grant.grantId)])
          : r.eval(c, PUT_GRANT, [family, index], [ttl, grant.grantId, ...Object.entries(fields).flat()])
      if (refreshHash === null) await put()
      else if (r.cluster) {
        await c.set(r.key('rt', refreshHash), grant.grantId, 'PX', ttl)
        await put()
      } else await Promise.all([c.set(r.key('rt', refreshHash), grant.grantId, 'PX', ttl), put()])
    })
  }

  #ofClient(clientId: string): string {
    return this.#r.key('grantsof', clientId)
  }

  async listByClient(clientId: string, after: string | null, limit: number): Promise<GrantRecord[]> {
    const r = this.#r
    const index = this.#ofClient(clientId)
    return r.do(async (c) => {
      const out: GrantRecord[] = []
      let from = after
      // Gone families are dropped from the index as they are met, so a page may take more than one read.
      for (;;) {
        const ids = await c.zrangebylex(index, from === null ? '-' : `(${from}`, '+', 'LIMIT', 0, limit)
        const gone: string[] = []
        for (const id of ids) {
          const f = out.length < limit ? await this.#readFamily(c, id, null) : undefined
          if (f === null) gone.push(id)
          else if (f !== undefined) out.push(f.grant)
        }
        if (gone.length > 0) await c.zrem(index, ...gone)
        const last = ids[ids.length - 1]
        if (out.length >= limit || ids.length < limit || last === undefined) return out
        from = last
      }
    })
  }

  /** The family's fields, judged against the clock; null when gone, expired or revoked. */
  async #readFamily(
    c: Client,
    grantId: string,
    tokenHash: string | null,
  ): Promise<{ grant: GrantRecord; current: string | null; issuedAt: number | null } | null> {
    const [g, exp, max, cur, rev, t] = await c.hmget(this.#r.key('grant', grantId), 'g', 'exp', 'max', 'cur', 'rev', `t:${tokenHash ?? ''}`)
    if (!g || !exp || !max || rev) return null
    if (this.#r.clock.now() >= Number(exp) * 1000) return null
    const grant = { ...(JSON.parse(g) as GrantRecord), expiresAt: Number(exp), maxAccessExp: Number(max) }
    return { grant, current: cur ?? null, issuedAt: t ? Number(t) : null }
  }

  async get(grantId: string): Promise<GrantRecord | null> {
    return (await this.#r.do((c) => this.#readFamily(c, grantId, null)))?.grant ?? null
  }

  async noteAccessExp(grantId: string, exp: number): Promise<void> {
    const r = this.#r
    await r.do((c) => r.eval(c, NOTE_ACCESS_EXP, [r.key('grant', grantId)], [exp, r.clock.now()]))
  }

  async rotate(oldHash: string, newHash: string | null, newExpiresAt: number, knownGrantId?: string, accessExp?: number): Promise<RotateResult> {
    const r = this.#r
    return r.do(async (c) => {
      // The script re-checks that oldHash belongs to the family, so a grant id
      // the caller found (findRefresh) saves the index lookup.
      const grantId = knownGrantId ?? (await c.get(r.key('rt', oldHash)))
      if (grantId === null) return { status: 'missing' }
      const rotate = (): Promise<unknown> =>
        r.eval(c, ROTATE_REFRESH, this.#revokeKeys(grantId), [oldHash, newHash ?? '', newExpiresAt, r.clock.now(), grantId, r.channel, accessExp ?? ''])
      let rotated: unknown
      if (newHash === null) rotated = await rotate()
      else {
        // The new token's index before the rotation that issues it: in order on
        // one connection (one round trip on a single node), confirmed first on a cluster.
        const index = (): Promise<unknown> => c.set(r.key('rt', newHash), grantId, 'PX', r.ttlMs(newExpiresAt * 1000))
        if (r.cluster) {
          await index()
          rotated = await rotate()
        } else rotated = (await Promise.all([index(), rotate()]))[1]
      }
      const reply = list(rotated)
      const status = str(reply[0])
      if (status !== 'rotated' && newHash !== null) {
        // The new token was never issued: drop its index key (best effort; it also expires).
        await c.del(r.key('rt', newHash)).catch(() => 0)
      }
      if (status === 'missing') return { status }
      const grant = { ...(JSON.parse(str(reply[1])) as GrantRecord), expiresAt: num(reply[2]), maxAccessExp: num(reply[3]) }
      if (status === 'rotated') return { status, grant }
      await durableGrantRevocation(r, c, grantId, num(reply[4]))
      await r.confirmReplicated(c, this.#revocationKeys(grantId))
      return { status: 'reused', grant }
    })
  }

  async findRefresh(refreshHash: string): Promise<RefreshLookup | null> {
    const r = this.#r
    return r.do(async (c) => {
      const grantId = await c.get(r.key('rt', refreshHash))
      if (grantId === null) return null
      const f = await this.#readFamily(c, grantId, refreshHash)
      if (!f || f.issuedAt === null) return null
      return { grant: f.grant, current: f.current === refreshHash, issuedAt: f.issuedAt }
    })
  }

  async revoke(grantId: string, until: number): Promise<void> {
    const r = this.#r
    await r.do(async (c) => {
      const used = num(await r.eval(c, REVOKE_GRANT, this.#revokeKeys(grantId), [grantId, until, r.clock.now(), r.channel]))
      await durableGrantRevocation(r, c, grantId, used)
      await r.confirmReplicated(c, this.#revocationKeys(grantId))
    })
  }
}
