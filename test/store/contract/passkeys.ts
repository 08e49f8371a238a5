/** The contract of passkeys (WebAuthn) (src/store/passkeys/types.ts), run on every store. */
import type { Test } from 'tap'
import type { ManualClock } from '../../../src/clock.js'
import type { PasskeyRecord } from '../../../src/store/types.js'
import { token, nowSec, type Setup } from './fixtures.js'

export function passkeysContract(t: Test, name: string, setup: Setup): void {
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
      await store.passkeys.putChallenge(c.hash, rec, 300)
      t2.same(await other.passkeys.takeChallenge(c.hash), rec, 'taken through the other instance with what it held')
      t2.equal(await store.passkeys.takeChallenge(c.hash), null, 'single use')
      t2.equal(await store.passkeys.takeChallenge(token().hash), null, 'unknown')
      const late = token()
      await store.passkeys.putChallenge(late.hash, { purpose: 'sign-in', sub: null, expiresAt: nowSec(clock) + 300 }, 300)
      clock.advance(300_000)
      t2.equal(await store.passkeys.takeChallenge(late.hash), null, 'expired')
      const burst = token()
      await store.passkeys.putChallenge(burst.hash, rec, 300)
      const takes = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).passkeys.takeChallenge(burst.hash)))
      t2.equal(takes.filter((r) => r !== null).length, 1, 'of 20 concurrent takes exactly one gets it')
    })
    tt.test('add, read from another instance, list per person oldest first; a credential id belongs to one person', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      const a1 = passkey(clock, 'alice', 'cred-a1')
      t2.equal(await store.passkeys.add(a1), true)
      clock.advance(1000)
      const a2 = passkey(clock, 'alice', 'cred-a2', { transports: [], deviceType: 'singleDevice', backedUp: false, counter: 7 })
      t2.equal(await store.passkeys.add(a2), true)
      t2.equal(await store.passkeys.add(passkey(clock, 'bob', 'cred-b1')), true)
      t2.same(await other.passkeys.get('cred-a2'), a2, 'every field as stored, empty transports included')
      t2.same(await other.passkeys.list('alice'), [a1, a2])
      t2.same(await store.passkeys.list('carol'), [], 'nobody else has any')
      t2.equal(await other.passkeys.add(passkey(clock, 'bob', 'cred-a1')), false, "alice's credential id cannot be registered again, by anyone")
      t2.same(await store.passkeys.get('cred-a1'), a1, 'and hers is unchanged')
      t2.equal(await store.passkeys.get('cred-none'), null)
    })
    tt.test("renaming: only the owner's, and a removed passkey stays removed", async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      await store.passkeys.add(passkey(clock, 'alice', 'cred-r', { counter: 3 }))
      t2.equal(await other.passkeys.rename('alice', 'cred-r', 'Phone'), true)
      t2.match(await store.passkeys.get('cred-r'), { name: 'Phone', counter: 3, sub: 'alice' }, 'renamed, nothing else changed')
      t2.equal(await store.passkeys.rename('bob', 'cred-r', 'Mine now'), false, "bob cannot rename alice's passkey")
      t2.equal((await store.passkeys.get('cred-r'))?.name, 'Phone')
      await store.passkeys.remove('alice', 'cred-r')
      t2.equal(await store.passkeys.rename('alice', 'cred-r', 'Back'), false, 'a removed one cannot be renamed')
      t2.equal(await other.passkeys.get('cred-r'), null, 'and is not brought back')
      t2.same(await store.passkeys.list('alice'), [])
    })
    tt.test("removal: only the owner's, once; the id can be registered again after", async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      await store.passkeys.add(passkey(clock, 'alice', 'cred-x'))
      t2.equal(await store.passkeys.remove('bob', 'cred-x'), false, "bob cannot remove alice's passkey")
      t2.not(await store.passkeys.get('cred-x'), null, 'still there')
      const removals = await Promise.all([store.passkeys.remove('alice', 'cred-x'), other.passkeys.remove('alice', 'cred-x')])
      t2.equal(removals.filter((r) => r).length, 1, 'of two concurrent removals one removes it')
      t2.equal(await store.passkeys.get('cred-x'), null)
      t2.same(await other.passkeys.list('alice'), [])
      t2.equal(await store.passkeys.add(passkey(clock, 'alice', 'cred-x')), true, 'registrable again')
    })
    tt.test('a sign-in moves the counter forward; a counter going back or standing still is refused and changes nothing', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      await store.passkeys.add(passkey(clock, 'alice', 'cred-c', { counter: 5 }))
      const at = nowSec(clock) + 10
      t2.equal(await store.passkeys.use('alice', 'cred-c', { counter: 6, backedUp: false, at }), 'used')
      t2.match(await other.passkeys.get('cred-c'), { counter: 6, backedUp: false, lastUsedAt: at })
      t2.equal(await other.passkeys.use('alice', 'cred-c', { counter: 6, backedUp: true, at: at + 1 }), 'regressed', 'the same counter again')
      t2.equal(await store.passkeys.use('alice', 'cred-c', { counter: 2, backedUp: true, at: at + 1 }), 'regressed', 'a lower counter (a clone)')
      t2.match(await store.passkeys.get('cred-c'), { counter: 6, backedUp: false, lastUsedAt: at }, 'unchanged by the refusals')
      t2.equal(await store.passkeys.use('bob', 'cred-c', { counter: 9, backedUp: false, at }), 'missing', "not bob's")
      t2.equal(await store.passkeys.use('alice', 'cred-none', { counter: 9, backedUp: false, at }), 'missing')
      const burst = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? store : other).passkeys.use('alice', 'cred-c', { counter: 7, backedUp: false, at })),
      )
      t2.equal(burst.filter((r) => r === 'used').length, 1, 'of 10 concurrent uses with one counter exactly one is accepted')
    })
    tt.test('an authenticator without a counter (always 0) is accepted every time', async (t2) => {
      const { clock, store } = await setup(t2)
      await store.passkeys.add(passkey(clock, 'alice', 'cred-z'))
      t2.equal(await store.passkeys.use('alice', 'cred-z', { counter: 0, backedUp: true, at: 1 }), 'used')
      t2.equal(await store.passkeys.use('alice', 'cred-z', { counter: 0, backedUp: true, at: 2 }), 'used')
      t2.equal((await store.passkeys.get('cred-z'))?.lastUsedAt, 2)
    })
  })
}
