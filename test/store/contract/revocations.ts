/** The contract of the revocation list (src/store/revocations/types.ts), run on every store. */
import type { Test } from 'tap'
import type { RevocationEntry } from '../../../src/store/types.js'
import { eventually } from '../../helpers/http.js'
import { nowSec, type Setup } from './fixtures.js'

export function revocationsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: revocation list`, async (tt) => {
    tt.test('add, list, keep the later exp, forget after exp', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      await store.revocations.add({ kind: 'jti', id: 'j1', exp: now + 60 })
      await store.revocations.add({ kind: 'jti', id: 'j1', exp: now + 30 })
      await store.revocations.add({ kind: 'jti', id: 'j2', exp: now + 120 })
      await store.revocations.add({ kind: 'grant', id: 'g1', exp: now + 60 })
      const sorted = (l: RevocationEntry[]): RevocationEntry[] => [...l].sort((a, b) => (a.kind + a.id).localeCompare(b.kind + b.id))
      t2.same(sorted(await store.revocations.list()), [
        { kind: 'grant', id: 'g1', exp: now + 60 },
        { kind: 'jti', id: 'j1', exp: now + 60 },
        { kind: 'jti', id: 'j2', exp: now + 120 },
      ])
      clock.advance(60_000)
      t2.equal((await store.revocations.list()).length, 3, 'kept through the exp second')
      clock.advance(1_000)
      t2.same(await store.revocations.list(), [{ kind: 'jti', id: 'j2', exp: now + 120 }])
    })

    tt.test('a client entry is kept, listed and published like the others', async (t2) => {
      const { clock, h, store } = await setup(t2)
      const other = await h.peer()
      const seen: RevocationEntry[] = []
      const unsubscribe = await other.revocations.subscribe((e) => seen.push(e))
      t2.teardown(unsubscribe)
      const now = nowSec(clock)
      await store.revocations.add({ kind: 'client', id: 'svc', exp: now + 60 })
      await store.revocations.add({ kind: 'client', id: 'svc', exp: now + 30 })
      t2.same(await other.revocations.list(), [{ kind: 'client', id: 'svc', exp: now + 60 }], 'the later exp is kept, seen by the other instance')
      t2.ok(await eventually(() => seen.some((e) => e.kind === 'client' && e.id === 'svc')), 'published to the other instance')
    })

    tt.test('subscribers receive entries until they unsubscribe', async (t2) => {
      const { clock, store } = await setup(t2)
      const seen: RevocationEntry[] = []
      const unsubscribe = await store.revocations.subscribe((e) => seen.push(e))
      const entry: RevocationEntry = { kind: 'jti', id: 'j-sub', exp: nowSec(clock) + 60 }
      await store.revocations.add(entry)
      t2.ok(await eventually(() => seen.length === 1))
      t2.same(seen, [entry])
      await unsubscribe()
      await store.revocations.add({ kind: 'jti', id: 'j-after', exp: nowSec(clock) + 60 })
      // Proof of quiet: a second subscriber gets the next entry, the first does not.
      const later: RevocationEntry[] = []
      const unsub2 = await store.revocations.subscribe((e) => later.push(e))
      t2.teardown(unsub2)
      await store.revocations.add({ kind: 'jti', id: 'j-last', exp: nowSec(clock) + 60 })
      // Delivery is asynchronous: j-after may reach the second subscriber too; j-last must.
      t2.ok(await eventually(() => later.some((e) => e.id === 'j-last')))
      t2.same(seen, [entry], 'no delivery after unsubscribe')
    })

    tt.test('an entry added through one instance reaches the other', async (t2) => {
      const { clock, h, store } = await setup(t2)
      const other = await h.peer()
      const seen: RevocationEntry[] = []
      const unsubscribe = await other.revocations.subscribe((e) => seen.push(e))
      t2.teardown(unsubscribe)
      const entry: RevocationEntry = { kind: 'grant', id: 'g-peer', exp: nowSec(clock) + 60 }
      await store.revocations.add(entry)
      t2.ok(await eventually(() => seen.length === 1), 'published to the other instance')
      t2.same(seen, [entry])
      t2.same(await other.revocations.list(), [entry], 'listed by the other instance')
    })
  })
}
