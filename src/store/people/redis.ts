/**
 * Local people and password links on Redis.
 *
 * Keys (every person key under the one hash tag `{people}`, so create and
 * delete are one script on a cluster too; people are few):
 * `p people:{people}u:<username>` hash {r: PersonRecord JSON, v: version};
 * `p people:{people}s:<sub>` string username; `p people:{people}index`
 * sorted set of usernames (score 0, ordered by lex: the list's pages);
 * `p people:{people}off:<username>` "1" when a YAML person is disabled;
 * `p people:{people}e:<lower-cased email>` set of the usernames whose claims hold that email
 * (kept by the same scripts as the record); `p people:{people}e-indexed` "1" once the people
 * created before that index existed were added to it (by the first email lookup of any instance);
 * `p pwlink:{<hash>}` hash {r: PasswordLinkRecord JSON, e: expires ms}.
 */
import { part } from '../redis/keys.js'
import type { RedisConnection } from '../redis/connection.js'
import { num } from '../redis/replies.js'
import { applyChange } from './memory.js'
import { CREATE_PERSON, DELETE_PERSON, SWAP_PERSON, TAKE_PASSWORD_LINK } from './scripts.js'
import {
  emailKey,
  emailKeyOf,
  type PasswordLinkRecord,
  type PeopleStore,
  type PersonChange,
  type PersonCreated,
  type PersonRecord,
  type PersonUpdate,
} from './types.js'

const TAG = 'people'
/** People read per page when the email index is first filled. */
const BACKFILL_PAGE = 100

export class RedisPeople implements PeopleStore {
  readonly #r: RedisConnection
  /** This instance has seen the email index complete (the marker key): no more checks. */
  #emailsIndexed = false

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #person(username: string): string {
    return this.#r.key('people', TAG, `u:${part(username)}`)
  }

  #sub(sub: string): string {
    return this.#r.key('people', TAG, `s:${part(sub)}`)
  }

  #index(): string {
    return this.#r.key('people', TAG, 'index')
  }

  #off(username: string): string {
    return this.#r.key('people', TAG, `off:${part(username)}`)
  }

  /** The set of usernames with this lower-cased email; with none, the index's key (a key of the tag the script leaves alone). */
  #email(email: string | null): string {
    return email === null ? this.#index() : this.#r.key('people', TAG, `e:${part(email)}`)
  }

  #link(hash: string): string {
    return this.#r.key('pwlink', hash)
  }

  async create(record: PersonRecord): Promise<PersonCreated> {
    const r = this.#r
    const reply = await r.do((c) =>
      r.eval(
        c,
        CREATE_PERSON,
        [this.#person(record.username), this.#sub(record.sub), this.#index(), this.#email(emailKeyOf(record.claims))],
        [JSON.stringify(record), record.username, record.version, emailKeyOf(record.claims) === null ? '0' : '1'],
      ),
    )
    const code = num(reply)
    return code === 0 ? 'created' : code === 1 ? 'username_taken' : 'sub_taken'
  }

  async get(username: string): Promise<PersonRecord | null> {
    const raw = await this.#r.do((c) => c.hget(this.#person(username), 'r'))
    return raw === null ? null : (JSON.parse(raw) as PersonRecord)
  }

  async bySub(sub: string): Promise<PersonRecord | null> {
    const username = await this.#r.do((c) => c.get(this.#sub(sub)))
    return username === null ? null : this.get(username)
  }

  /**
   * People created by a version without the email index are added to it once, by the first lookup
   * (a rolling upgrade finds them at once). Racing a change is harmless: each read checks the record.
   */
  async #indexEmails(): Promise<void> {
    if (this.#emailsIndexed) return
    const r = this.#r
    const marker = r.key('people', TAG, 'e-indexed')
    if ((await r.do((c) => c.exists(marker))) === 0) {
      let after: string | null = null
      for (;;) {
        const page = await this.list(after, BACKFILL_PAGE)
        for (const p of page) {
          const email = emailKeyOf(p.claims)
          if (email !== null) await r.do((c) => c.sadd(this.#email(email), p.username))
        }
        const last = page.at(-1)
        if (page.length < BACKFILL_PAGE || last === undefined) break
        after = last.username
      }
      await r.do((c) => c.set(marker, '1'))
    }
    this.#emailsIndexed = true
  }

  async byEmail(email: string): Promise<PersonRecord[]> {
    await this.#indexEmails()
    const key = emailKey(email)
    const names = await this.#r.do((c) => c.smembers(this.#email(key)))
    const people: PersonRecord[] = []
    for (const name of names) {
      const p = await this.get(name)
      // The set and the record change in one script; the check keeps a read between two changes honest.
      if (p !== null && emailKeyOf(p.claims) === key) people.push(p)
    }
    return people
  }

  async update(username: string, ifVersion: number | null, change: PersonChange, atSec: number): Promise<PersonUpdate> {
    const r = this.#r
    // Read, change, compare-and-set on the version read. Without ifVersion a lost race is read again (bounded by the writers).
    for (;;) {
      const current = await this.get(username)
      if (current === null) return { kind: 'missing' }
      if (ifVersion !== null && current.version !== ifVersion) return { kind: 'stale', current }
      const next = applyChange(current, change, atSec)
      const [was, is] = [emailKeyOf(current.claims), emailKeyOf(next.claims)]
      const swapped = await r.do((c) =>
        r.eval(
          c,
          SWAP_PERSON,
          [this.#person(username), this.#email(was), this.#email(is)],
          [current.version, JSON.stringify(next), next.version, username, was === null ? '0' : '1', is === null ? '0' : '1'],
        ),
      )
      if (num(swapped) === 1) return { kind: 'updated', record: next }
      if (ifVersion !== null) {
        const now = await this.get(username)
        return now === null ? { kind: 'missing' } : { kind: 'stale', current: now }
      }
    }
  }

  async delete(username: string): Promise<PersonRecord | null> {
    const r = this.#r
    const current = await this.get(username)
    if (current === null) return null
    const email = emailKeyOf(current.claims)
    const keys = [this.#person(username), this.#sub(current.sub), this.#index(), this.#email(email)]
    const raw = await r.do((c) => r.eval(c, DELETE_PERSON, keys, [username, email === null ? '0' : '1']))
    return typeof raw === 'string' ? (JSON.parse(raw) as PersonRecord) : null
  }

  async list(after: string | null, limit: number): Promise<PersonRecord[]> {
    const r = this.#r
    const names = await r.do((c) => c.zrangebylex(this.#index(), after === null ? '-' : `(${after}`, '+', 'LIMIT', 0, limit))
    const people: PersonRecord[] = []
    for (const name of names) {
      const p = await this.get(name)
      if (p !== null) people.push(p)
    }
    return people
  }

  async setConfigDisabled(username: string, disabled: boolean): Promise<void> {
    const key = this.#off(username)
    await this.#r.do(async (c) => {
      if (disabled) await c.set(key, '1')
      else await c.del(key)
    })
  }

  async configDisabled(username: string): Promise<boolean> {
    return (await this.#r.do((c) => c.exists(this.#off(username)))) === 1
  }

  async putPasswordLink(hash: string, record: PasswordLinkRecord): Promise<void> {
    const r = this.#r
    await r.do((c) => r.putHash(c, this.#link(hash), r.ttlMs(record.expiresAtMs), { r: JSON.stringify(record), e: record.expiresAtMs }))
  }

  async peekPasswordLink(hash: string): Promise<PasswordLinkRecord | null> {
    const r = this.#r
    const [raw, e] = await r.do((c) => c.hmget(this.#link(hash), 'r', 'e'))
    if (!raw || !e || r.clock.now() >= Number(e)) return null
    return JSON.parse(raw) as PasswordLinkRecord
  }

  async takePasswordLink(hash: string): Promise<PasswordLinkRecord | null> {
    const r = this.#r
    const raw = await r.do((c) => r.eval(c, TAKE_PASSWORD_LINK, [this.#link(hash)], [r.clock.now()]))
    return typeof raw === 'string' ? (JSON.parse(raw) as PasswordLinkRecord) : null
  }
}
