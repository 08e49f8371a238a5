/** The contract of upstream sign-ins and people (src/store/upstream/types.ts), run on every store. */
import type { Test } from 'tap'
import type { ManualClock } from '../../../src/clock.js'
import type { UpstreamLoginRecord, UpstreamPersonRecord } from '../../../src/store/types.js'
import { token, nowSec, type Setup } from './fixtures.js'

export function upstreamContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: upstream sign-ins and people`, async (tt) => {
    const login = (clock: ManualClock): UpstreamLoginRecord => ({
      provider: 'corp',
      nonce: 'n-1',
      codeVerifier: 'v-1',
      continuation: { kind: 'authorize', request: 'client_id=web&scope=openid' },
      expiresAt: nowSec(clock) + 600,
    })
    tt.test('a pending sign-in is taken once; unknown and expired are null', async (t2) => {
      const { clock, store } = await setup(t2)
      const s = token()
      await store.upstream.putLogin(s.hash, login(clock), 600)
      t2.same(await store.upstream.takeLogin(s.hash), login(clock), 'taken with everything it held')
      t2.equal(await store.upstream.takeLogin(s.hash), null, 'a second take finds nothing (state is single use)')
      t2.equal(await store.upstream.takeLogin(token().hash), null, 'unknown')
      const late = token()
      await store.upstream.putLogin(late.hash, { ...login(clock), continuation: { kind: 'device', userCode: 'ABCDEFGH' } }, 600)
      clock.advance(600_000)
      t2.equal(await store.upstream.takeLogin(late.hash), null, 'expired')
    })
    tt.test('20 concurrent takes of one state: exactly one gets it, also across instances', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      const s = token()
      await store.upstream.putLogin(s.hash, login(clock), 600)
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).upstream.takeLogin(s.hash)))
      t2.equal(results.filter((r) => r !== null).length, 1)
    })
    tt.test('a person is kept under their sub, replaced by a later sign-in, forgotten after the ttl', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const rec: UpstreamPersonRecord = { provider: 'corp', upstreamSub: 'u-1', claims: { name: 'Una', email: 'una@example.com' }, updatedAt: nowSec(clock) }
      await store.upstream.putPerson('corp:u-1', rec, 100)
      t2.same(await (await h.peer()).upstream.getPerson('corp:u-1'), rec)
      t2.equal(await store.upstream.getPerson('corp:u-2'), null)
      await store.upstream.putPerson('corp:u-1', { ...rec, claims: { name: 'Una B' } }, 100)
      t2.same((await store.upstream.getPerson('corp:u-1'))?.claims, { name: 'Una B' })
      clock.advance(100_000)
      t2.equal(await store.upstream.getPerson('corp:u-1'), null, 'expired')
    })
    tt.test('people are found by the email of their latest sign-in, in any case, on every instance, until they are forgotten', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      const rec = (sub: string, claims: Record<string, unknown>): UpstreamPersonRecord => ({
        provider: 'corp',
        upstreamSub: sub,
        claims,
        updatedAt: nowSec(clock),
      })
      await store.upstream.putPerson('corp:u-1', rec('u-1', { email: 'Una@Corp.example' }), 100)
      await store.upstream.putPerson('corp:u-2', rec('u-2', { name: 'No email' }), 100)
      t2.same(await other.upstream.subsByEmail('una@corp.example'), ['corp:u-1'], 'lower-cased, seen by the other instance')
      t2.same(await other.upstream.subsByEmail('nobody@corp.example'), [])
      clock.advance(50_000)
      await other.upstream.putPerson('corp:u-3', rec('u-3', { email: 'una@corp.example' }), 100)
      t2.same((await store.upstream.subsByEmail('UNA@corp.example')).sort(), ['corp:u-1', 'corp:u-3'], 'two people with one email: both')
      await store.upstream.putPerson('corp:u-1', rec('u-1', { email: 'una@elsewhere.example' }), 100)
      t2.same(await store.upstream.subsByEmail('una@corp.example'), ['corp:u-3'], 'a later sign-in with another email moves the person')
      t2.same(await store.upstream.subsByEmail('una@elsewhere.example'), ['corp:u-1'])
      clock.advance(100_000)
      t2.same(await store.upstream.subsByEmail('una@corp.example'), [], 'forgotten with their record')
      t2.same(await store.upstream.subsByEmail('una@elsewhere.example'), [])
    })
  })
}
