/** The contract of authorization codes (src/store/codes/types.ts), run on every store. */
import type { Test } from 'tap'
import { token, codeRecord, type Setup } from './fixtures.js'

export function codesContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: authorization codes`, async (tt) => {
    tt.test('Issued → Used exactly once; a replay sees the tombstone and the linked grant', async (t2) => {
      const { clock, store } = await setup(t2)
      const code = token()
      const rec = codeRecord(clock)
      await store.codes.put(code.hash, rec, 60)
      const first = await store.codes.take(code.hash)
      t2.same(first, { status: 'taken', record: rec })
      t2.same(await store.codes.take(code.hash), { status: 'used', record: rec, grantId: null })
      await store.codes.linkGrant(code.hash, 'grant-1')
      t2.same(await store.codes.take(code.hash), { status: 'used', record: rec, grantId: 'grant-1' })
    })

    tt.test('unknown code is missing; linking it creates nothing', async (t2) => {
      const { store } = await setup(t2)
      const code = token()
      await store.codes.linkGrant(code.hash, 'grant-1')
      t2.same(await store.codes.take(code.hash), { status: 'missing' })
    })

    tt.test('linking an unused code does not mark it used', async (t2) => {
      const { clock, store } = await setup(t2)
      const code = token()
      await store.codes.put(code.hash, codeRecord(clock), 60)
      await store.codes.linkGrant(code.hash, 'grant-1')
      t2.equal((await store.codes.take(code.hash)).status, 'taken')
    })

    tt.test('an expired code cannot be taken; the tombstone lives until the original expiry', async (t2) => {
      const { clock, store } = await setup(t2)
      const a = token()
      const b = token()
      await store.codes.put(a.hash, codeRecord(clock, 60), 60)
      await store.codes.put(b.hash, codeRecord(clock, 60), 60)
      t2.equal((await store.codes.take(b.hash)).status, 'taken')
      clock.advance(59_000)
      t2.equal((await store.codes.take(b.hash)).status, 'used', 'tombstone still there just before expiry')
      clock.advance(1_000)
      t2.same(await store.codes.take(a.hash), { status: 'missing' }, 'expired unused code')
      t2.same(await store.codes.take(b.hash), { status: 'missing' }, 'tombstone gone after expiry')
    })

    tt.test('50 concurrent exchanges of one code: exactly one taken', async (t2) => {
      const { clock, store } = await setup(t2)
      const code = token()
      await store.codes.put(code.hash, codeRecord(clock), 60)
      const results = await Promise.all(Array.from({ length: 50 }, () => store.codes.take(code.hash)))
      t2.equal(results.filter((r) => r.status === 'taken').length, 1)
      t2.equal(results.filter((r) => r.status === 'used').length, 49)
    })
  })
}
