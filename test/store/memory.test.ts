import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { MemoryStore } from '../../src/store/memory.js'
import { codeRecord, grantRecord, nowSec, runStoreContract, token } from './contract.js'

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
  await store.putCode(code.hash, codeRecord(clock, 60), 60)
  await store.createGrant(g, rt.hash)
  await store.putSession('s', { sub: 'a', username: 'a', authTime: 0, csrf: 'c' }, 60)
  await store.hit('k', 60)
  await store.addRevocation({ kind: 'jti', id: 'j', exp: nowSec(clock) + 60 })
  t.equal(store.size, 6, 'code, family, refresh index, session, counter, revocation')
  clock.advance(101_000)
  store.sweep()
  t.equal(store.size, 0, 'nothing left after every lifetime passed')
})

t.test('memory: returned records are copies', async (t) => {
  const clock = new ManualClock()
  const store = new MemoryStore(clock)
  t.teardown(() => store.close())
  const g = grantRecord(clock)
  await store.createGrant(g, null)
  const read = await store.getGrant(g.grantId)
  if (read) read.scope = 'admin'
  g.scope = 'admin'
  t.equal((await store.getGrant(g.grantId))?.scope, 'openid offline_access orders:read')
})
