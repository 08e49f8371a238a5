/** The contract of MCP session bindings (src/store/mcp-sessions/types.ts), run on every store. */
import type { Test } from 'tap'
import type { Setup } from './fixtures.js'

export function mcpSessionsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: MCP session bindings`, async (tt) => {
    tt.test('bound once to its owner, never to another, per route', async (t2) => {
      const { store } = await setup(t2)
      t2.equal(await store.mcpSessions.ownerOf('mcp', 's1', 60), null, 'nobody holds an unseen session')
      t2.equal(await store.mcpSessions.bind('mcp', 's1', 'alice', 60), true)
      t2.equal(await store.mcpSessions.bind('mcp', 's1', 'alice', 60), true, 'binding to the same owner again is fine')
      t2.equal(await store.mcpSessions.bind('mcp', 's1', 'bob', 60), false, 'another owner cannot take it')
      t2.equal(await store.mcpSessions.ownerOf('mcp', 's1', 60), 'alice')
      t2.equal(await store.mcpSessions.ownerOf('other-route', 's1', 60), null, 'a binding is per route')
    })
    tt.test('a binding lives while it is used, and is forgotten after its lifetime unused', async (t2) => {
      const { clock, store } = await setup(t2)
      await store.mcpSessions.bind('mcp', 's2', 'alice', 60)
      clock.advance(59_000)
      t2.equal(await store.mcpSessions.ownerOf('mcp', 's2', 60), 'alice', 'a use renews it')
      clock.advance(59_000)
      t2.equal(await store.mcpSessions.ownerOf('mcp', 's2', 60), 'alice', 'still bound 118 s after it was opened')
      clock.advance(60_000)
      t2.equal(await store.mcpSessions.ownerOf('mcp', 's2', 60), null, 'forgotten after 60 s unused')
      t2.equal(await store.mcpSessions.bind('mcp', 's2', 'bob', 60), true, 'an expired binding can be made anew')
    })
    tt.test('seen through the other instance, and of concurrent binds one owner wins', async (t2) => {
      const { store, h } = await setup(t2)
      const other = await h.peer()
      await store.mcpSessions.bind('mcp', 's3', 'alice', 60)
      t2.equal(await other.mcpSessions.ownerOf('mcp', 's3', 60), 'alice')
      const results = await Promise.all(['a', 'b', 'c', 'd'].map((o) => store.mcpSessions.bind('mcp', 'race', o, 60)))
      t2.equal(results.filter((r) => r).length, 1)
    })
  })
}
