/** Upstream sign-ins and people in memory. */
import { copy, type Expiring, live, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { emailKey, emailKeyOf } from '../people/types.js'
import type { UpstreamLoginRecord, UpstreamPersonRecord, UpstreamStore } from './types.js'

export class MemoryUpstream implements UpstreamStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #logins = new Map<string, Expiring<UpstreamLoginRecord>>()
  readonly #people = new Map<string, Expiring<UpstreamPersonRecord>>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#logins.size + this.#people.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#logins, nowMs)
    sweepExpiring(this.#people, nowMs)
  }

  async putLogin(stateHash: string, record: UpstreamLoginRecord, ttlSec: number): Promise<void> {
    this.#s.open()
    this.#logins.set(stateHash, { value: copy(record), expMs: this.#s.nowMs() + ttlSec * 1000 })
  }

  async takeLogin(stateHash: string): Promise<UpstreamLoginRecord | null> {
    this.#s.open()
    const r = live(this.#logins, stateHash, this.#s.nowMs())
    this.#logins.delete(stateHash)
    return r ? copy(r) : null
  }

  async putPerson(sub: string, record: UpstreamPersonRecord, ttlSec: number): Promise<void> {
    this.#s.open()
    this.#people.set(sub, { value: copy(record), expMs: this.#s.nowMs() + ttlSec * 1000 })
  }

  async getPerson(sub: string): Promise<UpstreamPersonRecord | null> {
    this.#s.open()
    const r = live(this.#people, sub, this.#s.nowMs())
    return r ? copy(r) : null
  }

  async subsByEmail(email: string): Promise<string[]> {
    this.#s.open()
    const key = emailKey(email)
    const now = this.#s.nowMs()
    return [...this.#people].filter(([, p]) => now < p.expMs && emailKeyOf(p.value.claims) === key).map(([sub]) => sub)
  }
}
