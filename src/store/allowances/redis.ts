/**
 * What a person allowed, on Redis.
 *
 * Keys: `p apps:{sub}` hash client id → JSON {s: scopes, at, e: until ms};
 * `p ugrants:{sub}:client` sorted set of grant ids, score = until (s);
 * `p withdrawn:{sub}:client` when (ms) the person last withdrew the client.
 * apps, ugrants, withdrawn and consent of one sub share its tag: a withdrawal
 * and a note are each one script.
 */
import type { RedisConnection } from '../redis/connection.js'
import { part } from '../redis/keys.js'
import { list, str } from '../redis/replies.js'
import { consentKey } from '../sessions/redis.js'
import { NOTE_ALLOWANCE, WITHDRAW_ALLOWANCE } from './scripts.js'
import type { AllowanceNote, AllowanceRecord, AllowanceStore } from './types.js'

export class RedisAllowances implements AllowanceStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  /** Every client's allowance of `sub`: one hash under the sub's tag, like its consent keys. */
  #allowancesKey(sub: string): string {
    return this.#r.key('apps', sub)
  }

  #grantsKey(sub: string, clientId: string): string {
    return this.#r.key('ugrants', sub, `:${part(clientId)}`)
  }

  /** When (ms) the person last withdrew the client: same tag, so note and withdrawal see it atomically. */
  #withdrawnKey(sub: string, clientId: string): string {
    return this.#r.key('withdrawn', sub, `:${part(clientId)}`)
  }

  async note(sub: string, clientId: string, note: AllowanceNote): Promise<boolean> {
    const r = this.#r
    const noted = await r.do((c) =>
      r.eval(
        c,
        NOTE_ALLOWANCE,
        [this.#allowancesKey(sub), this.#grantsKey(sub, clientId), this.#withdrawnKey(sub, clientId)],
        [clientId, JSON.stringify(note.scopes), note.at, note.grantId ?? '', note.until, r.clock.now(), note.authorizedAtMs ?? ''],
      ),
    )
    return Number(noted) === 1
  }

  async list(sub: string): Promise<AllowanceRecord[]> {
    const r = this.#r
    const now = r.clock.now()
    return r.do(async (c) => {
      const live: Array<{ clientId: string; scopes: string[]; allowedAt: number }> = []
      for (const [clientId, raw] of Object.entries(await c.hgetall(this.#allowancesKey(sub)))) {
        const v = JSON.parse(raw) as { s?: unknown; at?: unknown; e?: unknown }
        if (typeof v.e !== 'number' || now >= v.e) continue
        // cjson writes an empty list as {}: anything but an array of strings is no scopes.
        const scopes = Array.isArray(v.s) ? v.s.filter((x): x is string => typeof x === 'string') : []
        live.push({ clientId, scopes, allowedAt: typeof v.at === 'number' ? v.at : 0 })
      }
      const nowSec = Math.floor(now / 1000)
      const grants = await Promise.all(live.map((a) => c.zrangebyscore(this.#grantsKey(sub, a.clientId), `(${nowSec}`, '+inf')))
      return live.map((a, i) => ({ ...a, grantIds: (grants[i] ?? []).map(str) }))
    })
  }

  async withdraw(sub: string, clientId: string, rememberSec: number): Promise<string[]> {
    const r = this.#r
    const keys = [this.#allowancesKey(sub), this.#grantsKey(sub, clientId), consentKey(r, sub, clientId), this.#withdrawnKey(sub, clientId)]
    return list(await r.do((c) => r.eval(c, WITHDRAW_ALLOWANCE, keys, [clientId, r.clock.now(), Math.ceil(rememberSec * 1000)]))).map(str)
  }
}
