/** The contract of browser sessions and remembered consent (src/store/sessions/types.ts), run on every store. */
import type { Test } from 'tap'
import type { SessionRecord } from '../../../src/store/types.js'
import { token, nowSec, type Setup } from './fixtures.js'

export function sessionsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: sessions and consent`, async (tt) => {
    const { clock, store } = await setup(tt)
    const sid = token().value
    const rec: SessionRecord = { sub: 'alice', username: 'alice', authTime: nowSec(clock), csrf: 'c-1' }
    await store.sessions.put(sid, rec, 3600)
    tt.same(await store.sessions.get(sid), rec)
    await store.sessions.delete(sid)
    tt.equal(await store.sessions.get(sid), null, 'deleted')
    await store.sessions.put(sid, rec, 60)
    clock.advance(60_000)
    tt.equal(await store.sessions.get(sid), null, 'expired')
    const strong: SessionRecord = { ...rec, amr: ['swk', 'user', 'mfa'], acr: 'phr' }
    await store.sessions.put(sid, strong, 60)
    tt.same(await store.sessions.get(sid), strong, 'how the person signed in is kept')

    await store.consents.put('alice', 'app', ['openid', 'orders:read'], 100)
    tt.same(await store.consents.get('alice', 'app'), ['openid', 'orders:read'])
    tt.equal(await store.consents.get('alice', 'other'), null)
    tt.equal(await store.consents.get('bob', 'app'), null)
    await store.consents.put('a:b', 'c', ['x'], 100)
    tt.equal(await store.consents.get('a', 'b:c'), null, 'sub and client id cannot be confused')
    clock.advance(100_000)
    tt.equal(await store.consents.get('alice', 'app'), null, 'expired')
  })
}
