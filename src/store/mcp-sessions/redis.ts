/**
 * MCP session bindings on Redis.
 *
 * Keys: `p mcpsess:{route \n session hash}` string `<until ms>:<owner>`.
 */
import type { RedisConnection } from '../redis/connection.js'
import { num, str } from '../redis/replies.js'
import { BIND_MCP_SESSION, MCP_SESSION_OWNER } from './scripts.js'
import type { McpSessionStore } from './types.js'

export class RedisMcpSessions implements McpSessionStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #key(route: string, sessionHash: string): string {
    return this.#r.key('mcpsess', `${route}\n${sessionHash}`)
  }

  async bind(route: string, sessionHash: string, owner: string, ttlSec: number): Promise<boolean> {
    const r = this.#r
    const now = r.clock.now()
    const ttl = Math.max(1, Math.round(ttlSec * 1000))
    const reply = await r.do((c) => r.eval(c, BIND_MCP_SESSION, [this.#key(route, sessionHash)], [now, ttl, now + ttl, owner]))
    return num(reply) === 1
  }

  async ownerOf(route: string, sessionHash: string, ttlSec: number): Promise<string | null> {
    const r = this.#r
    const now = r.clock.now()
    const ttl = Math.max(1, Math.round(ttlSec * 1000))
    const reply = await r.do((c) => r.eval(c, MCP_SESSION_OWNER, [this.#key(route, sessionHash)], [now, ttl, now + ttl]))
    return reply === null || reply === false ? null : str(reply)
  }
}
