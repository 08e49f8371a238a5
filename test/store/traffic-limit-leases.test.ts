/**
 * Leased allowances of rate limits on Redis (src/store/traffic-limits/lease.ts,
 * docs/traffic.md "Leases"): small limits stay exact across instances, a
 * lease is counted in the shared state (never looser) and withholds at most
 * its units from the other instances (stricter, bounded), unused units go
 * back when it expires (only within the run they were counted in), one
 * script call serves many concurrent requests, and an outage is decided by
 * the store's failure, not by a lease. Real Redis; script calls counted with
 * INFO commandstats.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { ManualClock } from '../../src/clock.js'
import { rateRule } from '../../src/gateway/limits/plan.js'
import { RedisStore } from '../../src/store/redis.js'
import { MAX_LEASES } from '../../src/store/traffic-limits/lease.js'
import type { LimitTake, RateRule } from '../../src/store/types.js'
import { eventually } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'

const redis = await startRedis()
t.teardown(() => redis.stop())
const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 })
t.teardown(() => raw.disconnect())

/** How many script calls Redis has run so far (evalsha, and eval after a NOSCRIPT). */
async function scriptCalls(): Promise<number> {
  const info = await raw.info('commandstats')
  let calls = 0
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1])
  return calls
}

function take(key: string, rule: RateRule): LimitTake {
  return { key, cost: 1, rule }
}

function instances(prefix: string, clock: ManualClock): [RedisStore, RedisStore] {
  const keyPrefix = `${redis.prefix}${prefix}:`
  return [
    new RedisStore({ url: redis.url, keyPrefix, clock, commandTimeoutMs: 1000 }),
    new RedisStore({ url: redis.url, keyPrefix, clock, commandTimeoutMs: 1000 }),
  ]
}

/** The TAT Redis holds for `key`, in ms ahead of `nowMs` (the value is `<TAT>|<run>`). */
async function tatAhead(prefix: string, key: string, nowMs: number): Promise<number> {
  const value = await raw.get(`${redis.prefix}${prefix}:tl:{${key}}`)
  return value === null ? 0 : Number(value.split('|')[0]) - nowMs
}

t.test('rules: a lease is 1 % of the limit, only from 2 units (a limit under 200 has none)', async (tt) => {
  tt.equal(rateRule(100, 60_000, 0).lease, undefined)
  tt.equal(rateRule(199, 60_000, 20).lease, undefined)
  tt.equal(rateRule(200, 60_000, 0).lease, 2)
  tt.equal(rateRule(1_000_000, 1_000, 0).lease, 10_000)
})

t.test('a limit of 100 a minute stays exact across two instances: 100 allowed, no lease, every request asks Redis', async (tt) => {
  const clock = new ManualClock()
  const [one, two] = instances('exact', clock)
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const rule = rateRule(100, 60_000, 0)
  await one.trafficLimits.take([take('warm', rule)])
  await two.trafficLimits.take([take('warm', rule)])
  const answers = []
  for (let i = 0; i < 150; i++) answers.push(await (i % 2 === 0 ? one : two).trafficLimits.take([take('small', rule)]))
  tt.equal(answers.filter((a) => a.allowed).length, 100, 'exactly the limit')
  tt.same(
    answers.slice(0, 100).map((a) => a.states[0]?.remaining),
    Array.from({ length: 100 }, (_, i) => 99 - i),
    'each answer counts the other instance’s requests too',
  )
  tt.equal(one.trafficLimits.leases + two.trafficLimits.leases, 0, 'no lease held')
  tt.equal(answers.filter((a) => a.leased === true).length, 0, 'no request decided without Redis')
})

t.test('one script call leases for 50 concurrent requests; the rest are spent here until the lease expires', async (tt) => {
  const clock = new ManualClock()
  const [one, two] = instances('concurrent', clock)
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const rule = rateRule(10_000, 60_000, 0) // a lease of 100 units, 6 ms each: it lives 600 ms
  await one.trafficLimits.take([take('warm', rateRule(10, 60_000, 0))]) // loads the script; no lease, so no give-back call later
  const before = await scriptCalls()
  const answers = await Promise.all(Array.from({ length: 50 }, () => one.trafficLimits.take([take('busy', rule)])))
  tt.equal((await scriptCalls()) - before, 1, 'one script call for the 50')
  tt.ok(
    answers.every((a) => a.allowed),
    'all allowed',
  )
  tt.same(
    answers.map((a) => a.states[0]?.remaining),
    Array.from({ length: 50 }, (_, i) => 9_999 - i),
    'remaining: what Redis said once the lease was counted, plus the units not spent yet',
  )
  tt.equal(answers.filter((a) => a.leased === true).length, 49, 'all but the first decided from the lease')
  tt.equal(await tatAhead('concurrent', 'busy', clock.now()), 100 * 6, 'Redis counted the whole lease of 100')

  clock.advance(599)
  // Decided from the lease at once: a verdict, not a promise (the request takes no extra turn of the event loop).
  const atOnce = one.trafficLimits.take([take('busy', rule)])
  tt.notOk(atOnce instanceof Promise, 'a lease-served request is answered synchronously')
  tt.equal((await atOnce).leased, true)
  tt.equal((await scriptCalls()) - before, 1, 'still within the lease: no call')
  clock.advance(1)
  const renewed = await one.trafficLimits.take([take('busy', rule)])
  tt.equal((await scriptCalls()) - before, 2, 'expired: the next request asks Redis')
  tt.equal(renewed.leased, undefined)
  // 51 spent, 49 given back in the same call, then a new lease of 100 counted from "now" (the old TAT had passed).
  tt.equal(await tatAhead('concurrent', 'busy', clock.now()), 100 * 6, 'the new lease, after the old one’s unused units went back')
})

t.test('two instances: a lease withholds at most its units from the other, and all together never pass the limit', async (tt) => {
  const clock = new ManualClock()
  const [one, two] = instances('bound', clock)
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const rule = rateRule(1000, 3_600_000, 0) // 1000 an hour: a lease of 10, capped at 1 s (its units take 36 s to refill)
  const first = await one.trafficLimits.take([take('client', rule)])
  tt.equal(first.states[0]?.remaining, 999)
  tt.equal(one.trafficLimits.leases, 1, 'instance one holds a lease (9 units left)')
  const answers = await Promise.all(Array.from({ length: 1000 }, () => two.trafficLimits.take([take('client', rule)])))
  const byTwo = answers.filter((a) => a.allowed).length
  tt.equal(byTwo, 990, 'instance two gets the limit minus the 10 units one leased: stricter by at most one lease')
  tt.equal(answers.at(-1)?.states[0]?.waitMs, 3_600_000 / 1000, 'its refusals say when a unit comes back')
  const before = await scriptCalls()
  const spent = []
  for (let i = 0; i < 12; i++) spent.push(await one.trafficLimits.take([take('client', rule)]))
  tt.same(
    spent.map((a) => a.allowed),
    [...Array(9).fill(true), false, false, false],
    'one spends its 9 units, then asks Redis, which refuses',
  )
  tt.equal((await scriptCalls()) - before, 3, 'the 9 without a call; each refusal asks (refusals stay exact, never leased)')
  tt.equal(1 + 9 + byTwo, 1000, 'together: exactly the limit')
})

t.test('unused units go back to Redis when a lease expires, and the other instance gets exactly them', async (tt) => {
  const clock = new ManualClock()
  const [one, two] = instances('giveback', clock)
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const rule = rateRule(1000, 3_600_000, 0)
  await one.trafficLimits.take([take('client', rule)]) // lease of 10, 9 left
  for (let i = 0; i < 4; i++) tt.equal((await one.trafficLimits.take([take('client', rule)])).leased, true)
  const byTwo = (await Promise.all(Array.from({ length: 1000 }, () => two.trafficLimits.take([take('client', rule)])))).filter((a) => a.allowed).length
  tt.equal(byTwo, 990)
  const start = clock.now()
  tt.equal(await tatAhead('giveback', 'client', start), 1000 * 3600, 'the shared state is full: 990 + the lease of 10')
  tt.equal(one.trafficLimits.leases, 1, 'the lease is held while the clock has not reached its end')
  clock.advance(1000) // the lease's end (1 s); a unit refills in 3.6 s, so none has yet
  // The lease's timer gives back the 5 units it did not spend (within a real second; awaited, not slept).
  tt.ok(await eventually(async () => (await tatAhead('giveback', 'client', start)) === 995 * 3600, 3000), 'the TAT moved back by 5 units')
  tt.equal(one.trafficLimits.leases, 0, 'the lease is gone')
  const after = await Promise.all(Array.from({ length: 8 }, () => two.trafficLimits.take([take('client', rule)])))
  tt.equal(after.filter((a) => a.allowed).length, 5, 'instance two gets exactly the 5 given back')
  tt.equal(1 + 4 + byTwo + 5, 1000, 'all together: exactly the limit')
})

t.test('units of a lease from before the TAT passed are not given back into a new run (never looser)', async (tt) => {
  const clock = new ManualClock()
  const [one, two] = instances('run', clock)
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const rule = rateRule(1000, 3_600_000, 0)
  await one.trafficLimits.take([take('client', rule)]) // a lease of 10 (9 unused), TAT 36 s ahead
  clock.advance(36_001) // the TAT has passed: GCRA has forgotten those units
  await two.trafficLimits.take([take('client', rule)]) // a new run: two's lease of 10 from now
  tt.equal(await tatAhead('run', 'client', clock.now()), 10 * 3600)
  await one.trafficLimits.take([take('client', rule)]) // one's lease has expired: its 9 go back with the old run, then a new lease
  tt.equal(await tatAhead('run', 'client', clock.now()), 20 * 3600, 'the 9 stale units were not taken off two’s run: both new leases stay counted')
})

t.test('a give-back never moves the TAT before the end of another instance’s lease (its units stay counted while it may spend them)', async (tt) => {
  const clock = new ManualClock()
  const [one, two] = instances('hold', clock)
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const rule = rateRule(1000, 60_000, 0) // 60 ms a unit, a lease of 10 living 600 ms
  const start = clock.now()
  await one.trafficLimits.take([take('client', rule)]) // one: a lease of 10 from start (TAT start + 600), 9 unspent
  clock.advance(300)
  await two.trafficLimits.take([take('client', rule)]) // two: a lease of 10 (TAT start + 1200), spendable until start + 900
  tt.equal(await tatAhead('hold', 'client', start), 1200)
  clock.advance(300) // one's lease ends; its timer gives back its 9 unspent units
  // Taken off in full, the TAT would be start + 660: past by start + 700, while two may still
  // spend its lease until start + 900 (GCRA would have forgotten units two still spends).
  tt.ok(await eventually(async () => (await tatAhead('hold', 'client', start)) === 900, 3000), 'the TAT stops at the end of two’s lease')
  tt.equal(one.trafficLimits.leases, 0)
  tt.equal(two.trafficLimits.leases, 1, 'two still holds its lease')
})

t.test('outage: a held lease is not spent while the connection is down; waiting requests fail with the lease call', async (tt) => {
  const clock = new ManualClock()
  const own = await startRedis({ own: true })
  const store = new RedisStore({ url: own.url, keyPrefix: `${own.prefix}out:`, clock, commandTimeoutMs: 300 })
  tt.teardown(async () => {
    await store.close()
    await own.stop()
  })
  const rule = rateRule(10_000, 60_000, 0)
  tt.equal((await store.trafficLimits.take([take('k', rule)])).allowed, true)
  tt.equal(store.trafficLimits.leases, 1)
  await own.kill()
  const answers = await Promise.allSettled(Array.from({ length: 5 }, () => store.trafficLimits.take([take('k', rule), take('other', rule)])))
  tt.same(
    answers.map((a) => (a.status === 'rejected' && a.reason instanceof Error ? a.reason.name : a.status)),
    Array(5).fill('StoreUnavailableError'),
    'on_store_failure decides, as without leases',
  )
  const held = await Promise.allSettled([store.trafficLimits.take([take('k', rule)])])
  tt.equal(held[0]?.status, 'rejected', 'the lease of k (99 units, unexpired) is not spent while Redis is down')
  await own.restart()
  tt.ok(
    await eventually(async () => {
      try {
        return (await store.trafficLimits.take([take('k', rule)])).allowed
      } catch {
        return false
      }
    }, 10_000),
    'back after the restart',
  )
})

t.test('at most MAX_LEASES leases per instance: keys beyond are decided per request, exactly', async (tt) => {
  const clock = new ManualClock()
  const [one, two] = instances('many', clock)
  tt.teardown(async () => {
    await one.close()
    await two.close()
  })
  const rule = rateRule(1000, 60_000, 0)
  const keys = MAX_LEASES + 200
  const answers = await Promise.all(Array.from({ length: keys }, (_, i) => one.trafficLimits.take([take(`client-${i}`, rule)])))
  tt.equal(answers.filter((a) => a.allowed).length, keys, 'every first request allowed')
  tt.equal(one.trafficLimits.leases, MAX_LEASES, `${MAX_LEASES} leases held, not ${keys}`)
  const last = `client-${keys - 1}`
  tt.equal(await tatAhead('many', last, clock.now()), 60, 'a key past the bound counted its one request only')
  tt.equal(await tatAhead('many', 'client-0', clock.now()), 600, 'a key within it counted a lease of 10')
})
