/**
 * MCP sessions bound to whoever opened them (issue #38.5): an
 * `Mcp-Session-Id` the gateway saw issued in the answer to `initialize`,
 * by route and the id's hash, and the hash of the opening token's issuer,
 * subject and client. Shared by every instance, so a session opened through
 * one is judged alike through another.
 */
export interface McpSessionStore {
  /**
   * Bind a session to `owner` for `ttlSec`, unless it is bound to another:
   * true when it is now bound to `owner` (newly, or again), false when
   * another owner holds it (the binding is left as it was).
   */
  bind(route: string, sessionHash: string, owner: string, ttlSec: number): Promise<boolean>
  /**
   * The owner a session is bound to, its lifetime renewed to `ttlSec` from
   * now (a session lives while it is used); null when unbound or expired.
   */
  ownerOf(route: string, sessionHash: string, ttlSec: number): Promise<string | null>
}
