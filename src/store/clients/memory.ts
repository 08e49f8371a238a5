/** Registered clients (RFC 7591) in memory. */
import { copy } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { byBytes } from '../people/memory.js'
import type { ClientSeat, ClientStore, RegisteredClientRecord } from './types.js'

export class MemoryClients implements ClientStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #clients = new Map<string, RegisteredClientRecord>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#clients.size
  }

  sweep(_nowMs: number): void {
    // Expired registrations are forgotten when read or counted (every registration counts towards the cap).
  }

  async put(record: RegisteredClientRecord): Promise<void> {
    this.#s.open()
    this.#clients.set(record.clientId, copy(record))
  }

  async get(clientId: string): Promise<RegisteredClientRecord | null> {
    this.#s.open()
    const c = this.#live(clientId)
    return c ? copy(c) : null
  }

  async touch(clientId: string, expiresAt: number): Promise<void> {
    this.#s.open()
    const c = this.#live(clientId)
    if (c) c.expiresAt = Math.max(c.expiresAt, expiresAt)
  }

  async delete(clientId: string): Promise<boolean> {
    this.#s.open()
    const c = this.#live(clientId)
    this.#clients.delete(clientId)
    return c !== null
  }

  async putWithin(record: RegisteredClientRecord, maxLive: number): Promise<ClientSeat> {
    this.#s.open()
    // One synchronous step from count to insert: nothing else runs between them.
    const live = this.#liveClients()
    if (live.length >= maxLive) return { stored: false, live: live.length, freeAtMs: live.reduce((m, c) => Math.min(m, c.expiresAt), Infinity) * 1000 }
    this.#clients.set(record.clientId, copy(record))
    return { stored: true, live: live.length + 1, freeAtMs: 0 }
  }

  async count(): Promise<number> {
    this.#s.open()
    return this.#liveClients().length
  }

  async list(after: string | null, limit: number): Promise<RegisteredClientRecord[]> {
    this.#s.open()
    const live = this.#liveClients().filter((c) => after === null || byBytes(c.clientId, after) > 0)
    return live
      .sort((a, b) => byBytes(a.clientId, b.clientId))
      .slice(0, limit)
      .map((c) => copy(c))
  }

  /** The live registrations; the expired ones are forgotten on the way. */
  #liveClients(): RegisteredClientRecord[] {
    const live: RegisteredClientRecord[] = []
    for (const id of [...this.#clients.keys()]) {
      const c = this.#live(id)
      if (c !== null) live.push(c)
    }
    return live
  }

  #live(clientId: string): RegisteredClientRecord | null {
    const c = this.#clients.get(clientId)
    if (!c) return null
    if (this.#s.nowMs() >= c.expiresAt * 1000) {
      this.#clients.delete(clientId)
      return null
    }
    return c
  }
}
