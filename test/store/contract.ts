/**
 * The behaviour every Store implementation must show (src/store/types.ts).
 * Run by memory.test.ts and redis.test.ts. Time moves only through the
 * ManualClock; nothing sleeps to expire.
 */
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { eventually } from '../helpers/http.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { hashToken } from '../../src/store/hash.js'
import type {
  CodeRecord,
  DeviceRecord,
  GrantRecord,
  OpaqueTokenRecord,
  PasskeyRecord,
  RegisteredClientRecord,
  RevocationEntry,
  SessionRecord,
  TotpRecord,
  Store,
  UpstreamLoginRecord,
  UpstreamPersonRecord,
} from '../../src/store/types.js'

export interface StoreHarness {
  store: Store
  /**
   * Another instance over the same data (Redis: a second connection with its
   * own subscriber; memory: the same object, as there is no other instance).
   */
  peer(): Promise<Store>
  cleanup(): Promise<void>
}

export type MakeStore = (clock: ManualClock) => Promise<StoreHarness>

/** A fresh random token value and its hash, as callers mint them. */
export function token(): { value: string; hash: string } {
  const value = randomBytes(32).toString('base64url')
  return { value, hash: hashToken(value) }
}

export function nowSec(clock: ManualClock): number {
  return Math.floor(clock.now() / 1000)
}

export function codeRecord(clock: ManualClock, ttlSec = 60): CodeRecord {
  return {
    clientId: 'app',
    redirectUri: 'https://app.example/cb',
    effectiveRedirectUri: 'https://app.example/cb',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    codeChallengeMethod: 'S256',
    scope: 'openid orders:read',
    sub: 'alice',
    authTime: nowSec(clock),
    nonce: null,
    resource: null,
    expiresAt: nowSec(clock) + ttlSec,
  }
}

export function grantRecord(clock: ManualClock, ttlSec = 3600): GrantRecord {
  const now = nowSec(clock)
  return {
    grantId: `g-${randomBytes(8).toString('hex')}`,
    clientId: 'app',
    sub: 'alice',
    scope: 'openid offline_access orders:read',
    authTime: now,
    resource: null,
    createdAt: now,
    expiresAt: now + ttlSec,
    maxAccessExp: now + 300,
  }
}

export function deviceRecord(clock: ManualClock, userCode: string, ttlSec = 600): DeviceRecord {
  return {
    clientId: 'tv',
    userCode,
    scope: 'orders:read',
    status: 'pending',
    sub: null,
    authTime: null,
    expiresAt: nowSec(clock) + ttlSec,
    intervalSec: 5,
    lastPollMs: 0,
  }
}

export function userCode(): string {
  const letters = 'BCDFGHJKLMNPQRSTVWXZ'
  return Array.from(randomBytes(8), (b) => letters[b % letters.length]).join('')
}

export function runStoreContract(t: Test, name: string, makeStore: MakeStore): void {
  /** A store on a fresh clock, cleaned up when the subtest ends. */
  const setup = async (tt: Test): Promise<{ clock: ManualClock; h: StoreHarness; store: Store }> => {
    const clock = new ManualClock()
    const h = await makeStore(clock)
    tt.teardown(() => h.cleanup())
    return { clock, h, store: h.store }
  }

  t.test(`${name}: ping answers`, async (tt) => {
    const { store } = await setup(tt)
    await tt.resolves(store.ping())
  })

  t.test(`${name}: authorization codes`, async (tt) => {
    tt.test('Issued → Used exactly once; a replay sees the tombstone and the linked grant', async (t2) => {
      const { clock, store } = await setup(t2)
      const code = token()
      const rec = codeRecord(clock)
      await store.putCode(code.hash, rec, 60)
      const first = await store.takeCode(code.hash)
      t2.same(first, { status: 'taken', record: rec })
      t2.same(await store.takeCode(code.hash), { status: 'used', record: rec, grantId: null })
      await store.linkCodeGrant(code.hash, 'grant-1')
      t2.same(await store.takeCode(code.hash), { status: 'used', record: rec, grantId: 'grant-1' })
    })

    tt.test('unknown code is missing; linking it creates nothing', async (t2) => {
      const { store } = await setup(t2)
      const code = token()
      await store.linkCodeGrant(code.hash, 'grant-1')
      t2.same(await store.takeCode(code.hash), { status: 'missing' })
    })

    tt.test('linking an unused code does not mark it used', async (t2) => {
      const { clock, store } = await setup(t2)
      const code = token()
      await store.putCode(code.hash, codeRecord(clock), 60)
      await store.linkCodeGrant(code.hash, 'grant-1')
      t2.equal((await store.takeCode(code.hash)).status, 'taken')
    })

    tt.test('an expired code cannot be taken; the tombstone lives until the original expiry', async (t2) => {
      const { clock, store } = await setup(t2)
      const a = token()
      const b = token()
      await store.putCode(a.hash, codeRecord(clock, 60), 60)
      await store.putCode(b.hash, codeRecord(clock, 60), 60)
      t2.equal((await store.takeCode(b.hash)).status, 'taken')
      clock.advance(59_000)
      t2.equal((await store.takeCode(b.hash)).status, 'used', 'tombstone still there just before expiry')
      clock.advance(1_000)
      t2.same(await store.takeCode(a.hash), { status: 'missing' }, 'expired unused code')
      t2.same(await store.takeCode(b.hash), { status: 'missing' }, 'tombstone gone after expiry')
    })

    tt.test('50 concurrent exchanges of one code: exactly one taken', async (t2) => {
      const { clock, store } = await setup(t2)
      const code = token()
      await store.putCode(code.hash, codeRecord(clock), 60)
      const results = await Promise.all(Array.from({ length: 50 }, () => store.takeCode(code.hash)))
      t2.equal(results.filter((r) => r.status === 'taken').length, 1)
      t2.equal(results.filter((r) => r.status === 'used').length, 49)
    })
  })

  t.test(`${name}: grants and refresh families`, async (tt) => {
    tt.test('create, read, raise maxAccessExp (never lower)', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt = token()
      await store.createGrant(g, rt.hash)
      t2.same(await store.getGrant(g.grantId), g)
      await store.noteAccessExp(g.grantId, g.maxAccessExp + 100)
      await store.noteAccessExp(g.grantId, g.maxAccessExp - 100)
      t2.equal((await store.getGrant(g.grantId))?.maxAccessExp, g.maxAccessExp + 100)
      t2.same(await store.findRefresh(rt.hash), { grant: { ...g, maxAccessExp: g.maxAccessExp + 100 }, current: true, issuedAt: nowSec(clock) })
      t2.equal(await store.getGrant('no-such-grant'), null)
    })

    tt.test('creating a grant again replaces the family', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const [rt1, rt2] = [token(), token()]
      await store.createGrant(g, rt1.hash)
      await store.createGrant(g, rt2.hash)
      t2.equal(await store.findRefresh(rt1.hash), null)
      t2.same(await store.rotateRefresh(rt1.hash, token().hash, g.expiresAt), { status: 'missing' })
      t2.equal((await store.findRefresh(rt2.hash))?.current, true)
    })

    tt.test('a grant without a refresh token', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      await store.createGrant(g, null)
      t2.same(await store.getGrant(g.grantId), g)
    })

    tt.test('rotation: current → rotated, old becomes replaced, new is current', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt1 = token()
      const rt2 = token()
      await store.createGrant(g, rt1.hash)
      clock.advance(10_000)
      const newExp = nowSec(clock) + 3600
      const r = await store.rotateRefresh(rt1.hash, rt2.hash, newExp)
      t2.same(r, { status: 'rotated', grant: { ...g, expiresAt: newExp } })
      const old = await store.findRefresh(rt1.hash)
      const cur = await store.findRefresh(rt2.hash)
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
      await store.createGrant(g, rt.hash)
      const r = await store.rotateRefresh(rt.hash, null, g.expiresAt + 999)
      t2.same(r, { status: 'rotated', grant: g })
      t2.equal((await store.rotateRefresh(rt.hash, null, g.expiresAt)).status, 'rotated', 'usable again')
      t2.equal((await store.findRefresh(rt.hash))?.current, true)
    })

    tt.test('reuse of a replaced token revokes the family, lists and publishes the grant', async (t2) => {
      const { clock, store } = await setup(t2)
      const seen: RevocationEntry[] = []
      const unsubscribe = await store.subscribeRevocations((e) => seen.push(e))
      t2.teardown(unsubscribe)
      const g = grantRecord(clock)
      const [rt1, rt2, rt3] = [token(), token(), token()]
      await store.createGrant(g, rt1.hash)
      await store.noteAccessExp(g.grantId, g.maxAccessExp + 60)
      t2.equal((await store.rotateRefresh(rt1.hash, rt2.hash, g.expiresAt)).status, 'rotated')

      const reused = await store.rotateRefresh(rt1.hash, rt3.hash, g.expiresAt)
      t2.equal(reused.status, 'reused')
      t2.equal(reused.status === 'reused' && reused.grant.grantId, g.grantId)
      const expected = { kind: 'grant', id: g.grantId, exp: g.maxAccessExp + 60 }
      t2.same(await store.listRevocations(), [expected])
      t2.ok(await eventually(() => seen.length > 0), 'published')
      t2.same(seen, [expected])

      t2.equal(await store.getGrant(g.grantId), null, 'family gone')
      t2.equal(await store.findRefresh(rt2.hash), null, 'newest token no longer found')
      t2.not((await store.rotateRefresh(rt2.hash, token().hash, g.expiresAt)).status, 'rotated', 'newest token unusable')
      t2.equal(await store.findRefresh(rt3.hash), null, 'the token minted for the failed rotation was never stored')
      t2.equal((await store.rotateRefresh(rt1.hash, null, g.expiresAt)).status, 'reused', 'still recognised as reuse')
    })

    tt.test('revocation of a reused family lasts at least until now', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = { ...grantRecord(clock), maxAccessExp: nowSec(clock) - 100 }
      const [rt1, rt2] = [token(), token()]
      await store.createGrant(g, rt1.hash)
      await store.rotateRefresh(rt1.hash, rt2.hash, g.expiresAt)
      await store.rotateRefresh(rt1.hash, null, g.expiresAt)
      t2.same(await store.listRevocations(), [{ kind: 'grant', id: g.grantId, exp: nowSec(clock) }])
    })

    tt.test('50 concurrent rotations of one token: one rotated, 49 reused, then the family is dead', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt = token()
      await store.createGrant(g, rt.hash)
      const minted = Array.from({ length: 50 }, () => token())
      const results = await Promise.all(minted.map((n) => store.rotateRefresh(rt.hash, n.hash, g.expiresAt)))
      const winners = results.flatMap((r, i) => (r.status === 'rotated' ? [minted[i]!] : []))
      t2.equal(winners.length, 1, 'exactly one rotated')
      t2.equal(results.filter((r) => r.status === 'reused').length, 49, 'the rest reused')
      const newest = winners[0]!
      t2.equal(await store.findRefresh(newest.hash), null, 'newest token revoked too')
      t2.not((await store.rotateRefresh(newest.hash, token().hash, g.expiresAt)).status, 'rotated')
      t2.same(
        (await store.listRevocations()).filter((e) => e.id === g.grantId),
        [{ kind: 'grant', id: g.grantId, exp: g.maxAccessExp }],
      )
    })

    tt.test('unknown token is missing; an expired family is missing', async (t2) => {
      const { clock, store } = await setup(t2)
      t2.same(await store.rotateRefresh(token().hash, token().hash, nowSec(clock) + 60), { status: 'missing' })
      t2.equal(await store.findRefresh(token().hash), null)
      const g = grantRecord(clock, 100)
      const rt = token()
      await store.createGrant(g, rt.hash)
      clock.advance(100_000)
      t2.same(await store.rotateRefresh(rt.hash, token().hash, nowSec(clock) + 60), { status: 'missing' })
      t2.equal(await store.findRefresh(rt.hash), null)
      t2.equal(await store.getGrant(g.grantId), null)
    })

    tt.test('revokeGrant is idempotent and kills the family', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      const rt = token()
      await store.createGrant(g, rt.hash)
      const until = g.maxAccessExp + 10
      await store.revokeGrant(g.grantId, until)
      await store.revokeGrant(g.grantId, until)
      t2.same(await store.listRevocations(), [{ kind: 'grant', id: g.grantId, exp: until }])
      t2.equal(await store.getGrant(g.grantId), null)
      t2.equal(await store.findRefresh(rt.hash), null)
      t2.same(await store.rotateRefresh(rt.hash, token().hash, g.expiresAt), { status: 'missing' })
      await store.noteAccessExp(g.grantId, until + 1000)
      t2.equal(await store.getGrant(g.grantId), null, 'noteAccessExp does not resurrect it')
    })

    tt.test('revokeGrant keeps the entry as long as the latest access token', async (t2) => {
      const { clock, store } = await setup(t2)
      const g = grantRecord(clock)
      await store.createGrant(g, token().hash)
      await store.revokeGrant(g.grantId, nowSec(clock))
      t2.same(await store.listRevocations(), [{ kind: 'grant', id: g.grantId, exp: g.maxAccessExp }])
    })

    tt.test('revokeGrant of an unknown grant still lists it', async (t2) => {
      const { clock, store } = await setup(t2)
      await store.revokeGrant('gone', nowSec(clock) + 30)
      t2.same(await store.listRevocations(), [{ kind: 'grant', id: 'gone', exp: nowSec(clock) + 30 }])
    })
  })

  t.test(`${name}: revocation list`, async (tt) => {
    tt.test('add, list, keep the later exp, forget after exp', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      await store.addRevocation({ kind: 'jti', id: 'j1', exp: now + 60 })
      await store.addRevocation({ kind: 'jti', id: 'j1', exp: now + 30 })
      await store.addRevocation({ kind: 'jti', id: 'j2', exp: now + 120 })
      await store.addRevocation({ kind: 'grant', id: 'g1', exp: now + 60 })
      const sorted = (l: RevocationEntry[]): RevocationEntry[] => [...l].sort((a, b) => (a.kind + a.id).localeCompare(b.kind + b.id))
      t2.same(sorted(await store.listRevocations()), [
        { kind: 'grant', id: 'g1', exp: now + 60 },
        { kind: 'jti', id: 'j1', exp: now + 60 },
        { kind: 'jti', id: 'j2', exp: now + 120 },
      ])
      clock.advance(60_000)
      t2.equal((await store.listRevocations()).length, 3, 'kept through the exp second')
      clock.advance(1_000)
      t2.same(await store.listRevocations(), [{ kind: 'jti', id: 'j2', exp: now + 120 }])
    })

    tt.test('subscribers receive entries until they unsubscribe', async (t2) => {
      const { clock, store } = await setup(t2)
      const seen: RevocationEntry[] = []
      const unsubscribe = await store.subscribeRevocations((e) => seen.push(e))
      const entry: RevocationEntry = { kind: 'jti', id: 'j-sub', exp: nowSec(clock) + 60 }
      await store.addRevocation(entry)
      t2.ok(await eventually(() => seen.length === 1))
      t2.same(seen, [entry])
      await unsubscribe()
      await store.addRevocation({ kind: 'jti', id: 'j-after', exp: nowSec(clock) + 60 })
      // Proof of quiet: a second subscriber gets the next entry, the first does not.
      const later: RevocationEntry[] = []
      const unsub2 = await store.subscribeRevocations((e) => later.push(e))
      t2.teardown(unsub2)
      await store.addRevocation({ kind: 'jti', id: 'j-last', exp: nowSec(clock) + 60 })
      // Delivery is asynchronous: j-after may reach the second subscriber too; j-last must.
      t2.ok(await eventually(() => later.some((e) => e.id === 'j-last')))
      t2.same(seen, [entry], 'no delivery after unsubscribe')
    })

    tt.test('an entry added through one instance reaches the other', async (t2) => {
      const { clock, h, store } = await setup(t2)
      const other = await h.peer()
      const seen: RevocationEntry[] = []
      const unsubscribe = await other.subscribeRevocations((e) => seen.push(e))
      t2.teardown(unsubscribe)
      const entry: RevocationEntry = { kind: 'grant', id: 'g-peer', exp: nowSec(clock) + 60 }
      await store.addRevocation(entry)
      t2.ok(await eventually(() => seen.length === 1), 'published to the other instance')
      t2.same(seen, [entry])
      t2.same(await other.listRevocations(), [entry], 'listed by the other instance')
    })
  })

  t.test(`${name}: opaque access tokens`, async (tt) => {
    const { clock, store } = await setup(tt)
    const at = token()
    const rec: OpaqueTokenRecord = {
      iss: 'https://as.example',
      sub: 'alice',
      aud: ['https://api.example'],
      clientId: 'app',
      scope: 'orders:read',
      jti: 'jti-1',
      iat: nowSec(clock),
      exp: nowSec(clock) + 300,
      grantId: null,
    }
    await store.putOpaqueToken(at.hash, rec)
    tt.same(await store.getOpaqueToken(at.hash), rec)
    tt.equal(await store.deleteOpaqueToken(at.hash), true)
    tt.equal(await store.getOpaqueToken(at.hash), null)
    tt.equal(await store.deleteOpaqueToken(at.hash), false, 'second delete finds nothing')

    const short = token()
    await store.putOpaqueToken(short.hash, { ...rec, exp: nowSec(clock) + 10 })
    clock.advance(10_000)
    tt.equal(await store.getOpaqueToken(short.hash), null, 'expired')
    tt.equal(await store.deleteOpaqueToken(short.hash), false, 'an expired token was not live')
  })

  t.test(`${name}: device authorization`, async (tt) => {
    tt.test('user codes are unique while live; lookup by user code', async (t2) => {
      const { clock, store } = await setup(t2)
      const uc = userCode()
      const dc = token()
      const rec = deviceRecord(clock, uc)
      t2.equal(await store.putDevice(dc.hash, rec), true)
      t2.equal(await store.putDevice(token().hash, deviceRecord(clock, uc)), false, 'user code in use')
      t2.same(await store.getDeviceByUserCode(uc), { deviceHash: dc.hash, record: rec })
      t2.equal(await store.getDeviceByUserCode(userCode()), null)
      clock.advance(600_000)
      t2.equal(await store.getDeviceByUserCode(uc), null, 'expired')
      t2.equal(await store.putDevice(token().hash, deviceRecord(clock, uc)), true, 'free again after expiry')
    })

    tt.test('approve once, then the first poll gets it and consumes it', async (t2) => {
      const { clock, store } = await setup(t2)
      const uc = userCode()
      const dc = token()
      await store.putDevice(dc.hash, deviceRecord(clock, uc))
      t2.equal(await store.decideDevice(uc, { approved: true, sub: 'alice', authTime: nowSec(clock) }), true)
      t2.equal(await store.decideDevice(uc, { approved: false }), false, 'only from pending')
      const r = await store.pollDevice(dc.hash, clock.now())
      t2.equal(r.status, 'approved')
      t2.match(r.status === 'approved' && r.record, { sub: 'alice', authTime: nowSec(clock), clientId: 'tv', scope: 'orders:read', decidedAtMs: clock.now() })
      clock.advance(10_000)
      t2.same(await store.pollDevice(dc.hash, clock.now()), { status: 'missing' }, 'consumed')
    })

    tt.test('an approval keeps how the person signed in (amr, acr) for the tokens', async (t2) => {
      const { clock, store } = await setup(t2)
      const uc = userCode()
      const dc = token()
      await store.putDevice(dc.hash, deviceRecord(clock, uc))
      t2.equal(await store.getDeviceByUserCode(uc).then((f) => f?.record.amr), undefined, 'nothing before the approval')
      await store.decideDevice(uc, { approved: true, sub: 'alice', authTime: nowSec(clock), amr: ['hwk', 'user', 'mfa'], acr: 'phr' })
      const r = await store.pollDevice(dc.hash, clock.now())
      t2.match(r.status === 'approved' && r.record, { sub: 'alice', amr: ['hwk', 'user', 'mfa'], acr: 'phr' })
      const other = userCode()
      const dc2 = token()
      await store.putDevice(dc2.hash, deviceRecord(clock, other))
      await store.decideDevice(other, { approved: true, sub: 'alice', authTime: nowSec(clock) })
      const r2 = await store.pollDevice(dc2.hash, clock.now())
      t2.equal(r2.status === 'approved' && (r2.record.amr ?? r2.record.acr), undefined, 'an approval that says nothing reads back as nothing')
    })

    tt.test('pending, slow_down grows the interval by 5, deny stays denied', async (t2) => {
      const { clock, store } = await setup(t2)
      const uc = userCode()
      const dc = token()
      await store.putDevice(dc.hash, deviceRecord(clock, uc))
      const t0 = clock.now()
      const p1 = await store.pollDevice(dc.hash, t0)
      t2.equal(p1.status, 'pending')
      const p2 = await store.pollDevice(dc.hash, t0 + 1_000)
      t2.equal(p2.status, 'slow_down')
      t2.equal(p2.status === 'slow_down' && p2.record.intervalSec, 10)
      const p3 = await store.pollDevice(dc.hash, t0 + 1_000 + 9_000)
      t2.equal(p3.status, 'slow_down', 'the new interval (10 s) applies')
      t2.equal(p3.status === 'slow_down' && p3.record.intervalSec, 15)
      const p4 = await store.pollDevice(dc.hash, t0 + 10_000 + 15_000)
      t2.equal(p4.status, 'pending')
      t2.equal(p4.status === 'pending' && p4.record.lastPollMs, t0 + 25_000)
      t2.equal(await store.decideDevice(uc, { approved: false }), true)
      t2.equal((await store.pollDevice(dc.hash, t0 + 50_000)).status, 'denied')
      t2.equal((await store.pollDevice(dc.hash, t0 + 100_000)).status, 'denied', 'stays denied')
      t2.equal(await store.decideDevice(uc, { approved: true, sub: 'alice', authTime: 1 }), false)
    })

    tt.test('expired: poll is missing, decision refused', async (t2) => {
      const { clock, store } = await setup(t2)
      const uc = userCode()
      const dc = token()
      await store.putDevice(dc.hash, deviceRecord(clock, uc, 60))
      clock.advance(60_000)
      t2.same(await store.pollDevice(dc.hash, clock.now()), { status: 'missing' })
      t2.equal(await store.decideDevice(uc, { approved: true, sub: 'alice', authTime: 1 }), false)
      t2.same(await store.pollDevice(token().hash, clock.now()), { status: 'missing' }, 'unknown')
    })

    tt.test('20 concurrent polls of an approved code: exactly one approved', async (t2) => {
      const { clock, store } = await setup(t2)
      const uc = userCode()
      const dc = token()
      await store.putDevice(dc.hash, deviceRecord(clock, uc))
      await store.decideDevice(uc, { approved: true, sub: 'alice', authTime: nowSec(clock) })
      const polls = await Promise.all(Array.from({ length: 20 }, () => store.pollDevice(dc.hash, clock.now())))
      t2.equal(polls.filter((p) => p.status === 'approved').length, 1)
      t2.equal(polls.filter((p) => p.status === 'missing').length, 19)
    })
  })

  t.test(`${name}: authenticator apps (TOTP) and recovery codes`, async (tt) => {
    const { clock, store } = await setup(tt)
    tt.equal(await store.getTotp('alice'), null, 'none yet')
    const pending: TotpRecord = { secret: 'JBSWY3DPEHPK3PXP', createdAt: nowSec(clock), confirmedAt: null, recovery: [] }
    await store.putTotp('alice', pending)
    tt.same(await store.getTotp('alice'), pending, 'being set up')
    const confirmed: TotpRecord = {
      ...pending,
      confirmedAt: nowSec(clock),
      recovery: [
        { hash: 'h-1', usedAt: null },
        { hash: 'h-2', usedAt: 5 },
      ],
    }
    await store.putTotp('alice', confirmed)
    tt.same(await store.getTotp('alice'), confirmed, 'replaced whole, recovery codes included')
    tt.equal(await store.getTotp('bob'), null, "nobody else's")
    clock.advance(400 * 86_400_000)
    tt.same(await store.getTotp('alice'), confirmed, 'kept until removed')
    await store.deleteTotp('alice')
    tt.equal(await store.getTotp('alice'), null, 'removed')
    await store.deleteTotp('alice')
  })

  t.test(`${name}: sessions and consent`, async (tt) => {
    const { clock, store } = await setup(tt)
    const sid = token().value
    const rec: SessionRecord = { sub: 'alice', username: 'alice', authTime: nowSec(clock), csrf: 'c-1' }
    await store.putSession(sid, rec, 3600)
    tt.same(await store.getSession(sid), rec)
    await store.deleteSession(sid)
    tt.equal(await store.getSession(sid), null, 'deleted')
    await store.putSession(sid, rec, 60)
    clock.advance(60_000)
    tt.equal(await store.getSession(sid), null, 'expired')
    const strong: SessionRecord = { ...rec, amr: ['swk', 'user', 'mfa'], acr: 'phr' }
    await store.putSession(sid, strong, 60)
    tt.same(await store.getSession(sid), strong, 'how the person signed in is kept')

    await store.putConsent('alice', 'app', ['openid', 'orders:read'], 100)
    tt.same(await store.getConsent('alice', 'app'), ['openid', 'orders:read'])
    tt.equal(await store.getConsent('alice', 'other'), null)
    tt.equal(await store.getConsent('bob', 'app'), null)
    await store.putConsent('a:b', 'c', ['x'], 100)
    tt.equal(await store.getConsent('a', 'b:c'), null, 'sub and client id cannot be confused')
    clock.advance(100_000)
    tt.equal(await store.getConsent('alice', 'app'), null, 'expired')
  })

  t.test(`${name}: allowances (the account page)`, async (tt) => {
    tt.test('notes merge per (sub, client): scopes in order, the latest time, every grant', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      t2.same(await store.listAllowances('alice'), [], 'nothing yet')
      await store.noteAllowance('alice', 'app', { scopes: ['openid', 'orders:read'], at: now, grantId: null, until: now + 100 })
      await store.noteAllowance('alice', 'app', { scopes: ['orders:read', 'orders:write'], at: now - 50, grantId: 'g1', until: now + 50 })
      await store.noteAllowance('alice', 'app', { scopes: [], at: now + 5, grantId: 'g2', until: now + 200 })
      await store.noteAllowance('alice', 'other', { scopes: ['openid'], at: now, grantId: 'g3', until: now + 10 })
      await store.noteAllowance('bob', 'app', { scopes: ['openid'], at: now, grantId: 'g4', until: now + 10 })
      const list = (await store.listAllowances('alice')).sort((a, b) => a.clientId.localeCompare(b.clientId))
      t2.same(
        list.map((a) => ({ ...a, grantIds: [...a.grantIds].sort() })),
        [
          { clientId: 'app', scopes: ['openid', 'orders:read', 'orders:write'], allowedAt: now + 5, grantIds: ['g1', 'g2'] },
          { clientId: 'other', scopes: ['openid'], allowedAt: now, grantIds: ['g3'] },
        ],
      )
      t2.same(
        (await store.listAllowances('bob')).map((a) => a.grantIds),
        [['g4']],
        'per person',
      )
      await store.noteAllowance('a:b', 'c', { scopes: ['x'], at: now, grantId: 'gx', until: now + 10 })
      t2.same(await store.listAllowances('a'), [], 'sub and client id cannot be confused')
    })

    tt.test('a grant leaves the list when its lifetime ends; a later note extends it; the allowance ends last', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      await store.noteAllowance('alice', 'app', { scopes: ['openid'], at: now, grantId: 'g1', until: now + 10 })
      await store.noteAllowance('alice', 'app', { scopes: [], at: now, grantId: 'g2', until: now + 20 })
      await store.noteAllowance('alice', 'app', { scopes: [], at: 0, grantId: 'g1', until: now + 30 }) // a refresh extends g1
      clock.advance(20_000)
      t2.same(
        (await store.listAllowances('alice')).map((a) => a.grantIds),
        [['g1']],
        'g2 ended, g1 was extended',
      )
      clock.advance(10_000)
      t2.same(await store.listAllowances('alice'), [], 'everything ended')
    })

    tt.test('withdraw: one step forgets the allowance and the remembered consent, and returns the live grants', async (t2) => {
      const { clock, store } = await setup(t2)
      const now = nowSec(clock)
      await store.putConsent('alice', 'app', ['openid'], 100)
      await store.putConsent('alice', 'other', ['openid'], 100)
      await store.noteAllowance('alice', 'app', { scopes: ['openid'], at: now, grantId: 'g1', until: now + 100 })
      await store.noteAllowance('alice', 'app', { scopes: [], at: now, grantId: 'g-old', until: now + 1 })
      await store.noteAllowance('alice', 'other', { scopes: ['openid'], at: now, grantId: 'g2', until: now + 100 })
      clock.advance(1_000)
      t2.same(await store.withdrawAllowance('alice', 'app', 600), ['g1'], 'the live grant, not the ended one')
      t2.equal(await store.getConsent('alice', 'app'), null, 'remembered consent gone')
      t2.same(
        (await store.listAllowances('alice')).map((a) => a.clientId),
        ['other'],
        'the other client stays',
      )
      t2.same(await store.getConsent('alice', 'other'), ['openid'])
      t2.same(await store.withdrawAllowance('alice', 'app', 600), [], 'idempotent')
      await store.noteAllowance('alice', 'app', { scopes: ['orders:read'], at: now + 2, grantId: 'g3', until: now + 100 })
      t2.same(
        await store.listAllowances('alice').then((l) => l.find((a) => a.clientId === 'app')),
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
      await store.noteAllowance('alice', 'app', { scopes: ['openid'], at: now, grantId: null, until: now + 100 })
      clock.advance(5_000)
      await store.withdrawAllowance('alice', 'app', 60)
      const withdrawnAt = clock.now()
      clock.advance(1_000)
      const note = (gid: string, authorizedAtMs?: number) => ({
        scopes: ['orders:read'],
        at: nowSec(clock),
        grantId: gid,
        until: nowSec(clock) + 100,
        authorizedAtMs,
      })
      t2.equal(await store.noteAllowance('alice', 'app', note('g-before', given)), false, 'a code issued before the withdrawal: refused')
      t2.equal(await store.noteAllowance('alice', 'app', note('g-same', withdrawnAt)), false, 'issued in the same millisecond: refused')
      t2.same(await store.listAllowances('alice'), [], 'the refused notes left nothing')
      const other = await h.peer()
      t2.equal(await other.noteAllowance('alice', 'app', note('g-peer', given)), false, 'another instance refuses it too')
      t2.equal(await store.noteAllowance('alice', 'other', note('g-other', given)), true, 'another client is not withdrawn')
      t2.equal(await store.noteAllowance('bob', 'app', note('g-bob', given)), true, 'another person is not withdrawn')
      t2.equal(await store.noteAllowance('alice', 'app', note('g-after', withdrawnAt + 1)), true, 'an authorization given after the withdrawal')
      t2.equal(await store.noteAllowance('alice', 'app', note('g-refresh')), true, 'a note with no authorization time (a refresh) is not judged')
      t2.same((await store.listAllowances('alice')).map((a) => [a.clientId, [...a.grantIds].sort()]).sort(), [
        ['app', ['g-after', 'g-refresh']],
        ['other', ['g-other']],
      ])
      clock.advance(60_000)
      t2.equal(await store.noteAllowance('alice', 'app', note('g-late', given)), true, 'forgotten after rememberSec (the code it guarded has expired)')
    })

    tt.test('an allowance seen through another instance', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const now = nowSec(clock)
      await store.noteAllowance('alice', 'app', { scopes: ['openid'], at: now, grantId: 'g1', until: now + 100 })
      const other = await h.peer()
      t2.same(
        (await other.listAllowances('alice')).map((a) => a.grantIds),
        [['g1']],
      )
      t2.same(await other.withdrawAllowance('alice', 'app', 600), ['g1'])
      t2.same(await store.listAllowances('alice'), [])
    })
  })

  t.test(`${name}: rate-limit counters`, async (tt) => {
    const { clock, store } = await setup(tt)
    tt.equal(await store.hits('ip:1'), 0)
    tt.equal(await store.hit('ip:1', 60), 1)
    tt.equal(await store.hit('ip:1', 60), 2)
    clock.advance(59_000)
    tt.equal(await store.hit('ip:1', 60), 3, 'same window')
    tt.equal(await store.hits('ip:1'), 3)
    tt.equal(await store.hits('ip:2'), 0, 'keys are separate')
    clock.advance(1_000)
    tt.equal(await store.hits('ip:1'), 0, 'window over')
    tt.equal(await store.hit('ip:1', 60), 1, 'a new window')
    await store.clearHits('ip:1')
    tt.equal(await store.hits('ip:1'), 0)
    const burst = await Promise.all(Array.from({ length: 30 }, () => store.hit('ip:3', 60)))
    tt.same(
      [...burst].sort((a, b) => a - b),
      Array.from({ length: 30 }, (_, i) => i + 1),
      'concurrent hits count each once',
    )
  })

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
      await store.putUpstreamLogin(s.hash, login(clock), 600)
      t2.same(await store.takeUpstreamLogin(s.hash), login(clock), 'taken with everything it held')
      t2.equal(await store.takeUpstreamLogin(s.hash), null, 'a second take finds nothing (state is single use)')
      t2.equal(await store.takeUpstreamLogin(token().hash), null, 'unknown')
      const late = token()
      await store.putUpstreamLogin(late.hash, { ...login(clock), continuation: { kind: 'device', userCode: 'ABCDEFGH' } }, 600)
      clock.advance(600_000)
      t2.equal(await store.takeUpstreamLogin(late.hash), null, 'expired')
    })
    tt.test('20 concurrent takes of one state: exactly one gets it, also across instances', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      const s = token()
      await store.putUpstreamLogin(s.hash, login(clock), 600)
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).takeUpstreamLogin(s.hash)))
      t2.equal(results.filter((r) => r !== null).length, 1)
    })
    tt.test('a person is kept under their sub, replaced by a later sign-in, forgotten after the ttl', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const rec: UpstreamPersonRecord = { provider: 'corp', upstreamSub: 'u-1', claims: { name: 'Una', email: 'una@example.com' }, updatedAt: nowSec(clock) }
      await store.putUpstreamPerson('corp:u-1', rec, 100)
      t2.same(await (await h.peer()).getUpstreamPerson('corp:u-1'), rec)
      t2.equal(await store.getUpstreamPerson('corp:u-2'), null)
      await store.putUpstreamPerson('corp:u-1', { ...rec, claims: { name: 'Una B' } }, 100)
      t2.same((await store.getUpstreamPerson('corp:u-1'))?.claims, { name: 'Una B' })
      clock.advance(100_000)
      t2.equal(await store.getUpstreamPerson('corp:u-1'), null, 'expired')
    })
  })

  t.test(`${name}: passkeys (WebAuthn)`, async (tt) => {
    const passkey = (clock: ManualClock, sub: string, id: string, extra: Partial<PasskeyRecord> = {}): PasskeyRecord => ({
      credentialId: id,
      sub,
      username: sub,
      name: 'Laptop {odd}',
      publicKey: 'pQECAyYgASFYIA',
      counter: 0,
      transports: ['internal', 'hybrid'],
      deviceType: 'multiDevice',
      backedUp: true,
      createdAt: nowSec(clock),
      lastUsedAt: null,
      ...extra,
    })
    tt.test('a challenge is taken once; unknown and expired are null; another instance sees it', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      const c = token()
      const rec = { purpose: 'register' as const, sub: 'alice', expiresAt: nowSec(clock) + 300 }
      await store.putPasskeyChallenge(c.hash, rec, 300)
      t2.same(await other.takePasskeyChallenge(c.hash), rec, 'taken through the other instance with what it held')
      t2.equal(await store.takePasskeyChallenge(c.hash), null, 'single use')
      t2.equal(await store.takePasskeyChallenge(token().hash), null, 'unknown')
      const late = token()
      await store.putPasskeyChallenge(late.hash, { purpose: 'sign-in', sub: null, expiresAt: nowSec(clock) + 300 }, 300)
      clock.advance(300_000)
      t2.equal(await store.takePasskeyChallenge(late.hash), null, 'expired')
      const burst = token()
      await store.putPasskeyChallenge(burst.hash, rec, 300)
      const takes = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).takePasskeyChallenge(burst.hash)))
      t2.equal(takes.filter((r) => r !== null).length, 1, 'of 20 concurrent takes exactly one gets it')
    })
    tt.test('add, read from another instance, list per person oldest first; a credential id belongs to one person', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      const a1 = passkey(clock, 'alice', 'cred-a1')
      t2.equal(await store.addPasskey(a1), true)
      clock.advance(1000)
      const a2 = passkey(clock, 'alice', 'cred-a2', { transports: [], deviceType: 'singleDevice', backedUp: false, counter: 7 })
      t2.equal(await store.addPasskey(a2), true)
      t2.equal(await store.addPasskey(passkey(clock, 'bob', 'cred-b1')), true)
      t2.same(await other.getPasskey('cred-a2'), a2, 'every field as stored, empty transports included')
      t2.same(await other.listPasskeys('alice'), [a1, a2])
      t2.same(await store.listPasskeys('carol'), [], 'nobody else has any')
      t2.equal(await other.addPasskey(passkey(clock, 'bob', 'cred-a1')), false, "alice's credential id cannot be registered again, by anyone")
      t2.same(await store.getPasskey('cred-a1'), a1, 'and hers is unchanged')
      t2.equal(await store.getPasskey('cred-none'), null)
    })
    tt.test("renaming: only the owner's, and a removed passkey stays removed", async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      await store.addPasskey(passkey(clock, 'alice', 'cred-r', { counter: 3 }))
      t2.equal(await other.renamePasskey('alice', 'cred-r', 'Phone'), true)
      t2.match(await store.getPasskey('cred-r'), { name: 'Phone', counter: 3, sub: 'alice' }, 'renamed, nothing else changed')
      t2.equal(await store.renamePasskey('bob', 'cred-r', 'Mine now'), false, "bob cannot rename alice's passkey")
      t2.equal((await store.getPasskey('cred-r'))?.name, 'Phone')
      await store.removePasskey('alice', 'cred-r')
      t2.equal(await store.renamePasskey('alice', 'cred-r', 'Back'), false, 'a removed one cannot be renamed')
      t2.equal(await other.getPasskey('cred-r'), null, 'and is not brought back')
      t2.same(await store.listPasskeys('alice'), [])
    })
    tt.test("removal: only the owner's, once; the id can be registered again after", async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      await store.addPasskey(passkey(clock, 'alice', 'cred-x'))
      t2.equal(await store.removePasskey('bob', 'cred-x'), false, "bob cannot remove alice's passkey")
      t2.not(await store.getPasskey('cred-x'), null, 'still there')
      const removals = await Promise.all([store.removePasskey('alice', 'cred-x'), other.removePasskey('alice', 'cred-x')])
      t2.equal(removals.filter((r) => r).length, 1, 'of two concurrent removals one removes it')
      t2.equal(await store.getPasskey('cred-x'), null)
      t2.same(await other.listPasskeys('alice'), [])
      t2.equal(await store.addPasskey(passkey(clock, 'alice', 'cred-x')), true, 'registrable again')
    })
    tt.test('a sign-in moves the counter forward; a counter going back or standing still is refused and changes nothing', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      await store.addPasskey(passkey(clock, 'alice', 'cred-c', { counter: 5 }))
      const at = nowSec(clock) + 10
      t2.equal(await store.usePasskey('alice', 'cred-c', { counter: 6, backedUp: false, at }), 'used')
      t2.match(await other.getPasskey('cred-c'), { counter: 6, backedUp: false, lastUsedAt: at })
      t2.equal(await other.usePasskey('alice', 'cred-c', { counter: 6, backedUp: true, at: at + 1 }), 'regressed', 'the same counter again')
      t2.equal(await store.usePasskey('alice', 'cred-c', { counter: 2, backedUp: true, at: at + 1 }), 'regressed', 'a lower counter (a clone)')
      t2.match(await store.getPasskey('cred-c'), { counter: 6, backedUp: false, lastUsedAt: at }, 'unchanged by the refusals')
      t2.equal(await store.usePasskey('bob', 'cred-c', { counter: 9, backedUp: false, at }), 'missing', "not bob's")
      t2.equal(await store.usePasskey('alice', 'cred-none', { counter: 9, backedUp: false, at }), 'missing')
      const burst = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? store : other).usePasskey('alice', 'cred-c', { counter: 7, backedUp: false, at })),
      )
      t2.equal(burst.filter((r) => r === 'used').length, 1, 'of 10 concurrent uses with one counter exactly one is accepted')
    })
    tt.test('an authenticator without a counter (always 0) is accepted every time', async (t2) => {
      const { clock, store } = await setup(t2)
      await store.addPasskey(passkey(clock, 'alice', 'cred-z'))
      t2.equal(await store.usePasskey('alice', 'cred-z', { counter: 0, backedUp: true, at: 1 }), 'used')
      t2.equal(await store.usePasskey('alice', 'cred-z', { counter: 0, backedUp: true, at: 2 }), 'used')
      t2.equal((await store.getPasskey('cred-z'))?.lastUsedAt, 2)
    })
  })

  t.test(`${name}: single-use values (useOnce)`, async (tt) => {
    tt.test('first use records, a second within the lifetime is refused, after it is accepted again', async (t2) => {
      const { clock, store } = await setup(t2)
      t2.equal(await store.useOnce('jkt:jti-1', 60), true, 'first use')
      t2.equal(await store.useOnce('jkt:jti-1', 60), false, 'replay refused')
      t2.equal(await store.useOnce('jkt:jti-2', 60), true, 'another key is independent')
      clock.advance(59_999)
      t2.equal(await store.useOnce('jkt:jti-1', 60), false, 'still remembered just before the end of its lifetime')
      clock.advance(1)
      t2.equal(await store.useOnce('jkt:jti-1', 60), true, 'forgotten once its lifetime has passed')
      t2.equal(await store.useOnce('jkt:jti-1', 60), false, 'and remembered again')
    })
    tt.test('a key used through one instance is refused through the other', async (t2) => {
      const { store, h } = await setup(t2)
      const other = await h.peer()
      t2.equal(await store.useOnce('k:{odd}:key', 30), true)
      t2.equal(await other.useOnce('k:{odd}:key', 30), false)
    })
    tt.test('50 concurrent uses of one key: exactly one accepted', async (t2) => {
      const { store } = await setup(t2)
      const results = await Promise.all(Array.from({ length: 50 }, () => store.useOnce('burst', 60)))
      t2.equal(results.filter((r) => r).length, 1)
    })
  })

  t.test(`${name}: a rate-limit window tells when it resets`, async (tt) => {
    const { clock, store } = await setup(tt)
    tt.same(await store.hitWindow('w:1'), { count: 0, resetMs: 0 }, 'no window yet')
    const start = clock.now()
    await store.hit('w:1', 30)
    clock.advance(10_000)
    await store.hit('w:1', 30)
    tt.same(await store.hitWindow('w:1'), { count: 2, resetMs: start + 30_000 }, 'the window started at the first hit')
    clock.advance(20_000)
    tt.same(await store.hitWindow('w:1'), { count: 0, resetMs: 0 }, 'over at resetMs exactly')
    const burst = await Promise.all(Array.from({ length: 20 }, () => store.hit('w:turn', 5)))
    tt.equal(burst.filter((n) => n === 1).length, 1, 'of 20 simultaneous first hits, exactly one opens the window (a turn)')
  })

  t.test(`${name}: known browsers`, async (tt) => {
    const { clock, store } = await setup(tt)
    const a = token()
    tt.equal(await store.getKnownBrowser(a.hash), null, 'unknown')
    await store.putKnownBrowser(a.hash, 'alice', 100)
    tt.equal(await store.getKnownBrowser(a.hash), 'alice')
    tt.equal(await store.getKnownBrowser(token().hash), null, 'another token is not known')
    clock.advance(60_000)
    await store.putKnownBrowser(a.hash, 'alice', 100)
    clock.advance(60_000)
    tt.equal(await store.getKnownBrowser(a.hash), 'alice', 'putting it again renews its lifetime')
    clock.advance(40_000)
    tt.equal(await store.getKnownBrowser(a.hash), null, 'expired')
  })

  t.test(`${name}: registered clients (RFC 7591)`, async (tt) => {
    const client = (clock: ManualClock, id: string, ttlSec = 3600): RegisteredClientRecord => ({
      clientId: id,
      secretHash: null,
      registrationTokenHash: token().hash,
      metadata: {
        redirect_uris: ['http://127.0.0.1/cb'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        client_name: 'Tool {x}',
        contacts: [],
      },
      issuedAt: nowSec(clock),
      expiresAt: nowSec(clock) + ttlSec,
    })
    tt.test('put, get (a copy), delete; another instance sees the same', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const record = client(clock, 'dyn:{odd}/id')
      await store.putClient(record)
      const got = await store.getClient(record.clientId)
      t2.same(got, record, 'the record round-trips, empty lists included')
      if (got) got.metadata.redirect_uris.push('https://evil.example/cb')
      t2.same((await store.getClient(record.clientId))?.metadata.redirect_uris, ['http://127.0.0.1/cb'], 'a returned record is a copy')
      const other = await h.peer()
      t2.same(await other.getClient(record.clientId), record)
      t2.equal(await store.getClient('unknown'), null)
      t2.equal(await store.deleteClient(record.clientId), true)
      t2.equal(await store.getClient(record.clientId), null)
      t2.equal(await store.deleteClient(record.clientId), false, 'deleting twice finds nothing')
    })
    tt.test('an unused client is forgotten at its expiry; touching moves it on, never back', async (t2) => {
      const { clock, store } = await setup(t2)
      const record = client(clock, 'ttl-client', 100)
      await store.putClient(record)
      clock.advance(99_000)
      t2.not(await store.getClient(record.clientId), null, 'alive just before expiry')
      await store.touchClient(record.clientId, nowSec(clock) + 100)
      await store.touchClient(record.clientId, nowSec(clock) + 10)
      clock.advance(99_000)
      t2.equal((await store.getClient(record.clientId))?.expiresAt, record.expiresAt + 99, 'the later expiry holds')
      clock.advance(1_000)
      t2.equal(await store.getClient(record.clientId), null, 'forgotten once unused for its ttl')
      await store.touchClient(record.clientId, nowSec(clock) + 100)
      t2.equal(await store.getClient(record.clientId), null, 'a touch does not revive a forgotten client')
      const gone = client(clock, 'deleted-client')
      await store.putClient(gone)
      await store.deleteClient(gone.clientId)
      await store.touchClient(gone.clientId, nowSec(clock) + 1000)
      t2.equal(await store.getClient(gone.clientId), null, 'a touch does not revive a deleted client')
    })
    tt.test('the cap on live clients: atomic across instances; expiry and deletion free seats', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      t2.equal(await store.countClients(), 0)
      // Twenty registrations at once, half through each instance, against a cap of five.
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).putClientWithin(client(clock, `cap-${i}`, 100 + i), 5)),
      )
      const stored = results.filter((r) => r.stored)
      t2.equal(stored.length, 5, 'exactly five seated')
      t2.equal(await store.countClients(), 5)
      t2.equal(await other.countClients(), 5, 'the same count through the other instance')
      const storedIds = results.flatMap((r, i) => (r.stored ? [`cap-${i}`] : []))
      for (const id of storedIds) t2.not(await other.getClient(id), null, `${id} is there`)
      const refusedIds = results.flatMap((r, i) => (r.stored ? [] : [`cap-${i}`]))
      for (const id of refusedIds) t2.equal(await store.getClient(id), null, `${id} was not stored`)
      const refused = results.find((r) => !r.stored)
      // cap-i expires at now + 100 + i s: the first seat to free is the seated client with the lowest i.
      const firstExpiry = Math.min(...storedIds.map((id) => nowSec(clock) + 100 + Number(id.slice('cap-'.length))))
      t2.same(refused, { stored: false, live: 5, freeAtMs: firstExpiry * 1000 }, 'a refusal says when the first seat frees itself')

      t2.equal(await other.deleteClient(storedIds[0] as string), true)
      t2.equal(await store.countClients(), 4, 'a deleted client frees its seat')
      t2.match(await store.putClientWithin(client(clock, 'after-delete', 100), 5), { stored: true, live: 5 })
      t2.match(await other.putClientWithin(client(clock, 'still-full', 100), 5), { stored: false, live: 5 })

      clock.advance(200_000)
      t2.equal(await store.countClients(), 0, 'expired clients hold no seat')
      t2.match(await other.putClientWithin(client(clock, 'after-expiry', 100), 1), { stored: true, live: 1 })
      t2.match(await store.putClientWithin(client(clock, 'over-one', 100), 1), { stored: false, live: 1 })
    })

    tt.test('putClient counts too; a touched client keeps its seat past its first expiry, a deleted one is not counted again', async (t2) => {
      const { clock, store } = await setup(t2)
      await store.putClient(client(clock, 'plain', 100))
      t2.equal(await store.countClients(), 1)
      await store.touchClient('plain', nowSec(clock) + 300)
      clock.advance(200_000)
      t2.equal(await store.countClients(), 1, 'still live after its first expiry: the touch moved it on')
      t2.match(await store.putClientWithin(client(clock, 'second', 100), 1), { stored: false, live: 1 })
      await store.deleteClient('plain')
      await store.touchClient('plain', nowSec(clock) + 300)
      t2.equal(await store.countClients(), 0, 'a touch after deletion does not count it again')
    })
  })

  t.test(`${name}: a closed store rejects with StoreUnavailableError`, async (tt) => {
    const clock = new ManualClock()
    const h = await makeStore(clock)
    tt.teardown(() => h.cleanup())
    await h.store.close()
    await tt.rejects(h.store.ping(), StoreUnavailableError)
    await tt.rejects(h.store.takeCode(token().hash), StoreUnavailableError)
    await tt.rejects(
      h.store.subscribeRevocations(() => undefined),
      StoreUnavailableError,
    )
    await tt.rejects(h.store.useOnce('k', 1), StoreUnavailableError)
    await tt.rejects(h.store.getClient('c'), StoreUnavailableError)
    await tt.rejects(h.store.noteAllowance('alice', 'app', { scopes: [], at: 0, grantId: 'g', until: 1 }), StoreUnavailableError)
    await tt.rejects(h.store.listAllowances('alice'), StoreUnavailableError)
    await tt.rejects(h.store.withdrawAllowance('alice', 'app', 600), StoreUnavailableError)
  })
}
