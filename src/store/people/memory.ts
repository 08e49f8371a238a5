/** Local people and password links in memory. */
import { copy } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
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

export class MemoryPeople implements PeopleStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #people = new Map<string, PersonRecord>()
  readonly #bySub = new Map<string, string>()
  readonly #configDisabled = new Set<string>()
  readonly #links = new Map<string, PasswordLinkRecord>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#links.size
  }

  sweep(nowMs: number): void {
    // People are kept until deleted; only the links expire.
    for (const [hash, link] of this.#links) if (nowMs >= link.expiresAtMs) this.#links.delete(hash)
  }

  async create(record: PersonRecord): Promise<PersonCreated> {
    this.#s.open()
    if (this.#people.has(record.username)) return 'username_taken'
    if (this.#bySub.has(record.sub)) return 'sub_taken'
    this.#people.set(record.username, copy(record))
    this.#bySub.set(record.sub, record.username)
    return 'created'
  }

  async get(username: string): Promise<PersonRecord | null> {
    this.#s.open()
    const p = this.#people.get(username)
    return p === undefined ? null : copy(p)
  }

  async bySub(sub: string): Promise<PersonRecord | null> {
    this.#s.open()
    const username = this.#bySub.get(sub)
    return username === undefined ? null : this.get(username)
  }

  async byEmail(email: string): Promise<PersonRecord[]> {
    this.#s.open()
    const key = emailKey(email)
    return [...this.#people.values()].filter((p) => emailKeyOf(p.claims) === key).map((p) => copy(p))
  }

  async update(username: string, ifVersion: number | null, change: PersonChange, atSec: number): Promise<PersonUpdate> {
    this.#s.open()
    const p = this.#people.get(username)
    if (p === undefined) return { kind: 'missing' }
    if (ifVersion !== null && p.version !== ifVersion) return { kind: 'stale', current: copy(p) }
    const next = applyChange(p, change, atSec)
    this.#people.set(username, next)
    return { kind: 'updated', record: copy(next) }
  }

  async delete(username: string): Promise<PersonRecord | null> {
    this.#s.open()
    const p = this.#people.get(username)
    if (p === undefined) return null
    this.#people.delete(username)
    this.#bySub.delete(p.sub)
    return copy(p)
  }

  async list(after: string | null, limit: number): Promise<PersonRecord[]> {
    this.#s.open()
    const names = [...this.#people.keys()].filter((u) => after === null || byBytes(u, after) > 0).sort(byBytes)
    return names.slice(0, limit).map((u) => copy(this.#people.get(u) as PersonRecord))
  }

  async setConfigDisabled(username: string, disabled: boolean): Promise<void> {
    this.#s.open()
    if (disabled) this.#configDisabled.add(username)
    else this.#configDisabled.delete(username)
  }

  async configDisabled(username: string): Promise<boolean> {
    this.#s.open()
    return this.#configDisabled.has(username)
  }

  async putPasswordLink(hash: string, record: PasswordLinkRecord): Promise<void> {
    this.#s.open()
    this.#links.set(hash, copy(record))
  }

  async peekPasswordLink(hash: string): Promise<PasswordLinkRecord | null> {
    this.#s.open()
    const link = this.#links.get(hash)
    if (link === undefined || this.#s.nowMs() >= link.expiresAtMs) return null
    return copy(link)
  }

  async takePasswordLink(hash: string): Promise<PasswordLinkRecord | null> {
    this.#s.open()
    const link = this.#links.get(hash)
    this.#links.delete(hash)
    if (link === undefined || this.#s.nowMs() >= link.expiresAtMs) return null
    return link
  }
}

/** The record after `change`: one version more, updated at `atSec`. */
export function applyChange(p: PersonRecord, change: PersonChange, atSec: number): PersonRecord {
  return {
    ...copy(p),
    ...(change.claims === undefined ? {} : { claims: copy(change.claims) }),
    ...(change.passwordHash === undefined ? {} : { passwordHash: change.passwordHash }),
    ...(change.disabled === undefined ? {} : { disabled: change.disabled }),
    updatedAt: atSec,
    version: p.version + 1,
  }
}

/** Order by UTF-8 bytes, as Redis orders a sorted set by lex: the same pages on both stores. */
export function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}
