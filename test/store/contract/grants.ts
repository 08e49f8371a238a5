/** The contract of grants and refresh-token families (src/store/grants/types.ts), run on every store. */
import type { Test } from 'tap'
import type { RevocationEntry } from '../../../src/store/types.js'
import { eventually } from '../../helpers/http.js'
import { token, nowSec, grantRecord, type Setup } from './fixtures.js'

export function grantsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: grants and refresh families`, async (tt) => {
    tt.test('create, read, raise maxAccessExp (never lower)', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt = token()
      await store.grants.create(g, rt.hash)
      t2.same(await store.grants.get(g.grantId), g)
      await store.grants.noteAccessExp(g.grantId, g.maxAccessExp + 100)
      await store.grants.noteAccessExp(g.grantId, g.maxAccessExp - 100)
      t2.equal((await store.grants.get(g.grantId))?.maxAccessExp, g.maxAccessExp + 100)
      t2.same(await store.grants.findRefresh(rt.hash), { grant: { ...g, maxAccessExp: g.maxAccessExp + 100 }, current: true, issuedAt: nowSec(clock) })
      t2.equal(await store.grants.get('no-such-grant'), null)
    })

    tt.test('creating a grant again replaces the family', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const [rt1, rt2] = [token(), token()]
      await store.grants.create(g, rt1.hash)
      await store.grants.create(g, rt2.hash)
      t2.equal(await store.grants.findRefresh(rt1.hash), null)
      t2.same(await store.grants.rotate(rt1.hash, token().hash, g.expiresAt), { status: 'missing' })
      t2.equal((await store.grants.findRefresh(rt2.hash))?.current, true)
    })

    tt.test('a grant without a refresh token', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      await store.grants.create(g, null)
      t2.same(await store.grants.get(g.grantId), g)
    })

    tt.test('rotation: current → rotated, old becomes replaced, new is current', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt1 = token()
      const rt2 = token()
      await store.grants.create(g, rt1.hash)
      clock.advance(10_000)
      const newExp = nowSec(clock) + 3600
      const r = await store.grants.rotate(rt1.hash, rt2.hash, newExp)
      t2.same(r, { status: 'rotated', grant: { ...g, expiresAt: newExp } })
      const old = await store.grants.findRefresh(rt1.hash)
      const cur = await store.grants.findRefresh(rt2.hash)
      t2.equal(old?.current, false)
      t2.equal(old?.issuedAt, g.createdAt)
      t2.equal(cur?.current, true)
      t2.equal(cur?.issuedAt, nowSec(clock))
      t2.equal(cur?.grant.expiresAt, newExp)
    })

    tt.test('no rotation (newHash null): token stays current, lifetime unchanged', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt = token()
      await store.grants.create(g, rt.hash)
      const r = await store.grants.rotate(rt.hash, null, g.expiresAt + 999)
      t2.same(r, { status: 'rotated', grant: g })
      t2.equal((await store.grants.rotate(rt.hash, null, g.expiresAt)).status, 'rotated', 'usable again')
      t2.equal((await store.grants.findRefresh(rt.hash))?.current, true)
    })

    tt.test('reuse of a replaced token revokes the family, lists and publishes the grant', async (t2) => {
      const { clock, store } = await setup(t2)
      const seen: RevocationEntry[] = []
      const unsubscribe = await store.revocations.subscribe((e) => seen.push(e))
      t2.teardown(unsubscribe)
      const g = grantRecord(clock)
      const [rt1, rt2, rt3] = [token(), token(), token()]
      await store.grants.create(g, rt1.hash)
      await store.grants.noteAccessExp(g.grantId, g.maxAccessExp + 60)
      t2.equal((await store.grants.rotate(rt1.hash, rt2.hash, g.expiresAt)).status, 'rotated')

      const reused = await store.grants.rotate(rt1.hash, rt3.hash, g.expiresAt)
      t2.equal(reused.status, 'reused')
      t2.equal(reused.status === 'reused' && reused.grant.grantId, g.grantId)
      const expected = { kind: 'grant', id: g.grantId, exp: g.maxAccessExp + 60 }
      t2.same(await store.revocations.list(), [expected])
      t2.ok(await eventually(() => seen.length > 0), 'published')
      t2.same(seen, [expected])

      t2.equal(await store.grants.get(g.grantId), null, 'family gone')
      t2.equal(await store.grants.findRefresh(rt2.hash), null, 'newest token no longer found')
      t2.not((await store.grants.rotate(rt2.hash, token().hash, g.expiresAt)).status, 'rotated', 'newest token unusable')
      t2.equal(await store.grants.findRefresh(rt3.hash), null, 'the token minted for the failed rotation was never stored')
      t2.equal((await store.grants.rotate(rt1.hash, null, g.expiresAt)).status, 'reused', 'still recognised as reuse')
    })

    tt.test('revocation of a reused family lasts at least until now', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = { ...grantRecord(clock), maxAccessExp: nowSec(clock) - 100 }
      const [rt1, rt2] = [token(), token()]
      await store.grants.create(g, rt1.hash)
      await store.grants.rotate(rt1.hash, rt2.hash, g.expiresAt)
      await store.grants.rotate(rt1.hash, null, g.expiresAt)
      t2.same(await store.revocations.list(), [{ kind: 'grant', id: g.grantId, exp: nowSec(clock) }])
    })

    tt.test('50 concurrent rotations of one token: one rotated, 49 reused, then the family is dead', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt = token()
      await store.grants.create(g, rt.hash)
      const minted = Array.from({ length: 50 }, () => token())
      const results = await Promise.all(minted.map((n) => store.grants.rotate(rt.hash, n.hash, g.expiresAt)))
      const winners = results.flatMap((r, i) => (r.status === 'rotated' ? [minted[i]!] : []))
      t2.equal(winners.length, 1, 'exactly one rotated')
      t2.equal(results.filter((r) => r.status === 'reused').length, 49, 'the rest reused')
      const newest = winners[0]!
      t2.equal(await store.grants.findRefresh(newest.hash), null, 'newest token revoked too')
      t2.not((await store.grants.rotate(newest.hash, token().hash, g.expiresAt)).status, 'rotated')
      t2.same(
        (await store.revocations.list()).filter((e) => e.id === g.grantId),
        [{ kind: 'grant', id: g.grantId, exp: g.maxAccessExp }],
      )
    })

    tt.test('unknown token is missing; an expired family is missing', async (t2) => {
      const { clock, store } = await setup(t2)
      t2.same(await store.grants.rotate(token().hash, token().hash, nowSec(clock) + 60), { status: 'missing' })
      t2.equal(await store.grants.findRefresh(token().hash), null)
      const g = grantRecord(clock, 100)
      const rt = token()
      await store.grants.create(g, rt.hash)
      clock.advance(100_000)
      t2.same(await store.grants.rotate(rt.hash, token().hash, nowSec(clock) + 60), { status: 'missing' })
      t2.equal(await store.grants.findRefresh(rt.hash), null)
      t2.equal(await store.grants.get(g.grantId), null)
    })

    tt.test('revokeGrant is idempotent and kills the family', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt = token()
      await store.grants.create(g, rt.hash)
      const until = g.maxAccessExp + 10
      await store.grants.revoke(g.grantId, until)
      await store.grants.revoke(g.grantId, until)
      t2.same(await store.revocations.list(), [{ kind: 'grant', id: g.grantId, exp: until }])
      t2.equal(await store.grants.get(g.grantId), null)
      t2.equal(await store.grants.findRefresh(rt.hash), null)
      t2.same(await store.grants.rotate(rt.hash, token().hash, g.expiresAt), { status: 'missing' })
      await store.grants.noteAccessExp(g.grantId, until + 1000)
      t2.equal(await store.grants.get(g.grantId), null, 'noteAccessExp does not resurrect it')
    })

    tt.test('revokeGrant keeps the entry as long as the latest access token', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      await store.grants.create(g, token().hash)
      await store.grants.revoke(g.grantId, nowSec(clock))
      t2.same(await store.revocations.list(), [{ kind: 'grant', id: g.grantId, exp: g.maxAccessExp }])
    })

    tt.test('revokeGrant of an unknown grant still lists it', async (t2) => {
      const { clock, store } = await setup(t2)
      await store.grants.revoke('gone', nowSec(clock) + 30)
      t2.same(await store.revocations.list(), [{ kind: 'grant', id: 'gone', exp: nowSec(clock) + 30 }])
    })
  })
}
