/**
 * Redis goes away and comes back: every call fails fast with
 * StoreUnavailableError, nothing crashes, and the store recovers by itself.
 * The revocation feed reports each loss and return (what the gateway's
 * revocation list goes by); the end-to-end figures are in test/faults/.
 */
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { HEARTBEAT_DEADLINE_MS, HEARTBEAT_INTERVAL_MS, RedisStore } from '../../src/store/redis.js'
import type { RevocationEntry, Store } from '../../src/store/types.js'
import { startRedis } from '../helpers/redis.js'
import { startTcpRelay } from '../helpers/tcp-relay.js'
import { codeRecord, grantRecord, nowSec, token } from './contract.js'
import { eventually } from '../helpers/http.js'

const LIMIT_MS = 1500

interface LogLine {
  level: 'info' | 'warn' | 'error'
  obj: object
  msg: string
}

function captureLog(): { lines: LogLine[]; log: { info(o: object, m: string): void; warn(o: object, m: string): void; error(o: object, m: string): void } } {
  const lines: LogLine[] = []
  return {
    lines,
    log: {
      info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
      warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }),
      error: (obj, msg) => lines.push({ level: 'error', obj, msg }),
    },
  }
}

/** Run `call`, assert it rejects with StoreUnavailableError within LIMIT_MS. */
async function failsFast(t: Test, label: string, call: () => Promise<unknown>): Promise<void> {
  const started = performance.now()
  let error: unknown = null
  try {
    await call()
  } catch (err) {
    error = err
  }
  const ms = performance.now() - started
  t.ok(error instanceof StoreUnavailableError, `${label}: StoreUnavailableError`)
  t.ok(ms < LIMIT_MS, `${label}: failed in ${ms.toFixed(0)} ms`)
}

/** Every kind of call, once, with arguments that would succeed against a live Redis. */
function everyKindOfCall(store: Store, clock: ManualClock): Record<string, () => Promise<unknown>> {
  const g = grantRecord(clock)
  return {
    ping: () => store.ping(),
    'codes.put': () => store.codes.put(token().hash, codeRecord(clock), 60),
    'codes.take': () => store.codes.take(token().hash),
    'grants.create': () => store.grants.create(g, token().hash),
    'grants.rotate': () => store.grants.rotate(token().hash, token().hash, g.expiresAt),
    'grants.revoke': () => store.grants.revoke(g.grantId, g.maxAccessExp),
    'revocations.add': () => store.revocations.add({ kind: 'jti', id: 'j', exp: nowSec(clock) + 60 }),
    'revocations.list': () => store.revocations.list(),
    'opaqueTokens.get': () => store.opaqueTokens.get(token().hash),
    'devices.poll': () => store.devices.poll(token().hash, clock.now()),
    'sessions.get': () => store.sessions.get('sid'),
    'rateLimits.hit': () => store.rateLimits.hit('k', 60),
  }
}

const unhandled: unknown[] = []
const onUnhandled = (err: unknown): void => {
  unhandled.push(err)
}
process.on('unhandledRejection', onUnhandled)
t.teardown(() => {
  process.off('unhandledRejection', onUnhandled)
})

t.test('redis down: calls fail fast, the store recovers by itself after a restart', async (t) => {
  const redis = await startRedis({ own: true })
  t.teardown(() => redis.stop())
  const clock = new ManualClock()
  const { lines, log } = captureLog()
  const store = new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock, log, commandTimeoutMs: 1000, maxReconnectDelayMs: 200 })
  t.teardown(() => store.close())

  await store.ping()
  const seen: RevocationEntry[] = []
  const feed: boolean[] = []
  t.teardown(
    await store.revocations.subscribe(
      (e) => seen.push(e),
      (up) => feed.push(up),
    ),
  )

  await redis.kill()
  for (const [label, call] of Object.entries(everyKindOfCall(store, clock))) await failsFast(t, label, call)
  t.ok(await eventually(() => feed.at(-1) === false, 5000), 'the feed reports its loss (the revocation list stops trusting it)')

  // Keep calling through several reconnect attempts: every call still fails fast.
  const until = Date.now() + 1500
  let calls = 0
  while (Date.now() < until) {
    await failsFast(t, `burst ${++calls}`, () => Promise.all([store.ping(), store.rateLimits.hit('k', 60)]))
    await new Promise((r) => setTimeout(r, 100))
  }
  const downWarnings = lines.filter((l) => l.msg === 'store unreachable' && (l.obj as { connection?: string }).connection === 'main')
  t.equal(downWarnings.length, 1, 'the outage is logged once, not per reconnect attempt')

  await redis.restart()
  t.ok(await pollUntil(() => store.ping(), 10_000), 'ping succeeds again without any help')
  const code = token()
  await store.codes.put(code.hash, codeRecord(clock), 60)
  t.equal((await store.codes.take(code.hash)).status, 'taken', 'transitions work again')

  // The subscriber connection resubscribes on its own and says so: a message
  // published before that is not delivered, which is why the revocation
  // list resyncs when it hears the feed is up again.
  t.ok(await eventually(() => feed.at(-1) === true, 10_000), 'the feed reports it is up again')
  t.same(feed, [true, false, true], 'up at subscribe, one loss, one recovery')
  const entry: RevocationEntry = { kind: 'jti', id: 'after-restart', exp: nowSec(clock) + 60 }
  t.ok(await pollUntil(() => store.revocations.add(entry), 5000))
  t.ok(await eventually(() => seen.some((e) => e.id === 'after-restart'), 5000), 'pub/sub delivers after the restart')
  t.equal(lines.filter((l) => l.msg === 'store connected' && (l.obj as { connection?: string }).connection === 'main').length, 2, 'connected, then reconnected')
  t.notOk(JSON.stringify(lines).includes(redis.url), 'the URL (which may hold a password) is never logged')
  t.same(unhandled, [], 'no unhandled rejections')
})

t.test('redis unreachable from the start: calls fail fast, subscribing too', async (t) => {
  const redis = await startRedis({ own: true })
  await redis.stop() // a port where nothing listens now
  const clock = new ManualClock()
  const store = new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock, commandTimeoutMs: 1000 })
  t.teardown(() => store.close())
  await failsFast(t, 'first ping', () => store.ping())
  await failsFast(t, 'second ping', () => store.ping())
  await failsFast(t, 'subscribe', () => store.revocations.subscribe(() => undefined))
  await failsFast(t, 'subscribe again', () => store.revocations.subscribe(() => undefined))
  t.same(unhandled, [], 'no unhandled rejections')
})

/** Retry `call` until it resolves, up to `ms`; true on success. */
async function pollUntil(call: () => Promise<unknown>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      await call()
      return true
    } catch {
      if (Date.now() > deadline) return false
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

/** Resolve with performance.now() at the first feed report equal to `up`, or reject after `ms`. */
function feedReport(reports: Array<{ up: boolean; at: number }>, up: boolean, after: number, ms: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const deadline = performance.now() + ms
    const check = (): void => {
      const hit = reports.find((r) => r.up === up && r.at >= after)
      if (hit) return resolve(hit.at)
      if (performance.now() > deadline) return reject(new Error(`no feed report ${up} within ${ms} ms`))
      setTimeout(check, 5)
    }
    check()
  })
}

t.test('revocation feed: a cut link is reported at once, a silent one by the heartbeat, the return after resubscribing', async (t) => {
  const redis = await startRedis({ own: true })
  const relay = await startTcpRelay(redis.port)
  t.teardown(async () => {
    await relay.close()
    await redis.stop()
  })
  const clock = new ManualClock()
  const store = new RedisStore({ url: relay.url, keyPrefix: redis.prefix, clock, commandTimeoutMs: 1000 })
  const publisher = new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock })
  t.teardown(() => Promise.all([store.close(), publisher.close()]))
  const reports: Array<{ up: boolean; at: number }> = []
  const seen: string[] = []
  t.teardown(
    await store.revocations.subscribe(
      (e) => seen.push(e.id),
      (up) => reports.push({ up, at: performance.now() }),
    ),
  )
  t.same(
    reports.filter((r) => !r.up),
    [],
    'subscribed with both connections up: no loss reported',
  )

  const cutAt = performance.now()
  relay.cut()
  const lostAt = await feedReport(reports, false, cutAt, 2000)
  t.ok(lostAt - cutAt < 100, `cut reported after ${(lostAt - cutAt).toFixed(1)} ms`)
  await publisher.revocations.add({ kind: 'jti', id: 'during-cut', exp: nowSec(clock) + 60 })
  const restoredAt = performance.now()
  relay.restore()
  const backAt = await feedReport(reports, true, restoredAt, 3000)
  t.ok(backAt - restoredAt < 1000, `return reported ${(backAt - restoredAt).toFixed(0)} ms after the link heals (reconnect backoff capped at 500 ms)`)
  t.notOk(seen.includes('during-cut'), 'the message published during the cut is lost (the resync the report triggers finds it)')
  await publisher.revocations.add({ kind: 'jti', id: 'after-cut', exp: nowSec(clock) + 60 })
  t.ok(await eventually(() => seen.includes('after-cut'), 2000), 'subscribed again when the return is reported')

  const silencedAt = performance.now()
  relay.silence()
  const silentAt = await feedReport(reports, false, silencedAt, 3000)
  t.ok(
    silentAt - silencedAt < HEARTBEAT_INTERVAL_MS + HEARTBEAT_DEADLINE_MS + 300,
    `silent partition found by the heartbeat after ${(silentAt - silencedAt).toFixed(0)} ms`,
  )
  await failsFast(t, 'a command while the link is known dead', () => store.ping())
  const healedAt = performance.now()
  relay.restore()
  const upAgainAt = await feedReport(reports, true, healedAt, 5000)
  t.ok(upAgainAt - healedAt < 2000, `return reported ${(upAgainAt - healedAt).toFixed(0)} ms after the silence ends`)
  await store.ping()
  t.same(unhandled, [], 'no unhandled rejections')
})
