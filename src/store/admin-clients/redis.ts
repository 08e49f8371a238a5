/**
 * Admin-managed clients on Redis.
 *
 * Keys (every key under the one hash tag `{adminclients}`, so create and
 * delete are one script on a cluster too; such clients are few):
 * `p adminclient:{adminclients}c:<id>` hash {r: AdminClientRecord JSON, v: version};
 * `p adminclient:{adminclients}index` sorted set of ids (score 0, ordered by lex: the list's pages).
 */
import type { RedisConnection } from '../redis/connection.js'
import { part } from '../redis/keys.js'
import { num } from '../redis/replies.js'
import { applyClientChange } from './memory.js'
import { CREATE_ADMIN_CLIENT, DELETE_ADMIN_CLIENT, SWAP_ADMIN_CLIENT } from './scripts.js'
import type { AdminClientChange, AdminClientRecord, AdminClientStore, AdminClientUpdate } from './types.js'

const TAG = 'adminclients'

export class RedisAdminClients implements AdminClientStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #client(clientId: string): string {
    return this.#r.key('adminclient', TAG, `c:${part(clientId)}`)
  }

  #index(): string {
    return this.#r.key('adminclient', TAG, 'index')
  }

  async create(record: AdminClientRecord): Promise<boolean> {
    const r = this.#r
    const reply = await r.do((c) =>
      r.eval(c, CREATE_ADMIN_CLIENT, [this.#client(record.clientId), this.#index()], [JSON.stringify(record), record.clientId, record.version]),
    )
    return num(reply) === 1
  }

  async get(clientId: string): Promise<AdminClientRecord | null> {
    const raw = await this.#r.do((c) => c.hget(this.#client(clientId), 'r'))
    return raw === null ? null : (JSON.parse(raw) as AdminClientRecord)
  }

  async update(clientId: string, ifVersion: number | null, change: AdminClientChange, atSec: number): Promise<AdminClientUpdate> {
    const r = this.#r
    // Read, change, compare-and-set on the version read. Without ifVersion a lost race is read again (bounded by the writers).
    for (;;) {
      const current = await this.get(clientId)
      if (current === null) return { kind: 'missing' }
      if (ifVersion !== null && current.version !== ifVersion) return { kind: 'stale', current }
      const next = applyClientChange(current, change, atSec)
      const swapped = await r.do((c) => r.eval(c, SWAP_ADMIN_CLIENT, [this.#client(clientId)], [current.version, JSON.stringify(next), next.version]))
      if (num(swapped) === 1) return { kind: 'updated', record: next }
      if (ifVersion !== null) {
        const now = await this.get(clientId)
        return now === null ? { kind: 'missing' } : { kind: 'stale', current: now }
      }
    }
  }

  async delete(clientId: string, ifVersion: number | null): Promise<AdminClientUpdate> {
    const r = this.#r
    for (;;) {
      const current = await this.get(clientId)
      if (current === null) return { kind: 'missing' }
      if (ifVersion !== null && current.version !== ifVersion) return { kind: 'stale', current }
      const deleted = await r.do((c) => r.eval(c, DELETE_ADMIN_CLIENT, [this.#client(clientId), this.#index()], [current.version, clientId]))
      if (num(deleted) === 1) return { kind: 'updated', record: current }
      if (ifVersion !== null) {
        const now = await this.get(clientId)
        return now === null ? { kind: 'missing' } : { kind: 'stale', current: now }
      }
    }
  }

  async list(after: string | null, limit: number): Promise<AdminClientRecord[]> {
    const r = this.#r
    const ids = await r.do((c) => c.zrangebylex(this.#index(), after === null ? '-' : `(${after}`, '+', 'LIMIT', 0, limit))
    const clients: AdminClientRecord[] = []
    for (const id of ids) {
      const record = await this.get(id)
      if (record !== null) clients.push(record)
    }
    return clients
  }
}
