/** Authenticator apps (TOTP) in memory, kept until removed. */
import { copy } from '../memory/expiring.js'
import type { MemoryScope } from '../memory/scope.js'
import type { TotpRecord, TotpStore } from './types.js'

export class MemoryTotp implements TotpStore {
  readonly #s: MemoryScope
  readonly #apps = new Map<string, TotpRecord>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  async put(sub: string, record: TotpRecord): Promise<void> {
    this.#s.open()
    this.#apps.set(sub, copy(record))
  }

  async get(sub: string): Promise<TotpRecord | null> {
    this.#s.open()
    const r = this.#apps.get(sub)
    return r === undefined ? null : copy(r)
  }

  async delete(sub: string): Promise<void> {
    this.#s.open()
    this.#apps.delete(sub)
  }
}
