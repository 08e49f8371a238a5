/** The contract of queued deliveries (src/store/deliveries/types.ts), run on every store. */
import type { Test } from 'tap'
import type { Setup } from './fixtures.js'

export function deliveriesContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: deliveries are leased to one claimer, retried later, completed once`, async (tt) => {
    const { clock, h, store } = await setup(tt)
    tt.equal(await store.deliveries.enqueue('bcl', 'j1', '{"to":"a"}', 100), 0)
    await store.deliveries.enqueue('bcl', 'j2', '{"to":"b"}', 100)
    await store.deliveries.enqueue('other', 'j1', '{"to":"c"}', 100)
    const other = await h.peer()
    const [mine, theirs] = await Promise.all([store.deliveries.claim('bcl', 10_000, 10), other.deliveries.claim('bcl', 10_000, 10)])
    tt.same([...mine, ...theirs].map((j) => j.id).sort(), ['j1', 'j2'], 'each job to one of two concurrent claimers')
    const j1 = [...mine, ...theirs].find((j) => j.id === 'j1')
    tt.same(j1 && { payload: j1.payload, attempts: j1.attempts, queuedAtMs: j1.queuedAtMs }, { payload: '{"to":"a"}', attempts: 0, queuedAtMs: clock.now() })
    tt.same(await store.deliveries.claim('bcl', 10_000, 10), [], 'leased jobs are not handed out again')

    await store.deliveries.retry('bcl', 'j1', clock.now() + 2000)
    await store.deliveries.complete('bcl', 'j2')
    clock.advance(1999)
    tt.same(await store.deliveries.claim('bcl', 10_000, 10), [], 'not due yet')
    clock.advance(1)
    const again = await store.deliveries.claim('bcl', 10_000, 10)
    tt.same(
      again.map((j) => [j.id, j.attempts]),
      [['j1', 1]],
      'the retried job, once more, its attempts counted; the completed one is gone',
    )
    clock.advance(10_000)
    tt.same(
      (await other.deliveries.claim('bcl', 10_000, 10)).map((j) => j.id),
      ['j1'],
      'a lease that ran out hands the job out again',
    )
    await store.deliveries.complete('bcl', 'j1')
    clock.advance(60_000)
    tt.same(await store.deliveries.claim('bcl', 10_000, 10), [], 'completed')
    await store.deliveries.retry('bcl', 'j1', clock.now())
    tt.same(await store.deliveries.claim('bcl', 10_000, 10), [], 'retrying a completed job queues nothing')
    tt.same(
      (await store.deliveries.claim('other', 10_000, 10)).map((j) => j.payload),
      ['{"to":"c"}'],
      'queues are apart',
    )
  })

  t.test(`${name}: a queue is bounded: the oldest jobs are dropped and counted`, async (tt) => {
    const { clock, store } = await setup(tt)
    for (let i = 0; i < 5; i++) {
      tt.equal(await store.deliveries.enqueue('bcl', `j${i}`, 'x', 5), 0)
      clock.advance(1)
    }
    tt.equal(await store.deliveries.enqueue('bcl', 'j5', 'x', 5), 1, 'one over the bound drops one')
    tt.same(
      (await store.deliveries.claim('bcl', 1000, 10)).map((j) => j.id),
      ['j1', 'j2', 'j3', 'j4', 'j5'],
      'the oldest went, due order',
    )
  })
}
