/**
 * The revocation list in memory. Entries are published to subscribers of
 * this instance only (there is no other instance).
 */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { REVOCATION_KINDS, type RevocationEntry, type RevocationKind, type RevocationStore } from './types.js'

export interface MemoryRevocationsOptions {
  /** Where a failing revocation subscriber is reported. */
  log?: { error(obj: object, msg: string): void }
}

export class MemoryRevocations implements RevocationStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #revoked: Record<RevocationKind, Map<string, number>> = { jti: new Map(), grant: new Map(), client: new Map() }
  readonly #listeners = new Set<(entry: RevocationEntry) => void>()
  readonly #log: MemoryRevocationsOptions['log']

  constructor(scope: MemoryScope, options: MemoryRevocationsOptions = {}) {
    this.#s = scope
    this.#log = options.log
  }

  get size(): number {
    return this.#revoked.jti.size + this.#revoked.grant.size + this.#revoked.client.size
  }

  sweep(nowMs: number): void {
    const nowSec = Math.floor(nowMs / 1000)
    for (const kind of REVOCATION_KINDS) {
      for (const [id, exp] of this.#revoked[kind]) if (exp < nowSec) this.#revoked[kind].delete(id)
    }
  }

  /** Subscribers are forgotten when the store closes. */
  close(): void {
    this.#listeners.clear()
  }

  async add(entry: RevocationEntry): Promise<void> {
    this.#s.open()
    this.record(entry)
  }

  /** Add and publish in the caller's synchronous step (a grant's revocation is one with its family's). */
  record(entry: RevocationEntry): void {
    const map = this.#revoked[entry.kind]
    const exp = Math.max(entry.exp, map.get(entry.id) ?? entry.exp)
    map.set(entry.id, exp)
    const published: RevocationEntry = { kind: entry.kind, id: entry.id, exp }
    // Delivered after the current transition completes, like a pub/sub message;
    // a throwing subscriber must not become an uncaught exception.
    for (const fn of this.#listeners) {
      queueMicrotask(() => {
        try {
          fn({ ...published })
        } catch (err) {
          this.#log?.error({ err: err instanceof Error ? err.message : String(err) }, 'revocation listener failed')
        }
      })
    }
  }

  async list(): Promise<RevocationEntry[]> {
    this.#s.open()
    const nowSec = this.#s.nowSec()
    const out: RevocationEntry[] = []
    for (const kind of REVOCATION_KINDS) {
      for (const [id, exp] of this.#revoked[kind]) {
        if (exp >= nowSec) out.push({ kind, id, exp })
        else this.#revoked[kind].delete(id)
      }
    }
    return out
  }

  async subscribe(onEntry: (entry: RevocationEntry) => void): Promise<() => Promise<void>> {
    this.#s.open()
    // Wrap so the same function subscribed twice gets two independent subscriptions.
    const fn = (e: RevocationEntry): void => onEntry(e)
    this.#listeners.add(fn)
    return async () => {
      this.#listeners.delete(fn)
    }
  }
}
