/** The Shared Signals receiver's records in memory. */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { SignalStore } from './types.js'

/**
 * Disabled accounts held at most: they come only from SETs a configured
 * transmitter signed, but a transmitter that disables a whole directory must
 * not exhaust one process; past this the oldest marker is dropped.
 */
export const MAX_DISABLED_ACCOUNTS = 100_000

export class MemorySignals implements SignalStore, MemoryFamily {
  readonly #s: MemoryScope
  /** Lease name → holder and epoch ms until which it holds. */
  readonly #leases = new Map<string, { holder: string; until: number }>()
  /** Disabled bearward subs, oldest first (a Map keeps insertion order). */
  readonly #disabled = new Map<string, true>()
  /** Receiver client id → its stream (JSON text); bounded by putStream's caller. */
  readonly #streams = new Map<string, string>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#leases.size + this.#disabled.size + this.#streams.size
  }

  sweep(nowMs: number): void {
    for (const [k, l] of this.#leases) if (nowMs >= l.until) this.#leases.delete(k)
  }

  async lease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    this.#s.open()
    const now = this.#s.nowMs()
    const held = this.#leases.get(name)
    if (held !== undefined && held.holder !== holder && now < held.until) return false
    this.#leases.set(name, { holder, until: now + ttlMs })
    return true
  }

  async release(name: string, holder: string): Promise<void> {
    this.#s.open()
    if (this.#leases.get(name)?.holder === holder) this.#leases.delete(name)
  }

  async disableAccount(sub: string): Promise<void> {
    this.#s.open()
    this.#disabled.delete(sub)
    this.#disabled.set(sub, true)
    if (this.#disabled.size > MAX_DISABLED_ACCOUNTS) {
      const oldest = this.#disabled.keys().next().value
      if (oldest !== undefined) this.#disabled.delete(oldest)
    }
  }

  async enableAccount(sub: string): Promise<void> {
    this.#s.open()
    this.#disabled.delete(sub)
  }

  async isDisabled(sub: string): Promise<boolean> {
    this.#s.open()
    return this.#disabled.has(sub)
  }

  async putStream(clientId: string, stream: string, maxStreams: number): Promise<boolean> {
    this.#s.open()
    if (!this.#streams.has(clientId) && this.#streams.size >= maxStreams) return false
    this.#streams.set(clientId, stream)
    return true
  }

  async getStream(clientId: string): Promise<string | null> {
    this.#s.open()
    return this.#streams.get(clientId) ?? null
  }

  async deleteStream(clientId: string): Promise<boolean> {
    this.#s.open()
    return this.#streams.delete(clientId)
  }

  async listStreams(): Promise<string[]> {
    this.#s.open()
    return [...this.#streams.keys()]
  }
}
