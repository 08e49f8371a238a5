import t from 'tap'
import { MAX_DELAY_MS, nextFailureCount, restartDelayMs, STABLE_MS } from '../../src/workers/backoff.js'

t.test('restarts back off from 250 ms, doubling, to 30 s; a stable worker starts the count again', async (t) => {
  t.same([1, 2, 3, 4, 5, 6, 7, 8, 9].map(restartDelayMs), [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000])
  t.equal(restartDelayMs(1000), MAX_DELAY_MS, 'no overflow in a long crash loop')
  // A crash loop of workers that die at once: the waits add up to minutes, not a spinning core.
  let failures = 0
  let waited = 0
  for (let i = 0; i < 20; i++) {
    failures = nextFailureCount(failures, 0)
    waited += restartDelayMs(failures)
  }
  t.ok(waited > 6 * 60_000, `20 immediate exits in a row wait ${waited} ms in all`)
  t.equal(nextFailureCount(7, STABLE_MS), 1, 'a worker that served 30 s starts again from the first delay')
  t.equal(nextFailureCount(7, STABLE_MS - 1), 8)
})
