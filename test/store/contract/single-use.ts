/** The contract of single-use values (src/store/single-use/types.ts), run on every store. */
import type { Test } from 'tap'
import type { Setup } from './fixtures.js'

export function singleUseContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: single-use values (useOnce)`, async (tt) => {
    tt.test('first use records, a second within the lifetime is refused, after it is accepted again', async (t2) => {
      const { clock, store } = await setup(t2)
      t2.equal(await store.singleUse.use('jkt:jti-1', 60), true, 'first use')
      t2.equal(await store.singleUse.use('jkt:jti-1', 60), false, 'replay refused')
      t2.equal(await store.singleUse.use('jkt:jti-2', 60), true, 'another key is independent')
      clock.advance(59_999)
      t2.equal(await store.singleUse.use('jkt:jti-1', 60), false, 'still remembered just before the end of its lifetime')
      clock.advance(1)
      t2.equal(await store.singleUse.use('jkt:jti-1', 60), true, 'forgotten once its lifetime has passed')
      t2.equal(await store.singleUse.use('jkt:jti-1', 60), false, 'and remembered again')
    })
    tt.test('a key used through one instance is refused through the other', async (t2) => {
      const { store, h } = await setup(t2)
      const other = await h.peer()
      t2.equal(await store.singleUse.use('k:{odd}:key', 30), true)
      t2.equal(await other.singleUse.use('k:{odd}:key', 30), false)
    })
    tt.test('50 concurrent uses of one key: exactly one accepted', async (t2) => {
      const { store } = await setup(t2)
      const results = await Promise.all(Array.from({ length: 50 }, () => store.singleUse.use('burst', 60)))
      t2.equal(results.filter((r) => r).length, 1)
    })
  })
}
