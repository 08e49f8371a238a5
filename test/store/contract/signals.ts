/** The contract of the Shared Signals receiver's records (src/store/signals/types.ts), run on every store. */
import type { Test } from 'tap'
import type { Setup } from './fixtures.js'

export function signalsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: shared signals (lease, disabled accounts)`, async (tt) => {
    tt.test('a lease is held by one holder until it expires; its holder renews it', async (t2) => {
      const { clock, store } = await setup(t2)
      t2.equal(await store.signals.lease('poll:idp', 'a', 10_000), true, 'a free lease is taken')
      t2.equal(await store.signals.lease('poll:idp', 'b', 10_000), false, 'another holder is refused while it runs')
      clock.advance(9_000)
      t2.equal(await store.signals.lease('poll:idp', 'a', 10_000), true, 'the holder renews it')
      clock.advance(9_000)
      t2.equal(await store.signals.lease('poll:idp', 'b', 10_000), false, 'the renewal moved its end')
      clock.advance(1_000)
      t2.equal(await store.signals.lease('poll:idp', 'b', 10_000), true, 'an expired lease goes to the next holder')
      t2.equal(await store.signals.lease('poll:idp', 'a', 10_000), false, 'and the old holder no longer has it')
    })
    tt.test('release frees the lease only for its holder', async (t2) => {
      const { store } = await setup(t2)
      await store.signals.lease('poll:x', 'a', 60_000)
      await store.signals.release('poll:x', 'b')
      t2.equal(await store.signals.lease('poll:x', 'b', 60_000), false, "another holder's release changed nothing")
      await store.signals.release('poll:x', 'a')
      t2.equal(await store.signals.lease('poll:x', 'b', 60_000), true, 'released by its holder: free')
    })
    tt.test('20 concurrent holders on a free lease: exactly one gets it, across instances', async (t2) => {
      const { store, h } = await setup(t2)
      const other = await h.peer()
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).signals.lease('poll:burst', `holder-${i}`, 60_000)))
      t2.equal(results.filter((r) => r).length, 1)
    })
    tt.test('a disabled account stays disabled until enabled, on every instance', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      t2.equal(await store.signals.isDisabled('corp:alice'), false)
      await store.signals.disableAccount('corp:alice')
      clock.advance(400 * 86_400_000)
      t2.equal(await other.signals.isDisabled('corp:alice'), true, 'seen by the other instance, with no expiry')
      t2.equal(await other.signals.isDisabled('corp:bob'), false, 'another person is not')
      await other.signals.enableAccount('corp:alice')
      t2.equal(await store.signals.isDisabled('corp:alice'), false, 'enabled again')
    })
    tt.test('a receiver stream: stored per client, seen on every instance, capped, deleted', async (t2) => {
      const { store, h } = await setup(t2)
      const other = await h.peer()
      t2.equal(await store.signals.getStream('rp-1'), null)
      t2.equal(await store.signals.putStream('rp-1', '{"v":1}', 2), true)
      t2.equal(await other.signals.getStream('rp-1'), '{"v":1}', 'the other instance reads it')
      t2.equal(await other.signals.putStream('rp-1', '{"v":2}', 1), true, 'its own stream is replaced even at the cap')
      t2.equal(await store.signals.getStream('rp-1'), '{"v":2}')
      t2.equal(await store.signals.putStream('rp-2', '{}', 2), true)
      t2.equal(await store.signals.putStream('rp-3', '{}', 2), false, 'a new stream past the cap is refused')
      t2.equal(await store.signals.getStream('rp-3'), null, 'and nothing was stored')
      t2.same((await other.signals.listStreams()).sort(), ['rp-1', 'rp-2'])
      t2.equal(await store.signals.deleteStream('rp-1'), true)
      t2.equal(await other.signals.deleteStream('rp-1'), false, 'already gone')
      t2.same(await other.signals.listStreams(), ['rp-2'])
    })
  })
}
