/** The contract of rate-limit counters (src/store/rate-limits/types.ts), run on every store. */
import type { Test } from 'tap'
import type { Setup } from './fixtures.js'

export function rateLimitsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: rate-limit counters`, async (tt) => {
    const { clock, store } = await setup(tt)
    tt.equal(await store.rateLimits.count('ip:1'), 0)
    tt.equal(await store.rateLimits.hit('ip:1', 60), 1)
    tt.equal(await store.rateLimits.hit('ip:1', 60), 2)
    clock.advance(59_000)
    tt.equal(await store.rateLimits.hit('ip:1', 60), 3, 'same window')
    tt.equal(await store.rateLimits.count('ip:1'), 3)
    tt.equal(await store.rateLimits.count('ip:2'), 0, 'keys are separate')
    clock.advance(1_000)
    tt.equal(await store.rateLimits.count('ip:1'), 0, 'window over')
    tt.equal(await store.rateLimits.hit('ip:1', 60), 1, 'a new window')
    await store.rateLimits.clear('ip:1')
    tt.equal(await store.rateLimits.count('ip:1'), 0)
    const burst = await Promise.all(Array.from({ length: 30 }, () => store.rateLimits.hit('ip:3', 60)))
    tt.same(
      [...burst].sort((a, b) => a - b),
      Array.from({ length: 30 }, (_, i) => i + 1),
      'concurrent hits count each once',
    )
  })

  t.test(`${name}: a rate-limit window tells when it resets`, async (tt) => {
    const { clock, store } = await setup(tt)
    tt.same(await store.rateLimits.window('w:1'), { count: 0, resetMs: 0 }, 'no window yet')
    const start = clock.now()
    await store.rateLimits.hit('w:1', 30)
    clock.advance(10_000)
    await store.rateLimits.hit('w:1', 30)
    tt.same(await store.rateLimits.window('w:1'), { count: 2, resetMs: start + 30_000 }, 'the window started at the first hit')
    clock.advance(20_000)
    tt.same(await store.rateLimits.window('w:1'), { count: 0, resetMs: 0 }, 'over at resetMs exactly')
    const burst = await Promise.all(Array.from({ length: 20 }, () => store.rateLimits.hit('w:turn', 5)))
    tt.equal(burst.filter((n) => n === 1).length, 1, 'of 20 simultaneous first hits, exactly one opens the window (a turn)')
  })
}
