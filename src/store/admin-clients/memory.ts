/** Admin-managed clients in memory. */
import { copy } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { byBytes } from '../people/memory.js'
import type { AdminClientChange, AdminClientRecord, AdminClientStore, AdminClientUpdate } from './types.js'

export class MemoryAdminClients implements AdminClientStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #clients = new Map<string, AdminClientRecord>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#clients.size
  }

  sweep(_nowMs: number): void {
    // Kept until deleted.
  }

  async create(record: AdminClientRecord): Promise<boolean> {
    this.#s.open()
    if (this.#clients.has(record.clientId)) return false
    this.#clients.set(record.clientId, copy(record))
    return true
  }

  async get(clientId: string): Promise<AdminClientRecord | null> {
    this.#s.open()
    const c = this.#clients.get(clientId)
    return c === undefined ? null : copy(c)
  }

  async update(clientId: string, ifVersion: number | null, change: AdminClientChange, atSec: number): Promise<AdminClientUpdate> {
    this.#s.open()
    const c = this.#clients.get(clientId)
    if (c === undefined) return { kind: 'missing' }
    if (ifVersion !== null && c.version !== ifVersion) return { kind: 'stale', current: copy(c) }
    const next = applyClientChange(c, change, atSec)
    this.#clients.set(clientId, next)
    return { kind: 'updated', record: copy(next) }
  }

  async delete(clientId: string, ifVersion: number | null): Promise<AdminClientUpdate> {
    this.#s.open()
    const c = this.#clients.get(clientId)
    if (c === undefined) return { kind: 'missing' }
    if (ifVersion !== null && c.version !== ifVersion) return { kind: 'stale', current: copy(c) }
    this.#clients.delete(clientId)
    return { kind: 'updated', record: copy(c) }
  }

  async list(after: string | null, limit: number): Promise<AdminClientRecord[]> {
    this.#s.open()
    const ids = [...this.#clients.keys()].filter((id) => after === null || byBytes(id, after) > 0).sort(byBytes)
    return ids.slice(0, limit).map((id) => copy(this.#clients.get(id) as AdminClientRecord))
  }
}

/** The record after `change`: one version more, updated at `atSec`. */
export function applyClientChange(c: AdminClientRecord, change: AdminClientChange, atSec: number): AdminClientRecord {
  const next: AdminClientRecord = { ...copy(c), updatedAt: atSec, version: c.version + 1 }
  if (change.metadata !== undefined) next.metadata = copy(change.metadata)
  if (change.secretHash !== undefined) next.secretHash = change.secretHash
  if (change.previousSecretHash !== undefined) next.previousSecretHash = change.previousSecretHash
  if (change.previousExpiresAt !== undefined) next.previousExpiresAt = change.previousExpiresAt
  if (change.disabled !== undefined) next.disabled = change.disabled
  return next
}
