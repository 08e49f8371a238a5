import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { MemoryStore } from '../../src/store/memory.js'
import { codeRecord, deviceRecord, grantRecord, nowSec, runStoreContract, token, userCode } from './contract.js'

runStoreContract(t, 'memory', async (clock) => {
  const store = new MemoryStore(clock)
  return { store, peer: async () => store, cleanup: () => store.close() }
})

t.test('memory: the sweep drops expired entries without reads', async (t) => {
  const clock = new ManualClock()
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  const code = token()
  const rt = token()
  const g = grantRecord(clock, 100)
  await store.codes.put(code.hash, codeRecord(clock, 60), 60)
  await store.grants.create(g, rt.hash)
  await store.sessions.put('s', { sub: 'a', username: 'a', authTime: 0, csrf: 'c' }, 60)
  await store.rateLimits.hit('k', 60)
  await store.revocations.add({ kind: 'jti', id: 'j', exp: nowSec(clock) + 60 })
  await store.consents.put('a', 'app', ['openid'], 60)
  await store.singleUse.use('jkt:jti', 60)
  await store.devices.put(token().hash, deviceRecord(clock, userCode(), 60))
  await store.opaqueTokens.put(token().hash, {
    iss: 'i',
    sub: 'a',
    aud: ['x'],
    clientId: 'app',
    scope: 's',
    jti: 'j',
    iat: 0,
    exp: nowSec(clock) + 60,
    grantId: null,
  })
  t.equal(store.size, 11, 'code, family, refresh index, session, counter, revocation, consent, device, user code, token, used jti')
  clock.advance(101_000)
  store.sweep()
  t.equal(store.size, 0, 'nothing left after every lifetime passed')
})

t.test('memory: returned records are copies', async (t) => {
  const clock = new ManualClock()
  const store = new MemoryStore(clock)
  t.teardown(() => store.close())
  const g = grantRecord(clock)
  await store.grants.create(g, null)
  const read = await store.grants.get(g.grantId)
  if (read) read.scope = 'admin'
  g.scope = 'admin'
  t.equal((await store.grants.get(g.grantId))?.scope, 'openid offline_access orders:read')
})

t.test('memory: a code whose record expires before its ttl cannot be taken after expiresAt', async (t) => {
  const clock = new ManualClock()
  const store = new MemoryStore(clock)
  t.teardown(() => store.close())
  const code = token()
  await store.codes.put(code.hash, codeRecord(clock, 10), 60)
  clock.advance(10_000)
  t.same(await store.codes.take(code.hash), { status: 'missing' })
})

t.test('memory: a throwing revocation subscriber is logged, not fatal', async (t) => {
  const clock = new ManualClock()
  const errors: string[] = []
  const store = new MemoryStore(clock, { log: { error: (_obj, msg) => errors.push(msg) } })
  t.teardown(() => store.close())
  const seen: string[] = []
  await store.revocations.subscribe(() => {
    throw new Error('boom')
  })
  await store.revocations.subscribe((e) => seen.push(e.id))
  await store.revocations.add({ kind: 'jti', id: 'j', exp: nowSec(clock) + 60 })
  await new Promise((r) => setImmediate(r))
  t.same(seen, ['j'], 'the other subscriber still gets it')
  t.same(errors, ['revocation listener failed'])
})

t.test('memory: the sweep drops ended allowances without reads', async (t) => {
  const clock = new ManualClock()
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  const now = nowSec(clock)
  await store.allowances.note('a', 'app', { scopes: ['openid'], at: now, grantId: 'g1', until: now + 60 })
  await store.allowances.note('b', 'app', { scopes: [], at: now, grantId: 'g2', until: now + 120 })
  t.equal(store.size, 2, 'two people with allowances')
  clock.advance(60_000)
  store.sweep()
  t.equal(store.size, 1, "a's ended; b's is still live")
  clock.advance(60_000)
  store.sweep()
  t.equal(store.size, 0, 'nothing left once every allowance ended')
})
