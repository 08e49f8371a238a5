import t from 'tap'
import { Redis } from 'ioredis'
import { ManualClock } from '../../src/clock.js'
import { createStore } from '../../src/store/index.js'
import { RedisStore } from '../../src/store/redis.js'
import type { RevocationEntry } from '../../src/store/types.js'
import { startRedis, type TestRedis } from '../helpers/redis.js'
import { codeRecord, deviceRecord, grantRecord, nowSec, runStoreContract, token, userCode } from './contract.js'
import { eventually } from '../helpers/http.js'

const redis: TestRedis = await startRedis()
t.teardown(() => redis.stop())

/** A raw client for looking at what the store wrote. */
const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 })
t.teardown(() => raw.disconnect())

let n = 0
/** Each store gets its own prefix under the helper's, so tests never see each other's keys. */
function prefix(): string {
  n += 1
  return `${redis.prefix}${n}:`
}

function makeRedisStore(clock: ManualClock, keyPrefix: string): RedisStore {
  return new RedisStore({ url: redis.url, keyPrefix, clock, commandTimeoutMs: 1000 })
}

runStoreContract(t, 'redis', async (clock) => {
  const keyPrefix = prefix()
  const store = makeRedisStore(clock, keyPrefix)
  const peers: RedisStore[] = []
  return {
    store,
    peer: async () => {
      const p = makeRedisStore(clock, keyPrefix)
      peers.push(p)
      return p
    },
    cleanup: async () => {
      await Promise.all([store.close(), ...peers.map((p) => p.close())])
    },
  }
})

/** Every key under `keyPrefix` with its full contents, as text. */
async function dump(keyPrefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  let cursor = '0'
  do {
    const [next, keys] = await raw.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 500)
    cursor = next
    for (const key of keys) {
      const type = await raw.type(key)
      let value: unknown
      if (type === 'string') value = await raw.get(key)
      else if (type === 'hash') value = await raw.hgetall(key)
      else if (type === 'zset') value = await raw.zrange(key, 0, -1, 'WITHSCORES')
      else value = `<${type}>`
      out.set(key, JSON.stringify(value))
    }
  } while (cursor !== '0')
  return out
}

t.test('redis: createStore builds a RedisStore from the config', async (t) => {
  const store = await createStore(
    {
      kind: 'redis',
      url: redis.url,
      cluster: [],
      keyPrefix: prefix(),
      commandTimeoutMs: 1000,
      sentinels: [],
      sentinelName: 'mymaster',
      replicaWait: { replicas: 0, timeoutMs: 500 },
    },
    { clock: new ManualClock() },
  )
  t.teardown(() => store.close())
  t.equal(store.kind, 'redis')
  await t.resolves(store.ping())
  const mem = await createStore({ kind: 'memory' }, { clock: new ManualClock() })
  t.teardown(() => mem.close())
  t.equal(mem.kind, 'memory')
})

t.test('redis: many commands sent before the first connection all wait for it, without a listener warning', async (t) => {
  const warnings: string[] = []
  const onWarning = (w: Error): void => {
    warnings.push(`${w.name}: ${w.message}`)
  }
  process.on('warning', onWarning)
  t.teardown(() => {
    process.off('warning', onWarning)
  })
  const store = makeRedisStore(new ManualClock(), prefix())
  t.teardown(() => store.close())
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => store.rateLimits.hit(`early-${i}`, 60)))
  t.same(answers, Array(50).fill(1), 'each of the 50 commands was answered once connected')
  t.same(
    warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
    [],
    'no MaxListenersExceededWarning (one set of listeners serves every waiting command)',
  )
})

t.test('redis: tokens reach Redis only hashed', async (t) => {
  const clock = new ManualClock()
  const keyPrefix = prefix()
  const store = makeRedisStore(clock, keyPrefix)
  t.teardown(() => store.close())
  const code = token()
  const rt1 = token()
  const rt2 = token()
  const at = token()
  const dc = token()
  const sessionId = token()
  const g = grantRecord(clock)
  await store.codes.put(code.hash, codeRecord(clock), 60)
  await store.codes.take(code.hash)
  await store.grants.create(g, rt1.hash)
  await store.grants.rotate(rt1.hash, rt2.hash, g.expiresAt)
  await store.opaqueTokens.put(at.hash, {
    iss: 'https://as.example',
    sub: 'alice',
    aud: ['x'],
    clientId: 'app',
    scope: 's',
    jti: 'j',
    iat: nowSec(clock),
    exp: nowSec(clock) + 60,
    grantId: g.grantId,
  })
  await store.devices.put(dc.hash, deviceRecord(clock, userCode()))
  // The session id is the cookie value; the store hashes it itself.
  await store.sessions.put(sessionId.value, { sub: 'alice', username: 'alice', authTime: 0, csrf: 'c' }, 60)
  t.ok(await store.sessions.get(sessionId.value), 'session readable by its id')
  await store.sessions.noteClient(sessionId.value, 'app')

  const contents = await dump(keyPrefix)
  const everything = [...contents.keys(), ...contents.values()].join('\n')
  t.ok(contents.size >= 7, `keys written (${contents.size})`)
  for (const [name, tk] of Object.entries({ code, rt1, rt2, at, dc, sessionId })) {
    t.notOk(everything.includes(tk.value), `raw ${name} never stored`)
  }
  t.ok(everything.includes(code.hash) && everything.includes(rt2.hash), 'hashes are (control)')
})

t.test('redis: two key prefixes on one Redis do not see each other', async (t) => {
  const clock = new ManualClock()
  const a = makeRedisStore(clock, prefix())
  const b = makeRedisStore(clock, prefix())
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  const code = token()
  await a.codes.put(code.hash, codeRecord(clock), 60)
  t.same(await b.codes.take(code.hash), { status: 'missing' })
  const g = grantRecord(clock)
  const rt = token()
  await a.grants.create(g, rt.hash)
  t.equal(await b.grants.get(g.grantId), null)
  t.equal(await b.grants.findRefresh(rt.hash), null)
  await a.rateLimits.hit('k', 60)
  t.equal(await b.rateLimits.count('k'), 0)

  const seenB: RevocationEntry[] = []
  const seenA: RevocationEntry[] = []
  t.teardown(await b.revocations.subscribe((e) => seenB.push(e)))
  t.teardown(await a.revocations.subscribe((e) => seenA.push(e)))
  await a.revocations.add({ kind: 'jti', id: 'only-a', exp: nowSec(clock) + 60 })
  t.same(await b.revocations.list(), [])
  // Once A's own subscriber has the message, B's (same Redis, earlier subscription) would have it too.
  t.ok(await eventually(() => seenA.length === 1))
  t.same(seenB, [], 'not published on the other prefix channel')
  t.equal((await a.codes.take(code.hash)).status, 'taken', 'a still has its code')
})

t.test('redis: keys carry one hash tag each; a family lives in one key', async (t) => {
  const clock = new ManualClock()
  const keyPrefix = prefix()
  const store = makeRedisStore(clock, keyPrefix)
  t.teardown(() => store.close())
  const g = grantRecord(clock)
  const rt = token()
  await store.grants.create(g, rt.hash)
  await store.grants.rotate(rt.hash, token().hash, g.expiresAt)
  const keys = [...(await dump(keyPrefix)).keys()].sort()
  t.same(
    keys.filter((k) => k.includes(':grant:')),
    [`${keyPrefix}grant:{${g.grantId}}`],
  )
  for (const k of keys) t.match(k, /^[^{}]*\{[^{}]+\}[^{}]*$/, `${k} has exactly one hash tag`)
})

t.test('redis: people written before the email index are found by email after an upgrade', async (t) => {
  const clock = new ManualClock()
  const keyPrefix = prefix()
  const at = nowSec(clock)
  // What an earlier version's createPerson script wrote: the record, its sub, its place in the list; no email set.
  const legacy = (username: string, email: string) => ({
    username,
    sub: `s-${username}`,
    claims: { email },
    passwordHash: null,
    disabled: false,
    createdAt: at,
    updatedAt: at,
    version: 1,
  })
  for (const p of [legacy('olga', 'Olga@Corp.example'), legacy('piet', 'piet@corp.example')]) {
    await raw.hset(`${keyPrefix}people:{people}u:${p.username}`, 'r', JSON.stringify(p), 'v', '1')
    await raw.set(`${keyPrefix}people:{people}s:${p.sub}`, p.username)
    await raw.zadd(`${keyPrefix}people:{people}index`, 0, p.username)
  }
  const store = makeRedisStore(clock, keyPrefix)
  t.teardown(() => store.close())
  t.same(
    (await store.people.byEmail('olga@corp.example')).map((p) => p.username),
    ['olga'],
    'the first lookup indexes them',
  )
  t.same(
    (await store.people.byEmail('PIET@corp.example')).map((p) => p.username),
    ['piet'],
  )
  t.equal(await raw.get(`${keyPrefix}people:{people}e-indexed`), '1', 'once: the marker tells every instance')
  const other = makeRedisStore(clock, keyPrefix)
  t.teardown(() => other.close())
  t.same(
    (await other.people.byEmail('olga@corp.example')).map((p) => p.username),
    ['olga'],
    'another instance reads the same index',
  )
})

t.test('redis: scripts are reloaded after SCRIPT FLUSH (NOSCRIPT fallback)', async (t) => {
  const clock = new ManualClock()
  const store = makeRedisStore(clock, prefix())
  t.teardown(() => store.close())
  const code = token()
  await store.codes.put(code.hash, codeRecord(clock), 60)
  await raw.script('FLUSH')
  t.equal((await store.codes.take(code.hash)).status, 'taken')
})

t.test('redis: Redis TTLs collect garbage at the record deadline', async (t) => {
  const clock = new ManualClock()
  const keyPrefix = prefix()
  const store = makeRedisStore(clock, keyPrefix)
  t.teardown(() => store.close())
  const code = token()
  await store.codes.put(code.hash, codeRecord(clock, 60), 60)
  await store.sessions.put('sid', { sub: 'a', username: 'a', authTime: 0, csrf: 'c' }, 3600)
  const codeTtl = await raw.pttl(`${keyPrefix}code:{${code.hash}}`)
  t.ok(codeTtl > 55_000 && codeTtl <= 60_000, `code key expires with the code (${codeTtl} ms)`)
  for (const key of (await dump(keyPrefix)).keys()) {
    t.ok((await raw.pttl(key)) > 0, `${key} has a TTL`)
  }
})

t.test('redis: a throwing revocation subscriber is logged, others still receive', async (t) => {
  const clock = new ManualClock()
  const errors: string[] = []
  const log = { info: () => undefined, warn: () => undefined, error: (_o: object, msg: string) => errors.push(msg) }
  const store = new RedisStore({ url: redis.url, keyPrefix: prefix(), clock, log })
  t.teardown(() => store.close())
  const seen: string[] = []
  t.teardown(
    await store.revocations.subscribe(() => {
      throw new Error('boom')
    }),
  )
  t.teardown(await store.revocations.subscribe((e) => seen.push(e.id)))
  await store.revocations.add({ kind: 'jti', id: 'j', exp: nowSec(clock) + 60 })
  t.ok(await eventually(() => seen.length === 1))
  t.same(errors, ['revocation listener failed'])
})

t.test('helper: without redis-server and REDIS_URL the suite fails, never skips', async (t) => {
  const saved = { path: process.env.PATH, url: process.env.REDIS_URL }
  t.teardown(() => {
    process.env.PATH = saved.path
    if (saved.url === undefined) delete process.env.REDIS_URL
    else process.env.REDIS_URL = saved.url
  })
  process.env.PATH = '/nonexistent'
  delete process.env.REDIS_URL
  await t.rejects(startRedis(), { message: 'redis-server not found: apt-get install -y redis-server or set REDIS_URL=redis://host:port/db' })
})
