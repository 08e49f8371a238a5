/** Passkeys (WebAuthn) and their challenges in memory. */
import { copy, type Expiring, live, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { PasskeyChallengeRecord, PasskeyRecord, PasskeyStore, PasskeyUseResult } from './types.js'

export class MemoryPasskeys implements PasskeyStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #challenges = new Map<string, Expiring<PasskeyChallengeRecord>>()
  /** Passkeys by credential id (ids are unique across people). */
  readonly #passkeys = new Map<string, PasskeyRecord>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#challenges.size + this.#passkeys.size
  }

  sweep(nowMs: number): void {
    sweepExpiring(this.#challenges, nowMs)
  }

  async putChallenge(challengeHash: string, record: PasskeyChallengeRecord, ttlSec: number): Promise<void> {
    this.#s.open()
    this.#challenges.set(challengeHash, { value: copy(record), expMs: this.#s.nowMs() + ttlSec * 1000 })
  }

  async takeChallenge(challengeHash: string): Promise<PasskeyChallengeRecord | null> {
    this.#s.open()
    const r = live(this.#challenges, challengeHash, this.#s.nowMs())
    this.#challenges.delete(challengeHash)
    return r ? copy(r) : null
  }

  async add(record: PasskeyRecord): Promise<boolean> {
    this.#s.open()
    if (this.#passkeys.has(record.credentialId)) return false
    this.#passkeys.set(record.credentialId, copy(record))
    return true
  }

  async get(credentialId: string): Promise<PasskeyRecord | null> {
    this.#s.open()
    const r = this.#passkeys.get(credentialId)
    return r ? copy(r) : null
  }

  async list(sub: string): Promise<PasskeyRecord[]> {
    this.#s.open()
    return [...this.#passkeys.values()]
      .filter((r) => r.sub === sub)
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(copy)
  }

  async rename(sub: string, credentialId: string, name: string): Promise<boolean> {
    this.#s.open()
    const r = this.#passkeys.get(credentialId)
    if (r === undefined || r.sub !== sub) return false
    r.name = name
    return true
  }

  async remove(sub: string, credentialId: string): Promise<boolean> {
    this.#s.open()
    if (this.#passkeys.get(credentialId)?.sub !== sub) return false
    return this.#passkeys.delete(credentialId)
  }

  async use(sub: string, credentialId: string, use: { counter: number; backedUp: boolean; at: number }): Promise<PasskeyUseResult> {
    this.#s.open()
    const r = this.#passkeys.get(credentialId)
    if (r === undefined || r.sub !== sub) return 'missing'
    if ((use.counter > 0 || r.counter > 0) && use.counter <= r.counter) return 'regressed'
    r.counter = use.counter
    r.backedUp = use.backedUp
    r.lastUsedAt = use.at
    return 'used'
  }
}
