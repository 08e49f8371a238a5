/** Grants and refresh-token families in memory. */
import { copy } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { byBytes } from '../people/memory.js'
import type { MemoryRevocations } from '../revocations/memory.js'
import type { GrantRecord, GrantStore, RefreshLookup, RotateResult } from './types.js'

interface FamilyEntry {
  grant: GrantRecord
  /** Hash of the current refresh token, or null when none was issued. */
  current: string | null
  /** Every refresh token of the family (current and replaced) → issuedAt (epoch s). */
  tokens: Map<string, number>
  /** Revoked families stay as tombstones so a replayed token still reads `reused`. */
  revoked: boolean
}

export class MemoryGrants implements GrantStore, MemoryFamily {
  readonly #s: MemoryScope
  /** A revoked family's grant id joins the revocation list in the same synchronous step. */
  readonly #revocations: MemoryRevocations
  readonly #families = new Map<string, FamilyEntry>()
  /** Refresh-token hash → grant id. */
  readonly #refreshIndex = new Map<string, string>()
  /** Client id → its grant ids (the admin API's grants of a client). */
  readonly #byClient = new Map<string, Set<string>>()

  constructor(scope: MemoryScope, revocations: MemoryRevocations) {
    this.#s = scope
    this.#revocations = revocations
  }

  get size(): number {
    return this.#families.size + this.#refreshIndex.size
  }

  sweep(nowMs: number): void {
    for (const [gid, f] of this.#families) {
      if (nowMs >= f.grant.expiresAt * 1000) this.#drop(gid, f)
    }
  }

  async create(grant: GrantRecord, refreshHash: string | null): Promise<void> {
    this.#s.open()
    const old = this.#families.get(grant.grantId)
    if (old) this.#drop(grant.grantId, old)
    const tokens = new Map<string, number>()
    if (refreshHash !== null) {
      tokens.set(refreshHash, this.#s.nowSec())
      this.#refreshIndex.set(refreshHash, grant.grantId)
    }
    this.#families.set(grant.grantId, { grant: copy(grant), current: refreshHash, tokens, revoked: false })
    const ofClient = this.#byClient.get(grant.clientId) ?? new Set<string>()
    ofClient.add(grant.grantId)
    this.#byClient.set(grant.clientId, ofClient)
  }

  async listByClient(clientId: string, after: string | null, limit: number): Promise<GrantRecord[]> {
    this.#s.open()
    const ids = [...(this.#byClient.get(clientId) ?? [])].filter((id) => after === null || byBytes(id, after) > 0).sort(byBytes)
    const out: GrantRecord[] = []
    for (const id of ids) {
      if (out.length >= limit) break
      const f = this.#family(id)
      if (f && !f.revoked) out.push(copy(f.grant))
    }
    return out
  }

  async get(grantId: string): Promise<GrantRecord | null> {
    this.#s.open()
    const f = this.#family(grantId)
    return f && !f.revoked ? copy(f.grant) : null
  }

  async noteAccessExp(grantId: string, exp: number): Promise<void> {
    this.#s.open()
    const f = this.#family(grantId)
    if (f && !f.revoked) f.grant.maxAccessExp = Math.max(f.grant.maxAccessExp, exp)
  }

  async rotate(oldHash: string, newHash: string | null, newExpiresAt: number, _grantId?: string, accessExp?: number): Promise<RotateResult> {
    this.#s.open()
    const gid = this.#refreshIndex.get(oldHash)
    const f = gid === undefined ? null : this.#family(gid)
    if (gid === undefined || !f || !f.tokens.has(oldHash)) return { status: 'missing' }
    if (f.current === oldHash && !f.revoked) {
      if (newHash !== null) {
        f.tokens.set(newHash, this.#s.nowSec())
        this.#refreshIndex.set(newHash, gid)
        f.current = newHash
        f.grant.expiresAt = newExpiresAt
      }
      if (accessExp !== undefined) f.grant.maxAccessExp = Math.max(f.grant.maxAccessExp, accessExp)
      return { status: 'rotated', grant: copy(f.grant) }
    }
    if (f.current === oldHash) return { status: 'missing' } // current token of a revoked family
    // A replaced token came back: treat as theft (RFC 9700 4.14.2), revoke the family.
    if (!f.revoked) this.#revokeFamily(gid, f, Math.max(f.grant.maxAccessExp, this.#s.nowSec()))
    return { status: 'reused', grant: copy(f.grant) }
  }

  async findRefresh(refreshHash: string): Promise<RefreshLookup | null> {
    this.#s.open()
    const gid = this.#refreshIndex.get(refreshHash)
    const f = gid === undefined ? null : this.#family(gid)
    const issuedAt = f?.tokens.get(refreshHash)
    if (!f || f.revoked || issuedAt === undefined) return null
    return { grant: copy(f.grant), current: f.current === refreshHash, issuedAt }
  }

  async revoke(grantId: string, until: number): Promise<void> {
    this.#s.open()
    const f = this.#family(grantId)
    if (f && !f.revoked) {
      this.#revokeFamily(grantId, f, Math.max(until, f.grant.maxAccessExp))
    } else {
      this.#revocations.record({ kind: 'grant', id: grantId, exp: Math.max(until, f?.grant.maxAccessExp ?? 0) })
    }
  }

  /** Family → tombstone (tokens kept to recognise reuse) + revocation entry, in one synchronous step. */
  #revokeFamily(grantId: string, f: FamilyEntry, until: number): void {
    f.revoked = true
    this.#revocations.record({ kind: 'grant', id: grantId, exp: until })
  }

  /** The family, or null once its lifetime has passed (then it is dropped). */
  #family(grantId: string): FamilyEntry | null {
    const f = this.#families.get(grantId)
    if (!f) return null
    if (this.#s.nowMs() >= f.grant.expiresAt * 1000) {
      this.#drop(grantId, f)
      return null
    }
    return f
  }

  #drop(grantId: string, f: FamilyEntry): void {
    this.#families.delete(grantId)
    const ofClient = this.#byClient.get(f.grant.clientId)
    ofClient?.delete(grantId)
    if (ofClient?.size === 0) this.#byClient.delete(f.grant.clientId)
    for (const h of f.tokens.keys()) {
      if (this.#refreshIndex.get(h) === grantId) this.#refreshIndex.delete(h)
    }
  }
}
