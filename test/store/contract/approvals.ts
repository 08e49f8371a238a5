/** The contract of approvals (issue #41) (src/store/approvals/types.ts), run on every store. */
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { APPROVAL_KEEP_SEC, type NewApproval } from '../../../src/store/approvals/types.js'
import { nowSec, type Setup } from './fixtures.js'

/** An mcp_tool approval as the gateway opens it. */
export function newApproval(now: number, o: Partial<NewApproval> & { reuse?: 'once' | 'ttl' } = {}): NewApproval {
  const { reuse, ...rest } = o
  return {
    id: randomBytes(16).toString('base64url'),
    kind: 'mcp_tool',
    sub: 'alice',
    clientId: 'agent',
    grantId: 'g1',
    binding: 'b1',
    subject: { kind: 'mcp_tool', route: 'mcp', tool: 'delete_order', argumentsJson: '{"id":1}', reuse: reuse ?? 'once' },
    signIn: { acr: ['mfa'], maxAgeSec: 600 },
    expiresAt: now + 300,
    ...rest,
  }
}

export function approvalsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: approvals`, async (tt) => {
    tt.test('open creates once; a retry of the same call gets the same pending approval', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const now = nowSec(clock)
      const a = newApproval(now)
      const first = await store.approvals.open(a, now, 20, 100)
      t2.equal(first.outcome, 'created')
      t2.match(first, { record: { id: a.id, status: 'pending', createdAt: now, expiresAt: now + 300, decidedAt: null, decidedAcr: null } })
      const peer = await h.peer()
      const again = await peer.approvals.open(newApproval(now), now, 20, 100)
      t2.equal(again.outcome, 'pending')
      t2.equal(again.outcome !== 'too_many' && again.record.id, a.id, 'the same one, seen by another instance')
      t2.same(await peer.approvals.get(a.id, now), first.outcome === 'created' ? first.record : null, 'get by id on another instance')
      t2.equal((await store.approvals.open(newApproval(now, { binding: 'b2' }), now, 20, 100)).outcome, 'created', 'other arguments: a new one')
      t2.equal((await store.approvals.open(newApproval(now, { grantId: 'g2' }), now, 20, 100)).outcome, 'created', 'another grant: a new one')
      t2.equal((await store.approvals.open(newApproval(now, { clientId: 'other' }), now, 20, 100)).outcome, 'created', 'another client: a new one')
      t2.equal((await store.approvals.open(newApproval(now, { sub: 'bob' }), now, 20, 100)).outcome, 'created', 'another person: a new one')
      t2.equal(await store.approvals.get('nope', now), null)
    })

    tt.test('concurrent opens of one call create one approval', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const now = nowSec(clock)
      const peer = await h.peer()
      const results = await Promise.all([store.approvals.open(newApproval(now), now, 20, 100), peer.approvals.open(newApproval(now), now, 20, 100)])
      t2.same(results.map((r) => r.outcome).sort(), ['created', 'pending'])
      t2.equal((await store.approvals.listForPerson('alice', now, 10)).length, 1)
    })

    tt.test('pending approvals are bounded per person and per client', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      for (let i = 0; i < 3; i++) t2.equal((await store.approvals.open(newApproval(now, { binding: `p${i}` }), now, 3, 5)).outcome, 'created')
      t2.equal((await store.approvals.open(newApproval(now, { binding: 'p3' }), now, 3, 5)).outcome, 'too_many', 'a fourth for alice')
      t2.equal((await store.approvals.open(newApproval(now, { binding: 'p0' }), now, 3, 5)).outcome, 'pending', 'a retry still finds its own')
      for (let i = 0; i < 2; i++) t2.equal((await store.approvals.open(newApproval(now, { sub: `p${i}` }), now, 3, 5)).outcome, 'created')
      t2.equal((await store.approvals.open(newApproval(now, { sub: 'carol' }), now, 3, 5)).outcome, 'too_many', 'the client has five pending')
      t2.equal((await store.approvals.open(newApproval(now, { sub: 'carol', clientId: 'other' }), now, 3, 5)).outcome, 'created', 'another client')
      const [first] = await store.approvals.listForPerson('alice', now, 10)
      await store.approvals.decide(first?.id ?? '', 'alice', 'denied', null, now, now)
      t2.equal((await store.approvals.open(newApproval(now, { sub: 'carol' }), now, 3, 5)).outcome, 'created', 'a decision frees a place')
      clock.advance(300_000)
      const later = nowSec(clock)
      t2.equal((await store.approvals.open(newApproval(later, { sub: 'dave' }), later, 3, 5)).outcome, 'created', 'lapsed ones do not count')
      t2.equal((await store.approvals.open(newApproval(later, { binding: 'p9' }), later, 3, 5)).outcome, 'created')
    })

    tt.test('decide: only the person, only once, only while pending', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      const a = newApproval(now)
      await store.approvals.open(a, now, 20, 100)
      t2.equal(await store.approvals.decide(a.id, 'mallory', 'approved', 'mfa', now + 600, now), null, 'another person decides nothing')
      t2.equal((await store.approvals.get(a.id, now))?.status, 'pending')
      const d = await store.approvals.decide(a.id, 'alice', 'approved', 'mfa', now + 600, now)
      t2.match(d, { status: 'approved', decidedAt: now, decidedAcr: 'mfa', expiresAt: now + 600 })
      t2.equal(await store.approvals.decide(a.id, 'alice', 'denied', null, now, now), null, 'decided once')
      const b = newApproval(now, { binding: 'b2' })
      await store.approvals.open(b, now, 20, 100)
      clock.advance(300_000)
      t2.equal(await store.approvals.decide(b.id, 'alice', 'approved', null, now + 900, nowSec(clock)), null, 'an expired one cannot be approved')
      t2.equal((await store.approvals.get(b.id, nowSec(clock)))?.status, 'expired')
    })

    tt.test('consume: reuse once passes one call, reuse ttl passes until expiry; bound to the call', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const now = nowSec(clock)
      const once = newApproval(now)
      await store.approvals.open(once, now, 20, 100)
      t2.equal(await store.approvals.consume('alice', 'agent', 'g1', 'b1', now), null, 'pending passes nothing')
      await store.approvals.decide(once.id, 'alice', 'approved', null, now + 300, now)
      t2.equal(await store.approvals.consume('alice', 'agent', 'g2', 'b1', now), null, 'another grant')
      t2.equal(await store.approvals.consume('alice', 'other', 'g1', 'b1', now), null, 'another client')
      t2.equal(await store.approvals.consume('alice', 'agent', 'g1', 'bX', now), null, 'other arguments')
      t2.equal(await store.approvals.consume('bob', 'agent', 'g1', 'b1', now), null, 'another person')
      const peer = await h.peer()
      const passed = await Promise.all([store.approvals.consume('alice', 'agent', 'g1', 'b1', now), peer.approvals.consume('alice', 'agent', 'g1', 'b1', now)])
      t2.equal(passed.filter((p) => p !== null).length, 1, 'of two concurrent calls one passes')
      t2.equal(passed.find((p) => p !== null)?.status, 'used')
      t2.equal((await store.approvals.open(newApproval(now), now, 20, 100)).outcome, 'created', 'a used one is not pending: a new approval')

      const ttl = newApproval(now, { binding: 'bt', reuse: 'ttl' })
      await store.approvals.open(ttl, now, 20, 100)
      await store.approvals.decide(ttl.id, 'alice', 'approved', null, now + 60, now)
      t2.equal((await store.approvals.consume('alice', 'agent', 'g1', 'bt', now))?.status, 'approved')
      t2.equal((await store.approvals.consume('alice', 'agent', 'g1', 'bt', now + 59))?.id, ttl.id, 'again within ttl')
      clock.advance(60_000)
      t2.equal(await store.approvals.consume('alice', 'agent', 'g1', 'bt', nowSec(clock)), null, 'not after ttl')
    })

    tt.test('take: approved → used once (CIBA)', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      const a = newApproval(now, {
        kind: 'ciba',
        grantId: null,
        subject: { kind: 'ciba', scopes: [], bindingMessage: null, authorizationDetailsJson: null },
      })
      await store.approvals.open(a, now, 20, 100)
      t2.equal(await store.approvals.take(a.id, now), null, 'not approved yet')
      await store.approvals.decide(a.id, 'alice', 'approved', null, now + 120, now)
      t2.match(await store.approvals.take(a.id, now), { status: 'used', subject: { kind: 'ciba', scopes: [] } })
      t2.equal(await store.approvals.take(a.id, now), null, 'once')
      t2.equal(await store.approvals.take('nope', now), null)
    })

    tt.test('list: newest first, kept a day after expiry; cancel by grant and by person', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      const a = newApproval(now, { binding: 'a' })
      await store.approvals.open(a, now, 20, 100)
      clock.advance(1000)
      const b = newApproval(now + 1, { binding: 'b', grantId: 'g2' })
      await store.approvals.open(b, now + 1, 20, 100)
      await store.approvals.decide(b.id, 'alice', 'approved', null, now + 301, now + 1)
      const c = newApproval(now + 1, { binding: 'c', grantId: 'g2' })
      await store.approvals.open(c, now + 1, 20, 100)
      await store.approvals.decide(c.id, 'alice', 'denied', null, now + 1, now + 1)
      const bob = newApproval(now, { sub: 'bob', grantId: 'g2' })
      await store.approvals.open(bob, now, 20, 100)
      const list = await store.approvals.listForPerson('alice', now + 1, 10)
      t2.same(list.map((r) => r.id).slice(2), [a.id], 'the oldest last')
      t2.same(
        list
          .slice(0, 2)
          .map((r) => r.id)
          .sort(),
        [b.id, c.id].sort(),
      )
      t2.equal((await store.approvals.listForPerson('alice', now + 1, 1)).length, 1, 'limited')
      t2.equal(await store.approvals.cancelGrant('g2', now + 1), 2, "alice's approved one and bob's pending one; not the denied")
      t2.equal((await store.approvals.get(b.id, now + 1))?.status, 'cancelled')
      t2.equal((await store.approvals.get(c.id, now + 1))?.status, 'denied')
      t2.equal((await store.approvals.get(bob.id, now + 1))?.status, 'cancelled')
      t2.equal((await store.approvals.get(a.id, now + 1))?.status, 'pending', 'another grant untouched')
      t2.equal(await store.approvals.consume('alice', 'agent', 'g2', 'b', now + 1), null, 'a cancelled approval passes nothing')
      t2.equal(await store.approvals.cancelPerson('alice', now + 1), 1)
      t2.equal((await store.approvals.get(a.id, now + 1))?.status, 'cancelled')
      t2.equal(await store.approvals.cancelPerson('alice', now + 1), 0, 'nothing left to cancel')
      clock.advance((301 + APPROVAL_KEEP_SEC) * 1000)
      t2.same(await store.approvals.listForPerson('alice', nowSec(clock), 10), [], 'dropped after the keep time')
      t2.equal(await store.approvals.get(a.id, nowSec(clock)), null)
    })

    tt.test('sub, client and grant ids cannot be confused', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      await store.approvals.open(newApproval(now, { sub: 'a:b', clientId: 'c', binding: 'x' }), now, 20, 100)
      t2.equal((await store.approvals.open(newApproval(now, { sub: 'a', clientId: 'b:c', binding: 'x' }), now, 20, 100)).outcome, 'created')
      t2.equal((await store.approvals.open(newApproval(now, { sub: '{x}', clientId: '"c"', grantId: null, binding: 'x' }), now, 20, 100)).outcome, 'created')
      t2.equal((await store.approvals.listForPerson('a', now, 10)).length, 1)
    })
  })
}
