import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RedisStore } from '../../src/store/redis.js'
import { RETRY_MS, RevocationList } from '../../src/store/revocation-list.js'
import type { RevocationStore, Store } from '../../src/store/types.js'
import { startRedis, type TestRedis } from '../helpers/redis.js'
import { nowSec, type MakeStore } from './contract.js'
import { eventually } from '../helpers/http.js'

/** Behaviour to impose on a store seen through {@link faulty}. */
interface Faults {
  /** revocations.list and revocations.subscribe reject as if the store were unreachable. */
  down: boolean
  /** revocations.subscribe succeeds but no message is ever delivered (a lost pub/sub). */
  deaf: boolean
  /** Ids of the messages that arrived while deaf and were dropped. */
  dropped: string[]
  /** When set, revocations.list waits for this before answering. */
  gate: Promise<void> | null
  /** The list's feed callback, to report a lost or restored connection as the Redis store does. */
  feed: ((up: boolean) => void) | null
}

/** The same store, with faults switched on and off by the test. */
function faulty(store: Store): { store: Store; faults: Faults } {
  const faults: Faults = { down: false, deaf: false, dropped: [], gate: null, feed: null }
  const revocations: RevocationStore = {
    add: (entry) => store.revocations.add(entry),
    list: async () => {
      if (faults.down) throw new StoreUnavailableError()
      const result = await store.revocations.list()
      if (faults.gate) await faults.gate
      return result
    },
    subscribe: async (fn, onFeed) => {
      if (faults.down) throw new StoreUnavailableError()
      faults.feed = onFeed ?? null
      return store.revocations.subscribe((e) => {
        if (faults.deaf) faults.dropped.push(e.id)
        else fn(e)
      })
    },
  }
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'revocations') return revocations
      const value: unknown = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
  return { store: wrapped, faults }
}

function runRevocationListSuite(t: Test, name: string, makeStore: MakeStore): void {
  const setup = async (tt: Test, resyncSec = 3600, graceSec = 60) => {
    const clock = new ManualClock()
    const h = await makeStore(clock)
    tt.teardown(() => h.cleanup())
    const { store, faults } = faulty(h.store)
    const list = new RevocationList(store, clock, undefined, resyncSec, { graceSec })
    tt.teardown(() => list.stop())
    return { clock, h, store: h.store, faults, list }
  }

  t.test(`${name}: start loads what the store holds`, async (tt) => {
    const { clock, store, list } = await setup(tt)
    await store.revocations.add({ kind: 'jti', id: 'j1', exp: nowSec(clock) + 60 })
    await store.revocations.add({ kind: 'grant', id: 'g1', exp: nowSec(clock) + 60 })
    tt.equal(list.healthy, false, 'not healthy before loading')
    await list.start()
    tt.equal(list.healthy, true)
    tt.equal(list.isRevoked('j1', null), true)
    tt.equal(list.isRevoked(null, 'g1'), true)
    tt.equal(list.isRevoked('other', 'g1'), true, 'either id suffices')
    tt.equal(list.isRevoked('g1', 'j1'), false, 'kinds are separate')
    tt.equal(list.isRevoked(null, undefined), false)
  })

  t.test(`${name}: an entry added through another instance arrives by pub/sub`, async (tt) => {
    const { clock, h, list } = await setup(tt)
    await list.start()
    const other = await h.peer()
    await other.revocations.add({ kind: 'jti', id: 'remote', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => list.isRevoked('remote', null)), 'revoked within a bounded wait')
  })

  t.test(`${name}: add() applies at once; entries end after exp + grace`, async (tt) => {
    const { clock, list } = await setup(tt, 3600, 30)
    await list.start()
    list.add({ kind: 'grant', id: 'g-local', exp: nowSec(clock) + 10 })
    tt.equal(list.isRevoked(null, 'g-local'), true)
    clock.advance(40_000)
    tt.equal(list.isRevoked(null, 'g-local'), true, 'still revoked through the grace period')
    clock.advance(1_000)
    tt.equal(list.isRevoked(null, 'g-local'), false, 'forgotten after exp + grace')
  })

  t.test(`${name}: the grace period survives a resync after the store forgot the entry`, async (tt) => {
    const { clock, store, list } = await setup(tt, 3600, 30)
    await list.start()
    await store.revocations.add({ kind: 'jti', id: 'j-grace', exp: nowSec(clock) + 10 })
    await list.resync()
    clock.advance(20_000)
    tt.same(await store.revocations.list(), [], 'the store has forgotten it')
    await list.resync()
    tt.equal(list.isRevoked('j-grace', null), true, 'the list has not')
  })

  t.test(`${name}: resync heals a subscription that missed a message`, async (tt) => {
    const { clock, store, faults, list } = await setup(tt)
    await list.start()
    faults.deaf = true
    await store.revocations.add({ kind: 'jti', id: 'missed', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => faults.dropped.includes('missed')), 'the message reached the subscription and was dropped')
    tt.equal(list.isRevoked('missed', null), false, 'the message was lost')
    tt.equal(await list.resync(), true)
    tt.equal(list.isRevoked('missed', null), true, 'healed by the resync')
  })

  t.test(`${name}: onRevoked tells each entry learnt: added here, by message, or found by a resync`, async (tt) => {
    const { clock, h, store, faults, list } = await setup(tt)
    await store.revocations.add({ kind: 'jti', id: 'before', exp: nowSec(clock) + 60 })
    await list.start()
    const told: string[] = []
    const unsubscribe = list.onRevoked((e) => told.push(`${e.kind}:${e.id}`))
    list.add({ kind: 'grant', id: 'here', exp: nowSec(clock) + 60 })
    const other = await h.peer()
    await other.revocations.add({ kind: 'jti', id: 'remote', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => told.includes('jti:remote')), 'a message is told')
    faults.deaf = true
    await store.revocations.add({ kind: 'jti', id: 'missed', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => faults.dropped.includes('missed')))
    await list.resync()
    tt.same(told, ['grant:here', 'jti:remote', 'jti:missed'], 'the lost one is told by the resync; what the list held before is not told again')
    unsubscribe()
    list.add({ kind: 'jti', id: 'after', exp: nowSec(clock) + 60 })
    tt.notOk(told.includes('jti:after'), 'not after unsubscribing')
  })

  t.test(`${name}: the periodic resync runs by itself`, async (tt) => {
    const { clock, store, faults, list } = await setup(tt, 0.05)
    await list.start()
    faults.deaf = true
    await store.revocations.add({ kind: 'grant', id: 'by-timer', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => list.isRevoked(null, 'by-timer')), 'picked up by the timer')
  })

  t.test(`${name}: a resync only adds; an entry leaves when its token has expired (plus grace)`, async (tt) => {
    const { clock, list } = await setup(tt)
    await list.start()
    list.add({ kind: 'jti', id: 'only-local', exp: nowSec(clock) + 60 })
    await list.resync()
    tt.equal(list.isRevoked('only-local', null), true, 'a revocation is never withdrawn by a resync')
    clock.advance((60 + 61) * 1000)
    await list.resync()
    tt.equal(list.isRevoked('only-local', null), false, 'forgotten after exp + grace')
  })

  t.test(`${name}: an entry arriving during a resync is kept`, async (tt) => {
    const { clock, faults, list } = await setup(tt)
    await list.start()
    let open: () => void = () => undefined
    faults.gate = new Promise((r) => {
      open = r
    })
    const pending = list.resync()
    list.add({ kind: 'jti', id: 'during', exp: nowSec(clock) + 60 })
    open()
    await pending
    tt.equal(list.isRevoked('during', null), true)
  })

  t.test(`${name}: healthy follows the store`, async (tt) => {
    const { faults, list } = await setup(tt)
    faults.down = true
    await tt.resolves(list.start(), 'start does not throw when the store is down')
    tt.equal(list.healthy, false)
    tt.equal(await list.resync(), false)
    faults.down = false
    tt.equal(await list.resync(), true)
    tt.equal(list.healthy, true)
    faults.down = true
    tt.equal(await list.resync(), false)
    tt.equal(list.healthy, false)
  })

  t.test(`${name}: subscribes late when the store was down at start`, async (tt) => {
    const { clock, h, faults, list } = await setup(tt)
    faults.down = true
    await list.start()
    faults.down = false
    await list.resync()
    const other = await h.peer()
    await other.revocations.add({ kind: 'jti', id: 'late', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => list.isRevoked('late', null)))
  })

  t.test(`${name}: a lost feed makes the list unhealthy at once; its return resyncs and heals a missed message`, async (tt) => {
    const { clock, store, faults, list } = await setup(tt)
    await store.revocations.add({ kind: 'jti', id: 'known', exp: nowSec(clock) + 60 })
    await list.start()
    tt.equal(list.healthy, true)
    faults.feed?.(false)
    tt.equal(list.healthy, false, 'unhealthy in the same tick the store reports the loss')
    tt.equal(list.isRevoked('known', null), true, 'what it knew is still enforced')
    faults.deaf = true // the partition: the message is lost
    await store.revocations.add({ kind: 'jti', id: 'missed', exp: nowSec(clock) + 60 })
    faults.deaf = false
    faults.feed?.(true)
    tt.ok(await eventually(() => list.healthy), 'healthy again after the resync the reconnect triggered')
    tt.equal(list.isRevoked('missed', null), true, 'the entry revoked during the partition was loaded')
  })

  t.test(`${name}: a loss during a resync keeps the list unhealthy until a resync after the return`, async (tt) => {
    const { faults, list } = await setup(tt)
    await list.start()
    let open: () => void = () => undefined
    faults.gate = new Promise((r) => {
      open = r
    })
    const pending = list.resync()
    faults.feed?.(false)
    faults.gate = null
    open()
    tt.equal(await pending, false, 'the resync that saw a loss does not make the list healthy')
    faults.feed?.(true)
    tt.ok(await eventually(() => list.healthy), 'the return triggers a resync that does')
  })

  t.test(`${name}: a return during a resync still gets its own resync`, async (tt) => {
    const { faults, list } = await setup(tt)
    await list.start()
    faults.feed?.(false)
    let open: () => void = () => undefined
    faults.gate = new Promise((r) => {
      open = r
    })
    const pending = list.resync()
    faults.feed?.(true)
    faults.gate = null
    open()
    await pending
    tt.ok(await eventually(() => list.healthy), 'healthy after the resync that followed the return')
  })

  t.test(`${name}: while unhealthy, resyncs are retried without waiting for the period`, async (tt) => {
    const { faults, list } = await setup(tt) // period 3600 s
    await list.start()
    faults.down = true
    tt.equal(await list.resync(), false)
    faults.down = false
    const started = Date.now()
    tt.ok(await eventually(() => list.healthy, 3000), 'healthy again by the retry')
    tt.ok(Date.now() - started < 2000, `within ${Date.now() - started} ms (retry every ${RETRY_MS} ms)`)
  })

  t.test(`${name}: configure() applies a new resync period and grace`, async (tt) => {
    const { clock, store, faults, list } = await setup(tt) // period 3600 s
    await list.start()
    faults.deaf = true
    list.configure(0.05, { graceSec: 5 })
    tt.equal(list.resyncSec, 0.05)
    tt.equal(list.graceSec, 5)
    await store.revocations.add({ kind: 'jti', id: 'by-new-period', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => list.isRevoked('by-new-period', null)), 'picked up by the new period')
    list.add({ kind: 'jti', id: 'short-grace', exp: nowSec(clock) })
    clock.advance(6000)
    tt.equal(list.isRevoked('short-grace', null), false, 'the new grace applies')
  })

  t.test(`${name}: stop() ends the subscription`, async (tt) => {
    const { clock, store, list } = await setup(tt)
    await list.start()
    await list.stop()
    // A subscriber that stays is the witness: once it has the message, the list would have had it too.
    let witnessed = false
    const unsubscribe = await store.revocations.subscribe((e) => {
      if (e.id === 'after-stop') witnessed = true
    })
    tt.teardown(unsubscribe)
    await store.revocations.add({ kind: 'jti', id: 'after-stop', exp: nowSec(clock) + 60 })
    tt.ok(await eventually(() => witnessed), 'the revocation was published')
    tt.equal(list.isRevoked('after-stop', null), false, 'the stopped list did not receive it')
  })
}

t.test('a client entry refuses the tokens of that client that expire at or before it, and no others', async (t) => {
  const clock = new ManualClock(1_700_000_000_000)
  const store = new MemoryStore(clock)
  t.teardown(() => store.close())
  const list = new RevocationList(store, clock, undefined, 3600)
  await list.start()
  t.teardown(() => list.stop())
  const now = Math.floor(clock.now() / 1000)
  list.add({ kind: 'client', id: 'svc', exp: now + 600 })
  t.equal(list.isRevoked('j', null, { id: 'svc', exp: now + 600 }), true, 'issued before the entry')
  t.equal(list.isRevoked('j', null, { id: 'svc', exp: now + 10 }), true, 'and an older one')
  t.equal(list.isRevoked('j', null, { id: 'svc', exp: now + 601 }), false, 'issued after it (enabled again)')
  t.equal(list.isRevoked('j', null, { id: 'other', exp: now + 10 }), false, 'another client')
  t.equal(list.isRevoked('j', null), false, 'a caller that names no client')
  clock.advance(3600_000)
  t.equal(list.isRevoked('j', null, { id: 'svc', exp: now + 600 }), false, 'forgotten after its exp and grace')
})

runRevocationListSuite(t, 'memory', async (clock) => {
  const store = new MemoryStore(clock)
  return { store, peer: async () => store, cleanup: () => store.close() }
})

const redis: TestRedis = await startRedis()
t.teardown(() => redis.stop())
let n = 0

runRevocationListSuite(t, 'redis', async (clock) => {
  const keyPrefix = `${redis.prefix}${++n}:`
  const stores = [new RedisStore({ url: redis.url, keyPrefix, clock })]
  return {
    store: stores[0]!,
    peer: async () => {
      const p = new RedisStore({ url: redis.url, keyPrefix, clock })
      stores.push(p)
      return p
    },
    cleanup: async () => {
      await Promise.all(stores.map((s) => s.close()))
    },
  }
})

t.test('redis: healthy flips with a real outage and back', async (t) => {
  const own = await startRedis({ own: true })
  t.teardown(() => own.stop())
  const clock = new ManualClock()
  const store = new RedisStore({ url: own.url, keyPrefix: own.prefix, clock, maxReconnectDelayMs: 200 })
  t.teardown(() => store.close())
  const list = new RevocationList(store, clock, undefined, 3600)
  t.teardown(() => list.stop())
  await store.revocations.add({ kind: 'jti', id: 'before', exp: nowSec(clock) + 600 })
  await list.start()
  t.equal(list.healthy, true)

  await own.kill()
  t.equal(await list.resync(), false)
  t.equal(list.healthy, false)
  t.equal(list.isRevoked('before', null), true, 'keeps what it knew while unhealthy')

  await own.restart()
  const deadline = Date.now() + 10_000
  while (!(await list.resync()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  t.equal(list.healthy, true, 'healthy again after the restart')
  t.equal(list.isRevoked('before', null), true, 'a Redis restarted empty (no persistence) does not un-revoke a token')
  t.same(
    (await store.revocations.list()).map((e) => e.id),
    ['before'],
    'and the list wrote it back to the restarted Redis, for the instances that never had it',
  )
  const late = new RevocationList(store, clock, undefined, 3600)
  t.teardown(() => late.stop())
  await late.start()
  t.equal(late.isRevoked('before', null), true, 'an instance loading now finds it')
  await store.revocations.add({ kind: 'jti', id: 'after', exp: nowSec(clock) + 600 })
  t.ok(await eventually(() => list.isRevoked('after', null), 5000), 'pub/sub works again')
})
