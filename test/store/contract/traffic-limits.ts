/** The contract of traffic limits (src/store/traffic-limits/types.ts), run on every store: memory, Redis, Redis Cluster. */
import type { Test } from 'tap'
import { rateRule } from '../../../src/gateway/limits/plan.js'
import type { LimitTake, QuotaRule } from '../../../src/store/types.js'
import type { Setup } from './fixtures.js'

/** 5 per 10 s: one every 2 s on average, 5 back to back. */
const FIVE_PER_10S = rateRule(5, 10_000, 0)

function rate(key: string, cost = 1, rule = FIVE_PER_10S): LimitTake {
  return { key, cost, rule }
}

export function trafficLimitsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: a rate limit lets \`limit\` through back to back, then one per interval`, async (tt) => {
    const { clock, store } = await setup(tt)
    const answers = []
    for (let i = 0; i < 6; i++) answers.push(await store.trafficLimits.take([rate('k1')]))
    tt.same(
      answers.map((a) => a.allowed),
      [true, true, true, true, true, false],
    )
    tt.same(answers[0]?.states, [{ remaining: 4, resetMs: 2000, waitMs: 0 }], 'the first: 4 left, whole again in one interval')
    tt.same(answers[4]?.states, [{ remaining: 0, resetMs: 10_000, waitMs: 0 }], 'the fifth: none left')
    tt.same(answers[5]?.states, [{ remaining: 0, resetMs: 10_000, waitMs: 2000 }], 'the sixth waits one interval')
    tt.equal((await store.trafficLimits.take([rate('k2')])).allowed, true, 'another key is not affected')
    clock.advance(1999)
    tt.equal((await store.trafficLimits.take([rate('k1')])).allowed, false, 'not before the interval')
    clock.advance(1)
    tt.same(await store.trafficLimits.take([rate('k1')]), { allowed: true, states: [{ remaining: 0, resetMs: 10_000, waitMs: 0 }] }, 'one more after it')
    clock.advance(10_000)
    tt.same((await store.trafficLimits.take([rate('k1')])).states, [{ remaining: 4, resetMs: 2000, waitMs: 0 }], 'whole again after `per`')
  })

  t.test(`${name}: burst adds to one spike; cost counts several units`, async (tt) => {
    const { store } = await setup(tt)
    const rule = rateRule(2, 10_000, 1)
    const spike = []
    for (let i = 0; i < 4; i++) spike.push((await store.trafficLimits.take([rate('b', 1, rule)])).allowed)
    tt.same(spike, [true, true, true, false], 'limit 2 + burst 1 back to back')
    tt.equal((await store.trafficLimits.take([rate('c', 6)])).allowed, false, 'a cost above the whole allowance is refused')
    tt.equal((await store.trafficLimits.take([rate('c', 5)])).allowed, true, 'a cost of the whole allowance is not')
  })

  t.test(`${name}: concurrent takes count each once`, async (tt) => {
    const { store } = await setup(tt)
    const answers = await Promise.all(Array.from({ length: 30 }, () => store.trafficLimits.take([rate('race')])))
    tt.equal(answers.filter((a) => a.allowed).length, 5, 'exactly the limit of 30 simultaneous requests')
  })

  t.test(`${name}: a quota counts to its limit in its period, a new period starts again`, async (tt) => {
    const { clock, store } = await setup(tt)
    const day = (period: string, endMs: number): QuotaRule => ({ kind: 'quota', limit: 3, period, endMs })
    const end = clock.now() + 3_600_000
    const quota = (rule: QuotaRule): LimitTake => ({ key: 'q', cost: 1, rule })
    const answers = []
    for (let i = 0; i < 4; i++) answers.push(await store.trafficLimits.take([quota(day('d1', end))]))
    tt.same(
      answers.map((a) => a.allowed),
      [true, true, true, false],
    )
    tt.same(answers[2]?.states, [{ remaining: 0, resetMs: 3_600_000, waitMs: 0 }])
    tt.same(answers[3]?.states, [{ remaining: 0, resetMs: 3_600_000, waitMs: 3_600_000 }], 'refused until the period ends')
    clock.advance(3_600_000)
    tt.equal((await store.trafficLimits.take([quota(day('d2', end + 86_400_000))])).allowed, true, 'the next period has its own count')
  })

  t.test(`${name}: a request meets several limits at once; each answers`, async (tt) => {
    const { clock, store } = await setup(tt)
    const quota: LimitTake = { key: 'q-several', cost: 1, rule: { kind: 'quota', limit: 100, period: 'd', endMs: clock.now() + 86_400_000 } }
    const v = await store.trafficLimits.take([rate('several'), quota])
    tt.equal(v.allowed, true)
    tt.equal(v.states.length, 2)
    tt.equal(v.states[0]?.remaining, 4)
    tt.equal(v.states[1]?.remaining, 99)
  })
}
