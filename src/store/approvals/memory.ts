/** Approvals (issue #41) in memory: one process sees every decision. */
import { copy } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { APPROVAL_KEEP_SEC, type ApprovalRecord, type ApprovalStore, type NewApproval, type OpenResult } from './types.js'

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** Pending or approved and past `expiresAt`: reported as `expired`, never stored so. */
function reported(r: ApprovalRecord, now: number): ApprovalRecord {
  const lapsed = (r.status === 'pending' || r.status === 'approved') && now >= r.expiresAt
  return copy(lapsed ? { ...r, status: 'expired' } : r)
}

function isLive(r: ApprovalRecord, status: 'pending' | 'approved', now: number): boolean {
  return r.status === status && now < r.expiresAt
}

function sameCall(r: ApprovalRecord, clientId: string, grantId: string | null, binding: string): boolean {
  return r.clientId === clientId && r.grantId === grantId && r.binding === binding
}

export class MemoryApprovals implements ApprovalStore, MemoryFamily {
  readonly #s: MemoryScope
  /** sub → id → record. */
  readonly #bySub = new Map<string, Map<string, Mutable<ApprovalRecord>>>()
  /** id → sub. */
  readonly #subOf = new Map<string, string>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#subOf.size
  }

  sweep(nowMs: number): void {
    const now = Math.floor(nowMs / 1000)
    for (const [sub, byId] of this.#bySub) {
      for (const [id, r] of byId)
        if (now >= r.expiresAt + APPROVAL_KEEP_SEC) {
          byId.delete(id)
          this.#subOf.delete(id)
        }
      if (byId.size === 0) this.#bySub.delete(sub)
    }
  }

  #find(id: string): Mutable<ApprovalRecord> | null {
    const sub = this.#subOf.get(id)
    return sub === undefined ? null : (this.#bySub.get(sub)?.get(id) ?? null)
  }

  async open(approval: NewApproval, now: number, maxPerPerson: number, maxPerClient: number): Promise<OpenResult> {
    this.#s.open()
    const mine = [...(this.#bySub.get(approval.sub)?.values() ?? [])]
    const same = mine.find((r) => isLive(r, 'pending', now) && sameCall(r, approval.clientId, approval.grantId, approval.binding))
    if (same) return { outcome: 'pending', record: reported(same, now) }
    if (mine.filter((r) => isLive(r, 'pending', now)).length >= maxPerPerson) return { outcome: 'too_many' }
    let ofClient = 0
    for (const byId of this.#bySub.values()) for (const r of byId.values()) if (r.clientId === approval.clientId && isLive(r, 'pending', now)) ofClient++
    if (ofClient >= maxPerClient) return { outcome: 'too_many' }
    const record: ApprovalRecord = { ...copy(approval), status: 'pending', createdAt: now, decidedAt: null, decidedAcr: null }
    let byId = this.#bySub.get(approval.sub)
    if (!byId) {
      byId = new Map()
      this.#bySub.set(approval.sub, byId)
    }
    byId.set(approval.id, copy(record))
    this.#subOf.set(approval.id, approval.sub)
    return { outcome: 'created', record: copy(record) }
  }

  async get(id: string, now: number): Promise<ApprovalRecord | null> {
    this.#s.open()
    const r = this.#find(id)
    return r === null || now >= r.expiresAt + APPROVAL_KEEP_SEC ? null : reported(r, now)
  }

  async decide(
    id: string,
    sub: string,
    decision: 'approved' | 'denied',
    acr: string | null,
    approvedUntil: number,
    now: number,
  ): Promise<ApprovalRecord | null> {
    this.#s.open()
    const r = this.#bySub.get(sub)?.get(id)
    if (!r || !isLive(r, 'pending', now)) return null
    r.status = decision
    r.decidedAt = now
    r.decidedAcr = acr
    if (decision === 'approved') r.expiresAt = approvedUntil
    return reported(r, now)
  }

  async consume(sub: string, clientId: string, grantId: string | null, binding: string, now: number): Promise<ApprovalRecord | null> {
    this.#s.open()
    for (const r of this.#bySub.get(sub)?.values() ?? []) {
      if (!isLive(r, 'approved', now) || !sameCall(r, clientId, grantId, binding)) continue
      if (r.subject.kind === 'mcp_tool' && r.subject.reuse === 'ttl') return reported(r, now)
      r.status = 'used'
      return reported(r, now)
    }
    return null
  }

  async take(id: string, now: number): Promise<ApprovalRecord | null> {
    this.#s.open()
    const r = this.#find(id)
    if (r === null || !isLive(r, 'approved', now)) return null
    r.status = 'used'
    return reported(r, now)
  }

  async listForPerson(sub: string, now: number, limit: number): Promise<ApprovalRecord[]> {
    this.#s.open()
    return [...(this.#bySub.get(sub)?.values() ?? [])]
      .filter((r) => now < r.expiresAt + APPROVAL_KEEP_SEC)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1))
      .slice(0, limit)
      .map((r) => reported(r, now))
  }

  #cancel(records: Iterable<Mutable<ApprovalRecord>>, now: number, which: (r: ApprovalRecord) => boolean): number {
    let n = 0
    for (const r of records) {
      if (!which(r) || !(isLive(r, 'pending', now) || isLive(r, 'approved', now))) continue
      r.status = 'cancelled'
      r.decidedAt ??= now
      n++
    }
    return n
  }

  async cancelGrant(grantId: string, now: number): Promise<number> {
    this.#s.open()
    let n = 0
    for (const byId of this.#bySub.values()) n += this.#cancel(byId.values(), now, (r) => r.grantId === grantId)
    return n
  }

  async cancelPerson(sub: string, now: number): Promise<number> {
    this.#s.open()
    return this.#cancel(this.#bySub.get(sub)?.values() ?? [], now, () => true)
  }
}
