/** What a person allowed, in memory. */
import { type Expiring, live, pairKey, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { MemoryConsents } from '../sessions/memory.js'
import type { AllowanceNote, AllowanceRecord, AllowanceStore } from './types.js'

/** One person's allowance of one client; grant id → until (epoch s). */
interface AllowanceEntry {
  scopes: string[]
  at: number
  expMs: number
  grants: Map<string, number>
}

function liveGrantIds(e: AllowanceEntry, nowMs: number): string[] {
  return [...e.grants].filter(([, until]) => nowMs < until * 1000).map(([gid]) => gid)
}

export class MemoryAllowances implements AllowanceStore, MemoryFamily {
  readonly #s: MemoryScope
  /** A withdrawal forgets the remembered consent in the same synchronous step. */
  readonly #consents: MemoryConsents
  /** sub → client id → allowance. */
  readonly #allowances = new Map<string, Map<string, AllowanceEntry>>()
  /** pairKey(sub, client) → when (ms) the person withdrew that client, kept for the code's lifetime. */
  readonly #withdrawals = new Map<string, Expiring<number>>()

  constructor(scope: MemoryScope, consents: MemoryConsents) {
    this.#s = scope
    this.#consents = consents
  }

  get size(): number {
    return this.#allowances.size + this.#withdrawals.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#withdrawals, nowMs)
    for (const [sub, byClient] of this.#allowances) {
      for (const [clientId, e] of byClient) if (nowMs >= e.expMs) byClient.delete(clientId)
      if (byClient.size === 0) this.#allowances.delete(sub)
    }
  }

  async note(sub: string, clientId: string, note: AllowanceNote): Promise<boolean> {
    this.#s.open()
    const now = this.#s.nowMs()
    const withdrawnAt = live(this.#withdrawals, pairKey(sub, clientId), now)
    if (note.authorizedAtMs !== undefined && withdrawnAt !== null && withdrawnAt >= note.authorizedAtMs) return false
    let byClient = this.#allowances.get(sub)
    if (!byClient) {
      byClient = new Map()
      this.#allowances.set(sub, byClient)
    }
    const untilMs = note.until * 1000
    const old = byClient.get(clientId)
    const e: AllowanceEntry = old && now < old.expMs ? old : { scopes: [], at: 0, expMs: 0, grants: new Map() }
    for (const s of note.scopes) if (!e.scopes.includes(s)) e.scopes.push(s)
    e.at = Math.max(e.at, note.at)
    e.expMs = Math.max(e.expMs, untilMs)
    if (note.grantId !== null) e.grants.set(note.grantId, Math.max(e.grants.get(note.grantId) ?? 0, note.until))
    byClient.set(clientId, e)
    return true
  }

  async list(sub: string): Promise<AllowanceRecord[]> {
    this.#s.open()
    const now = this.#s.nowMs()
    const out: AllowanceRecord[] = []
    for (const [clientId, e] of this.#allowances.get(sub) ?? []) {
      if (now >= e.expMs) continue
      out.push({ clientId, scopes: [...e.scopes], allowedAt: e.at, grantIds: liveGrantIds(e, now) })
    }
    return out
  }

  async withdraw(sub: string, clientId: string, rememberSec: number): Promise<string[]> {
    this.#s.open()
    const now = this.#s.nowMs()
    this.#consents.forget(sub, clientId)
    const key = pairKey(sub, clientId)
    const old = this.#withdrawals.get(key)
    const keptMs = old !== undefined && now < old.expMs ? old.expMs : 0
    this.#withdrawals.set(key, { value: now, expMs: Math.max(keptMs, now + rememberSec * 1000) })
    const byClient = this.#allowances.get(sub)
    const e = byClient?.get(clientId)
    byClient?.delete(clientId)
    if (byClient?.size === 0) this.#allowances.delete(sub)
    return e ? liveGrantIds(e, now) : []
  }
}
