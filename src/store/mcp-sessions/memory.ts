/** MCP session bindings in memory. */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { McpSessionStore } from './types.js'

export class MemoryMcpSessions implements McpSessionStore, MemoryFamily {
  readonly #s: MemoryScope
  /** `route \n session hash` → owner and epoch ms until which the binding holds. */
  readonly #bound = new Map<string, { owner: string; until: number }>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#bound.size
  }

  sweep(nowMs: number): void {
    for (const [k, b] of this.#bound) if (nowMs >= b.until) this.#bound.delete(k)
  }

  async bind(route: string, sessionHash: string, owner: string, ttlSec: number): Promise<boolean> {
    this.#s.open()
    const now = this.#s.nowMs()
    const key = `${route}\n${sessionHash}`
    const held = this.#bound.get(key)
    if (held !== undefined && now < held.until && held.owner !== owner) return false
    this.#bound.set(key, { owner, until: now + ttlSec * 1000 })
    return true
  }

  async ownerOf(route: string, sessionHash: string, ttlSec: number): Promise<string | null> {
    this.#s.open()
    const now = this.#s.nowMs()
    const held = this.#bound.get(`${route}\n${sessionHash}`)
    if (held === undefined || now >= held.until) return null
    held.until = now + ttlSec * 1000
    return held.owner
  }
}
