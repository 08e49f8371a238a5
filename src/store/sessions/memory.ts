/** Browser sessions and remembered consent in memory. */
import { copy, type Expiring, live, pairKey, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { type ConsentStore, type EndedSession, MAX_CLIENTS_PER_SESSION, MAX_SESSIONS_PER_PERSON, type SessionRecord, type SessionStore } from './types.js'

/** One stored session: the record and the clients that received an id_token in it. */
interface Held {
  record: SessionRecord
  clients: Set<string>
}

/** An index: key → (session id → expires ms). */
type Index = Map<string, Map<string, number>>

function indexAdd(index: Index, key: string, sessionId: string, expMs: number): Map<string, number> {
  let ids = index.get(key)
  if (ids === undefined) {
    ids = new Map()
    index.set(key, ids)
  }
  ids.set(sessionId, expMs)
  return ids
}

function indexRemove(index: Index, key: string, sessionId: string): void {
  const ids = index.get(key)
  if (ids === undefined) return
  ids.delete(sessionId)
  if (ids.size === 0) index.delete(key)
}

function indexSweep(index: Index, nowMs: number): void {
  for (const [key, ids] of index) {
    for (const [id, expMs] of ids) if (nowMs >= expMs) ids.delete(id)
    if (ids.size === 0) index.delete(key)
  }
}

export class MemorySessions implements SessionStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #sessions = new Map<string, Expiring<Held>>()
  readonly #bySub: Index = new Map()
  readonly #byProviderSid: Index = new Map()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#sessions.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#sessions, nowMs)
    indexSweep(this.#bySub, nowMs)
    indexSweep(this.#byProviderSid, nowMs)
  }

  async put(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void> {
    this.#s.open()
    const now = this.#s.nowMs()
    const expMs = now + ttlSec * 1000
    const prior = live(this.#sessions, sessionId, now)
    if (prior !== null) this.#unindex(sessionId, prior.record)
    this.#sessions.set(sessionId, { value: { record: copy(record), clients: prior?.clients ?? new Set() }, expMs })
    const mine = indexAdd(this.#bySub, record.sub, sessionId, expMs)
    for (const [id, e] of mine) if (now >= e) mine.delete(id)
    // Over the bound: the sessions soonest to expire end, so every live one stays findable.
    const over = mine.size - MAX_SESSIONS_PER_PERSON
    if (over > 0) for (const [id] of [...mine].sort((a, b) => a[1] - b[1]).slice(0, over)) this.#take(id, now)
    if (record.providerSid !== undefined && record.provider !== undefined) {
      indexAdd(this.#byProviderSid, pairKey(record.provider, record.providerSid), sessionId, expMs)
    }
  }

  async get(sessionId: string): Promise<SessionRecord | null> {
    this.#s.open()
    const r = live(this.#sessions, sessionId, this.#s.nowMs())
    return r ? copy(r.record) : null
  }

  async delete(sessionId: string): Promise<EndedSession | null> {
    this.#s.open()
    return this.#take(sessionId, this.#s.nowMs())
  }

  async noteClient(sessionId: string, clientId: string): Promise<void> {
    this.#s.open()
    const r = live(this.#sessions, sessionId, this.#s.nowMs())
    if (r !== null && r.clients.size < MAX_CLIENTS_PER_SESSION) r.clients.add(clientId)
  }

  async endAllOf(sub: string): Promise<EndedSession[]> {
    this.#s.open()
    return this.#endAll(this.#bySub.get(sub))
  }

  async endByProviderSession(provider: string, providerSid: string): Promise<EndedSession[]> {
    this.#s.open()
    return this.#endAll(this.#byProviderSid.get(pairKey(provider, providerSid)))
  }

  #endAll(ids: Map<string, number> | undefined): EndedSession[] {
    if (ids === undefined) return []
    const now = this.#s.nowMs()
    const ended: EndedSession[] = []
    for (const id of [...ids.keys()]) {
      const e = this.#take(id, now)
      if (e !== null) ended.push(e)
    }
    return ended
  }

  /** Remove the session and its index entries in one synchronous step; what it was if live. */
  #take(sessionId: string, nowMs: number): EndedSession | null {
    const held = live(this.#sessions, sessionId, nowMs)
    this.#sessions.delete(sessionId)
    if (held === null) return null
    this.#unindex(sessionId, held.record)
    return { record: copy(held.record), clients: [...held.clients] }
  }

  #unindex(sessionId: string, record: SessionRecord): void {
    indexRemove(this.#bySub, record.sub, sessionId)
    if (record.provider !== undefined && record.providerSid !== undefined) {
      indexRemove(this.#byProviderSid, pairKey(record.provider, record.providerSid), sessionId)
    }
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
