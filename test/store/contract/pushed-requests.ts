/** The contract of authorization requests held by reference (src/store/pushed-requests/types.ts), run on every store. */
import type { Test } from 'tap'
import type { ManualClock } from '../../../src/clock.js'
import type { PushedRequestRecord } from '../../../src/store/types.js'
import { nowSec, token, type Setup } from './fixtures.js'

export function pushedRequestsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: pushed authorization requests`, async (tt) => {
    const pushed = (clock: ManualClock): PushedRequestRecord => ({
      clientId: 'web',
      stage: 'pushed',
      params: 'client_id=web&response_type=code&scope=openid',
      signed: false,
      pushed: true,
      expiresAt: nowSec(clock) + 60,
    })
    tt.test('a pushed request is read, then taken once; unknown and expired are null', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const k = token()
      await store.pushedRequests.put(k.hash, pushed(clock), 60)
      t2.same(await (await h.peer()).pushedRequests.get(k.hash), pushed(clock), 'read at another instance, unchanged')
      t2.same(await store.pushedRequests.take(k.hash), pushed(clock), 'taken with everything it held')
      t2.equal(await store.pushedRequests.take(k.hash), null, 'a second take finds nothing')
      t2.equal(await store.pushedRequests.get(k.hash), null, 'nor does a read')
      t2.equal(await store.pushedRequests.get(token().hash), null, 'unknown')
      const late = token()
      await store.pushedRequests.put(late.hash, { ...pushed(clock), stage: 'started', startedAt: nowSec(clock) }, 60)
      clock.advance(60_000)
      t2.equal(await store.pushedRequests.get(late.hash), null, 'expired: not read')
      t2.equal(await store.pushedRequests.take(late.hash), null, 'expired: not taken')
    })
    tt.test('20 concurrent takes of one request: exactly one gets it, also across instances', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      const k = token()
      await store.pushedRequests.put(k.hash, pushed(clock), 60)
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).pushedRequests.take(k.hash)))
      t2.equal(results.filter((r) => r !== null).length, 1)
    })
  })
}
