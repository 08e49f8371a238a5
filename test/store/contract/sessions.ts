/** The contract of browser sessions and remembered consent (src/store/sessions/types.ts), run on every store. */
import type { Test } from 'tap'
import { MAX_CLIENTS_PER_SESSION, MAX_SESSIONS_PER_PERSON } from '../../../src/store/sessions/types.js'
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

  t.test(`${name}: a person's sessions end together, each once, with the clients told in them`, async (tt) => {
    const { clock, h, store } = await setup(tt)
    const rec = (sub: string, sid: string): SessionRecord => ({ sub, username: sub, sid, authTime: nowSec(clock), csrf: `c-${sid}` })
    const [a1, a2, b1] = [token().hash, token().hash, token().hash]
    await store.sessions.put(a1, rec('alice', 's-a1'), 3600)
    await store.sessions.put(a2, rec('alice', 's-a2'), 60)
    await store.sessions.put(b1, rec('bob', 's-b1'), 3600)
    await store.sessions.noteClient(a1, 'app')
    await store.sessions.noteClient(a1, 'app')
    await store.sessions.noteClient(a1, 'crm')
    await store.sessions.noteClient(token().hash, 'ghost')
    const other = await h.peer()
    const ended = await other.sessions.endAllOf('alice')
    tt.same(ended.map((e) => e.record.sid).sort(), ['s-a1', 's-a2'], 'both of alice’s sessions, from another instance')
    tt.same(ended.find((e) => e.record.sid === 's-a1')?.clients.sort(), ['app', 'crm'], 'the clients that received an id_token, once each')
    tt.same(ended.find((e) => e.record.sid === 's-a2')?.clients, [], 'a session no client was told of')
    tt.equal(await store.sessions.get(a1), null, 'ended')
    tt.equal(await store.sessions.get(a2), null, 'ended')
    tt.same((await store.sessions.get(b1))?.sid, 's-b1', 'bob keeps his')
    tt.same(await store.sessions.endAllOf('alice'), [], 'a second end finds nothing')

    await store.sessions.put(a1, rec('alice', 's-a1'), 60)
    clock.advance(60_000)
    tt.same(await store.sessions.endAllOf('alice'), [], 'an expired session is not returned as ended')

    const c1 = token().hash
    await store.sessions.put(c1, rec('carol', 's-c1'), 3600)
    await store.sessions.noteClient(c1, 'app')
    const one = await store.sessions.delete(c1)
    tt.same(one?.clients, ['app'], 'delete returns the clients of the session it ended')
    tt.equal(await store.sessions.delete(c1), null, 'a second delete ends nothing')
    tt.same(await store.sessions.endAllOf('carol'), [], 'a deleted session leaves its person’s index')
  })

  t.test(`${name}: concurrent ends of one person return each session to one caller`, async (tt) => {
    const { clock, h, store } = await setup(tt)
    const ids = Array.from({ length: 5 }, () => token().hash)
    for (const id of ids) await store.sessions.put(id, { sub: 'dave', username: 'dave', sid: id, authTime: nowSec(clock), csrf: 'c' }, 3600)
    const other = await h.peer()
    const results = await Promise.all([store.sessions.endAllOf('dave'), other.sessions.endAllOf('dave'), store.sessions.delete(ids[0] ?? '')])
    const seen = [...results[0], ...results[1], ...(results[2] === null ? [] : [results[2]])].map((e) => e.record.sid).sort()
    tt.same(seen, [...ids].sort(), 'each session ended exactly once')
  })

  t.test(`${name}: sessions end by the upstream provider session they came from`, async (tt) => {
    const { clock, store } = await setup(tt)
    const rec = (providerSid: string, provider = 'corp', sid = token().hash): SessionRecord => ({
      sub: `${provider}:u1`,
      sid,
      username: `${provider}:u1`,
      provider,
      providerSid,
      authTime: nowSec(clock),
      csrf: 'c',
    })
    const [x1, x2, y1, z1] = [token().hash, token().hash, token().hash, token().hash]
    await store.sessions.put(x1, rec('idp-sid-x', 'corp', x1), 3600)
    await store.sessions.put(x2, rec('idp-sid-x', 'corp', x2), 3600)
    await store.sessions.put(y1, rec('idp-sid-y', 'corp', y1), 3600)
    await store.sessions.put(z1, rec('idp-sid-x', 'other', z1), 3600)
    const ended = await store.sessions.endByProviderSession('corp', 'idp-sid-x')
    tt.same(ended.map((e) => e.record.sid).sort(), [x1, x2].sort(), 'the two sessions of that provider session')
    tt.not(await store.sessions.get(y1), null, 'another provider session of the same person is kept')
    tt.not(await store.sessions.get(z1), null, 'the same sid at another provider is kept')
    tt.same(await store.sessions.endByProviderSession('corp:idp', 'sid-x'), [], 'provider and sid cannot be confused')
    tt.same(
      (await store.sessions.endAllOf('corp:u1')).map((e) => e.record.sid),
      [y1],
      'the person index no longer names the ended ones',
    )
  })

  t.test(`${name}: a person's sessions and a session's clients are bounded`, async (tt) => {
    const { clock, store } = await setup(tt)
    const ids: string[] = []
    for (let i = 0; i <= MAX_SESSIONS_PER_PERSON; i++) {
      const id = token().hash
      ids.push(id)
      // Each later session lives longer, so the first is the one soonest to expire.
      await store.sessions.put(id, { sub: 'eve', username: 'eve', authTime: nowSec(clock), csrf: 'c' }, 3600 + i)
    }
    tt.equal(await store.sessions.get(ids[0] ?? ''), null, 'one over the bound ends the session soonest to expire')
    tt.not(await store.sessions.get(ids[1] ?? ''), null, 'the next is kept')
    tt.equal((await store.sessions.endAllOf('eve')).length, MAX_SESSIONS_PER_PERSON, 'every live one is still findable')

    const id = token().hash
    await store.sessions.put(id, { sub: 'eve', username: 'eve', authTime: nowSec(clock), csrf: 'c' }, 3600)
    for (let i = 0; i < MAX_CLIENTS_PER_SESSION + 5; i++) await store.sessions.noteClient(id, `client-${i}`)
    tt.equal((await store.sessions.delete(id))?.clients.length, MAX_CLIENTS_PER_SESSION, 'clients per session are bounded')
  })
}
