/** Browser sessions and remembered consent in memory. */
import { copy, type Expiring, live, pairKey, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { ConsentStore, SessionRecord, SessionStore } from './types.js'

export class MemorySessions implements SessionStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #sessions = new Map<string, Expiring<SessionRecord>>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#sessions.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#sessions, nowMs)
  }

  async put(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void> {
    this.#s.open()
    this.#sessions.set(sessionId, { value: copy(record), expMs: this.#s.nowMs() + ttlSec * 1000 })
  }

  async get(sessionId: string): Promise<SessionRecord | null> {
    this.#s.open()
    const r = live(this.#sessions, sessionId, this.#s.nowMs())
    return r ? copy(r) : null
  }

  async delete(sessionId: string): Promise<void> {
    this.#s.open()
    this.#sessions.delete(sessionId)
  }
}

export class MemoryConsents implements ConsentStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #consents = new Map<string, Expiring<string[]>>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#consents.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#consents, nowMs)
  }

  async put(sub: string, clientId: string, scopes: string[], ttlSec: number): Promise<void> {
    this.#s.open()
    this.#consents.set(pairKey(sub, clientId), { value: [...scopes], expMs: this.#s.nowMs() + ttlSec * 1000 })
  }

  async get(sub: string, clientId: string): Promise<string[] | null> {
    this.#s.open()
    const r = live(this.#consents, pairKey(sub, clientId), this.#s.nowMs())
    return r ? [...r] : null
  }

  /** Forget (sub, client)'s consent in the caller's synchronous step (a withdrawal). */
  forget(sub: string, clientId: string): void {
    this.#consents.delete(pairKey(sub, clientId))
  }
}
