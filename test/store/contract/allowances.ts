/** The contract of allowances (the account page) (src/store/allowances/types.ts), run on every store. */
import type { Test } from 'tap'
import { nowSec, type Setup } from './fixtures.js'

export function allowancesContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: allowances (the account page)`, async (tt) => {
    tt.test('notes merge per (sub, client): scopes in order, the latest time, every grant', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      t2.same(await store.allowances.list('alice'), [], 'nothing yet')
      await store.allowances.note('alice', 'app', { scopes: ['openid', 'orders:read'], at: now, grantId: null, until: now + 100 })
      await store.allowances.note('alice', 'app', { scopes: ['orders:read', 'orders:write'], at: now - 50, grantId: 'g1', until: now + 50 })
      await store.allowances.note('alice', 'app', { scopes: [], at: now + 5, grantId: 'g2', until: now + 200 })
      await store.allowances.note('alice', 'other', { scopes: ['openid'], at: now, grantId: 'g3', until: now + 10 })
      await store.allowances.note('bob', 'app', { scopes: ['openid'], at: now, grantId: 'g4', until: now + 10 })
      const list = (await store.allowances.list('alice')).sort((a, b) => a.clientId.localeCompare(b.clientId))
      t2.same(
        list.map((a) => ({ ...a, grantIds: [...a.grantIds].sort() })),
        [
          { clientId: 'app', scopes: ['openid', 'orders:read', 'orders:write'], allowedAt: now + 5, grantIds: ['g1', 'g2'] },
          { clientId: 'other', scopes: ['openid'], allowedAt: now, grantIds: ['g3'] },
        ],
      )
      t2.same(
        (await store.allowances.list('bob')).map((a) => a.grantIds),
        [['g4']],
        'per person',
      )
      await store.allowances.note('a:b', 'c', { scopes: ['x'], at: now, grantId: 'gx', until: now + 10 })
      t2.same(await store.allowances.list('a'), [], 'sub and client id cannot be confused')
    })

    tt.test('a grant leaves the list when its lifetime ends; a later note extends it; the allowance ends last', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      await store.allowances.note('alice', 'app', { scopes: ['openid'], at: now, grantId: 'g1', until: now + 10 })
      await store.allowances.note('alice', 'app', { scopes: [], at: now, grantId: 'g2', until: now + 20 })
      await store.allowances.note('alice', 'app', { scopes: [], at: 0, grantId: 'g1', until: now + 30 }) // a refresh extends g1
      clock.advance(20_000)
      t2.same(
        (await store.allowances.list('alice')).map((a) => a.grantIds),
        [['g1']],
        'g2 ended, g1 was extended',
      )
      clock.advance(10_000)
      t2.same(await store.allowances.list('alice'), [], 'everything ended')
    })

    tt.test('withdraw: one step forgets the allowance and the remembered consent, and returns the live grants', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      await store.consents.put('alice', 'app', ['openid'], 100)
      await store.consents.put('alice', 'other', ['openid'], 100)
      await store.allowances.note('alice', 'app', { scopes: ['openid'], at: now, grantId: 'g1', until: now + 100 })
      await store.allowances.note('alice', 'app', { scopes: [], at: now, grantId: 'g-old', until: now + 1 })
      await store.allowances.note('alice', 'other', { scopes: ['openid'], at: now, grantId: 'g2', until: now + 100 })
      clock.advance(1_000)
      t2.same(await store.allowances.withdraw('alice', 'app', 600), ['g1'], 'the live grant, not the ended one')
      t2.equal(await store.consents.get('alice', 'app'), null, 'remembered consent gone')
      t2.same(
        (await store.allowances.list('alice')).map((a) => a.clientId),
        ['other'],
        'the other client stays',
      )
      t2.same(await store.consents.get('alice', 'other'), ['openid'])
      t2.same(await store.allowances.withdraw('alice', 'app', 600), [], 'idempotent')
      await store.allowances.note('alice', 'app', { scopes: ['orders:read'], at: now + 2, grantId: 'g3', until: now + 100 })
      t2.same(
        await store.allowances.list('alice').then((l) => l.find((a) => a.clientId === 'app')),
        {
          clientId: 'app',
          scopes: ['orders:read'],
          allowedAt: now + 2,
          grantIds: ['g3'],
        },
        'allowing again starts afresh',
      )
    })

    tt.test('a withdrawal refuses every authorization given before it, for as long as it is remembered', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const now = nowSec(clock)
      const given = clock.now()
      await store.allowances.note('alice', 'app', { scopes: ['openid'], at: now, grantId: null, until: now + 100 })
      clock.advance(5_000)
      await store.allowances.withdraw('alice', 'app', 60)
      const withdrawnAt = clock.now()
      clock.advance(1_000)
      const note = (gid: string, authorizedAtMs?: number) => ({
        scopes: ['orders:read'],
        at: nowSec(clock),
        grantId: gid,
        until: nowSec(clock) + 100,
        authorizedAtMs,
      })
      t2.equal(await store.allowances.note('alice', 'app', note('g-before', given)), false, 'a code issued before the withdrawal: refused')
      t2.equal(await store.allowances.note('alice', 'app', note('g-same', withdrawnAt)), false, 'issued in the same millisecond: refused')
      t2.same(await store.allowances.list('alice'), [], 'the refused notes left nothing')
      const other = await h.peer()
      t2.equal(await other.allowances.note('alice', 'app', note('g-peer', given)), false, 'another instance refuses it too')
      t2.equal(await store.allowances.note('alice', 'other', note('g-other', given)), true, 'another client is not withdrawn')
      t2.equal(await store.allowances.note('bob', 'app', note('g-bob', given)), true, 'another person is not withdrawn')
      t2.equal(await store.allowances.note('alice', 'app', note('g-after', withdrawnAt + 1)), true, 'an authorization given after the withdrawal')
      t2.equal(await store.allowances.note('alice', 'app', note('g-refresh')), true, 'a note with no authorization time (a refresh) is not judged')
      t2.same((await store.allowances.list('alice')).map((a) => [a.clientId, [...a.grantIds].sort()]).sort(), [
        ['app', ['g-after', 'g-refresh']],
        ['other', ['g-other']],
      ])
      clock.advance(60_000)
      t2.equal(await store.allowances.note('alice', 'app', note('g-late', given)), true, 'forgotten after rememberSec (the code it guarded has expired)')
    })

    tt.test('an allowance seen through another instance', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const now = nowSec(clock)
      await store.allowances.note('alice', 'app', { scopes: ['openid'], at: now, grantId: 'g1', until: now + 100 })
      const other = await h.peer()
      t2.same(
        (await other.allowances.list('alice')).map((a) => a.grantIds),
        [['g1']],
      )
      t2.same(await other.allowances.withdraw('alice', 'app', 600), ['g1'])
      t2.same(await store.allowances.list('alice'), [])
    })
  })
}
