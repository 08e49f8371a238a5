/**
 * Traffic limits beyond the contract: all-or-nothing across the limits of
 * one request (memory, single-node Redis), the bound on memory keys and what
 * forgetting a key means, and what Redis keeps (hashed keys, TTLs).
 */
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { ManualClock } from '../../src/clock.js'
import { rateRule } from '../../src/gateway/limits/plan.js'
import { MemoryScope } from '../../src/store/memory/scope.js'
import { RedisStore } from '../../src/store/redis.js'
import { MemoryTrafficLimits } from '../../src/store/traffic-limits/memory.js'
import type { LimitTake, TrafficLimitStore } from '../../src/store/types.js'
import { startRedis } from '../helpers/redis.js'

const redis = await startRedis()
t.teardown(() => redis.stop())
const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 })
t.teardown(() => raw.disconnect())

const ONE_PER_MIN = rateRule(1, 60_000, 0)
const TEN_PER_MIN = rateRule(10, 60_000, 0)

function take(key: string, rule = TEN_PER_MIN): LimitTake {
  return { key, cost: 1, rule }
}

async function allOrNothing(tt: Test, limits: TrafficLimitStore): Promise<void> {
  tt.equal((await limits.take([take('narrow', ONE_PER_MIN)])).allowed, true)
  const refused = await limits.take([take('wide'), take('narrow', ONE_PER_MIN)])
  tt.equal(refused.allowed, false, 'the narrow limit refuses')
  tt.same(
    refused.states.map((s) => s.waitMs > 0),
    [false, true],
    'only the narrow limit is the reason',
  )
  tt.equal(refused.states[0]?.remaining, 10, 'the limit with room says where it stands: untouched')
  const wide = await limits.take([take('wide')])
  tt.equal(wide.states[0]?.remaining, 9, 'the refused request was not counted by the limit that had room')
}

t.test('memory: a request one limit refuses is counted by none', async (tt) => {
  const clock = new ManualClock()
  await allOrNothing(tt, new MemoryTrafficLimits(new MemoryScope(clock)))
})

t.test('redis: a request one limit refuses is counted by none (one script, one round trip)', async (tt) => {
  const clock = new ManualClock()
  const store = new RedisStore({ url: redis.url, keyPrefix: `${redis.prefix}aon:`, clock, commandTimeoutMs: 1000 })
  tt.teardown(() => store.close())
  await allOrNothing(tt, store.trafficLimits)
})

t.test('memory: past maxKeys the keys least recently used are forgotten, and start whole again', async (tt) => {
  const clock = new ManualClock()
  const limits = new MemoryTrafficLimits(new MemoryScope(clock), 4)
  for (const key of ['a', 'b', 'c']) await limits.take([take(key, ONE_PER_MIN)])
  tt.equal((await limits.take([take('a', ONE_PER_MIN)])).allowed, false, 'a is counted')
  for (let i = 0; i < 1000; i++) {
    await limits.take([take(`flood-${i}`, ONE_PER_MIN)])
    if (limits.size > 4) tt.fail(`${limits.size} keys held after ${i + 1} flood keys`)
  }
  tt.ok(limits.size <= 4, `1000 distinct keys later, ${limits.size} are held (bound 4)`)
  tt.equal((await limits.take([take('a', ONE_PER_MIN)])).allowed, true, 'a was forgotten: a whole allowance again')
})

t.test('memory: a key in use is kept while others come and go', async (tt) => {
  const clock = new ManualClock()
  const limits = new MemoryTrafficLimits(new MemoryScope(clock), 4)
  await limits.take([take('busy', ONE_PER_MIN)])
  for (let i = 0; i < 100; i++) {
    await limits.take([take(`x-${i}`, ONE_PER_MIN)])
    tt.equal((await limits.take([take('busy', ONE_PER_MIN)])).allowed, false, `still counted after ${i + 1} other keys`)
  }
})

t.test('redis: keys are the caller’s hash under the prefix, and expire by themselves', async (tt) => {
  const clock = new ManualClock()
  const keyPrefix = `${redis.prefix}keys:`
  const store = new RedisStore({ url: redis.url, keyPrefix, clock, commandTimeoutMs: 1000 })
  tt.teardown(() => store.close())
  await store.trafficLimits.take([
    take('hashOfWho'),
    { key: 'hashOfWho2', cost: 1, rule: { kind: 'quota', limit: 5, period: 'd2026-11-28', endMs: clock.now() + 1000 } },
  ])
  const keys = (await raw.keys(`${keyPrefix}*`)).sort()
  tt.same(keys, [`${keyPrefix}tl:{hashOfWho2}d2026-11-28`, `${keyPrefix}tl:{hashOfWho}`])
  const rateTtl = await raw.pttl(`${keyPrefix}tl:{hashOfWho}`)
  tt.ok(rateTtl > 0 && rateTtl <= 6000 + 1000, `a rate key lives until its TAT passes (+1 s): ${rateTtl} ms`)
  const quotaTtl = await raw.pttl(`${keyPrefix}tl:{hashOfWho2}d2026-11-28`)
  tt.ok(quotaTtl > 86_400_000 && quotaTtl <= 86_401_000, `a quota key lives a day past its period: ${quotaTtl} ms`)
})

t.test('redis: two instances racing for the last units get exactly the limit between them', async (tt) => {
  const clock = new ManualClock()
  const keyPrefix = `${redis.prefix}race:`
  const one = new RedisStore({ url: redis.url, keyPrefix, clock, commandTimeoutMs: 1000 })
  const two = new RedisStore({ url: redis.url, keyPrefix, clock, commandTimeoutMs: 1000 })
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).trafficLimits.take([take('contested')])))
  tt.equal(answers.filter((a) => a.allowed).length, 10, '40 simultaneous requests through two instances, limit 10')
})

/** How many script calls Redis has run so far (`INFO commandstats`: evalsha, and eval after a NOSCRIPT). */
async function scriptCalls(): Promise<number> {
  const info = await raw.info('commandstats')
  let calls = 0
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1])
  return calls
}

t.test('redis: the requests of one event-loop turn are decided by one script call, in order', async (tt) => {
  const clock = new ManualClock()
  const store = new RedisStore({ url: redis.url, keyPrefix: `${redis.prefix}batch:`, clock, commandTimeoutMs: 1000 })
  tt.teardown(() => store.close())
  await store.trafficLimits.take([take('warm')]) // loads the script, so the count below is of EVALSHA alone
  const before = await scriptCalls()
  // Twelve requests against one limit of ten, two of them also against a limit of one, sent in the same turn.
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) => store.trafficLimits.take(i === 3 || i === 4 ? [take('shared'), take('single', ONE_PER_MIN)] : [take('shared')])),
  )
  tt.equal((await scriptCalls()) - before, 1, 'one script call for the twelve')
  tt.same(
    answers.map((a) => a.allowed),
    [true, true, true, true, false, true, true, true, true, true, true, false],
    'decided one after another: the second request on the single limit is refused and counted nowhere, so the shared limit still lets ten in',
  )
  tt.same(
    answers.filter((a) => a.allowed).map((a) => a.states[0]?.remaining),
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    'each allowed request sees what the earlier ones counted',
  )
  tt.equal(answers[4]?.states[0]?.remaining, 6, 'the refused request reports the shared limit as it stays')
})

t.test('redis: a burst larger than one call is split, and decided exactly', async (tt) => {
  const clock = new ManualClock()
  const store = new RedisStore({ url: redis.url, keyPrefix: `${redis.prefix}split:`, clock, commandTimeoutMs: 1000 })
  tt.teardown(() => store.close())
  await store.trafficLimits.take([take('warm')])
  const before = await scriptCalls()
  const hundred = rateRule(100, 60_000, 0)
  // 600 requests, each against two limits: 1,200 keys, more than one call holds (256).
  const answers = await Promise.all(Array.from({ length: 600 }, (_, i) => store.trafficLimits.take([take('burst', hundred), take(`own-${i}`, hundred)])))
  const calls = (await scriptCalls()) - before
  tt.ok(calls >= 5 && calls <= 10, `split into a few calls of at most 256 keys (${calls})`)
  tt.equal(answers.filter((a) => a.allowed).length, 100, 'exactly the limit is allowed')
})

t.test('redis: a failing script call refuses every request of its batch with StoreUnavailableError', async (tt) => {
  const clock = new ManualClock()
  const dead = await startRedis()
  const store = new RedisStore({ url: dead.url, keyPrefix: `${dead.prefix}down:`, clock, commandTimeoutMs: 300 })
  tt.teardown(() => store.close())
  await store.trafficLimits.take([take('warm')])
  await dead.stop()
  const answers = await Promise.allSettled(Array.from({ length: 3 }, () => store.trafficLimits.take([take('x')])))
  tt.same(
    answers.map((a) => (a.status === 'rejected' && a.reason instanceof Error ? a.reason.name : a.status)),
    ['StoreUnavailableError', 'StoreUnavailableError', 'StoreUnavailableError'],
  )
})
