/** The contract of local people and password links (src/store/people/types.ts), run on every store. */
import type { Test } from 'tap'
import type { PersonRecord } from '../../../src/store/types.js'
import { nowSec, type Setup, token } from './fixtures.js'

function person(username: string, sub: string, at: number): PersonRecord {
  return { username, sub, claims: { email: `${username}@example.com` }, passwordHash: null, disabled: false, createdAt: at, updatedAt: at, version: 1 }
}

export function peopleContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: people: created once per username and per sub, read by either`, async (tt) => {
    const { clock, store, h } = await setup(tt)
    const other = await h.peer()
    const at = nowSec(clock)
    tt.equal(await store.people.create(person('carol', 'sub-carol', at)), 'created')
    tt.equal(await other.people.create(person('carol', 'sub-x', at)), 'username_taken', 'the username is taken on every instance')
    tt.equal(await other.people.create(person('dave', 'sub-carol', at)), 'sub_taken', 'so is the sub')
    const racers = await Promise.all([store.people.create(person('erin', 's-e1', at)), other.people.create(person('erin', 's-e2', at))])
    tt.same(racers.filter((r) => r === 'created').length, 1, 'of two concurrent creates exactly one wins')
    tt.same(await other.people.get('carol'), person('carol', 'sub-carol', at))
    tt.same((await store.people.bySub('sub-carol'))?.username, 'carol')
    tt.equal(await store.people.get('nobody'), null)
    tt.equal(await store.people.bySub('sub-x'), null, 'a refused create left nothing behind')
  })

  t.test(`${name}: people: updates move the version; a stale If-Match loses`, async (tt) => {
    const { clock, store, h } = await setup(tt)
    const other = await h.peer()
    const at = nowSec(clock)
    await store.people.create(person('carol', 'sub-carol', at))
    clock.advance(5000)
    const first = await store.people.update('carol', 1, { claims: { email: 'c@new.example' } }, at + 5)
    tt.equal(first.kind, 'updated')
    if (first.kind === 'updated') {
      tt.same(first.record.claims, { email: 'c@new.example' })
      tt.equal(first.record.version, 2)
      tt.equal(first.record.updatedAt, at + 5)
      tt.equal(first.record.createdAt, at)
    }
    const stale = await other.people.update('carol', 1, { claims: {} }, at + 6)
    tt.equal(stale.kind, 'stale', 'a write from version 1 after version 2 is refused')
    if (stale.kind === 'stale') tt.same(stale.current.claims, { email: 'c@new.example' }, 'and changed nothing')
    const race = await Promise.all([
      store.people.update('carol', 2, { claims: { a: 1 } }, at + 7),
      other.people.update('carol', 2, { claims: { b: 2 } }, at + 7),
    ])
    tt.equal(race.filter((r) => r.kind === 'updated').length, 1, 'of two writers from one version exactly one wins')
    tt.equal(race.filter((r) => r.kind === 'stale').length, 1)
    const forced = await store.people.update('carol', null, { disabled: true, passwordHash: 'h' }, at + 8)
    tt.equal(forced.kind, 'updated', 'without If-Match the change applies to the current version')
    const now = await other.people.get('carol')
    tt.equal(now?.version, 4)
    tt.equal(now?.disabled, true)
    tt.equal(now?.passwordHash, 'h')
    tt.same((await store.people.update('nobody', null, { disabled: true }, at)).kind, 'missing')
  })

  t.test(`${name}: people: listed in pages by username; deleted with their sub`, async (tt) => {
    const { clock, store } = await setup(tt)
    const at = nowSec(clock)
    for (const u of ['dave', 'alice', 'carol', 'bob']) await store.people.create(person(u, `s-${u}`, at))
    tt.same(
      (await store.people.list(null, 3)).map((p) => p.username),
      ['alice', 'bob', 'carol'],
    )
    tt.same(
      (await store.people.list('carol', 3)).map((p) => p.username),
      ['dave'],
    )
    tt.same(await store.people.list('dave', 3), [])
    tt.equal((await store.people.delete('bob'))?.sub, 's-bob')
    tt.equal(await store.people.delete('bob'), null, 'once')
    tt.equal(await store.people.get('bob'), null)
    tt.equal(await store.people.bySub('s-bob'), null)
    tt.same(
      (await store.people.list(null, 10)).map((p) => p.username),
      ['alice', 'carol', 'dave'],
    )
    tt.equal(await store.people.create(person('bob', 's-bob', at)), 'created', 'the username and sub are free again')
  })

  t.test(`${name}: people: found by email in any case, on every instance, through creates, changes and deletes`, async (tt) => {
    const { clock, store, h } = await setup(tt)
    const other = await h.peer()
    const at = nowSec(clock)
    const names = async (email: string): Promise<string[]> => (await other.people.byEmail(email)).map((p) => p.username).sort()
    await store.people.create({ ...person('erin', 's-erin', at), claims: { email: 'Erin@Corp.example', name: 'Erin' } })
    await store.people.create({ ...person('nobody', 's-nobody', at), claims: { name: 'No email' } })
    tt.same(await names('erin@corp.example'), ['erin'], 'lower-cased on both sides, seen by the other instance')
    tt.same(await names('ERIN@CORP.EXAMPLE'), ['erin'])
    tt.same(await names('nobody@example.com'), [], 'a person without email is found by none')
    await store.people.create({ ...person('fay', 's-fay', at), claims: { email: 'erin@corp.example' } })
    tt.same(await names('erin@corp.example'), ['erin', 'fay'], 'an email two people hold returns both')
    tt.equal((await store.people.update('erin', null, { claims: { email: 'erin@new.example' } }, at + 1)).kind, 'updated')
    tt.same(await names('erin@corp.example'), ['fay'], 'a changed email no longer finds the person')
    tt.same(await names('erin@new.example'), ['erin'], 'the new one does')
    tt.equal((await store.people.update('erin', null, { disabled: true }, at + 2)).kind, 'updated')
    tt.same(await names('erin@new.example'), ['erin'], 'a disabled person still holds the email (the caller refuses them)')
    tt.equal((await store.people.update('fay', null, { claims: {} }, at + 3)).kind, 'updated')
    tt.same(await names('erin@corp.example'), [], 'claims without email: found by none')
    await other.people.delete('erin')
    tt.same(await names('erin@new.example'), [], 'a deleted person is found by none')
    tt.equal(await store.people.create({ ...person('erin', 's-erin', at), claims: { email: 'erin@new.example' } }), 'created')
    tt.same(await names('erin@new.example'), ['erin'], 'created again, found again')
  })

  t.test(`${name}: people: a YAML person's disabled flag`, async (tt) => {
    const { store, h } = await setup(tt)
    const other = await h.peer()
    tt.equal(await store.people.configDisabled('alice'), false)
    await store.people.setConfigDisabled('alice', true)
    tt.equal(await other.people.configDisabled('alice'), true, 'seen on every instance')
    tt.equal(await other.people.configDisabled('bob'), false)
    await other.people.setConfigDisabled('alice', false)
    tt.equal(await store.people.configDisabled('alice'), false)
  })

  t.test(`${name}: people: a password link is used once, within its lifetime`, async (tt) => {
    const { clock, store, h } = await setup(tt)
    const other = await h.peer()
    const link = token()
    await store.people.putPasswordLink(link.hash, { username: 'carol', expiresAtMs: clock.now() + 60_000 })
    tt.same(await other.people.peekPasswordLink(link.hash), { username: 'carol', expiresAtMs: clock.now() + 60_000 }, 'peeking does not use it')
    const takes = await Promise.all([store.people.takePasswordLink(link.hash), other.people.takePasswordLink(link.hash)])
    tt.equal(takes.filter((taken) => taken !== null).length, 1, 'of two concurrent uses exactly one gets it')
    tt.equal(await store.people.peekPasswordLink(link.hash), null, 'used')
    tt.equal(await store.people.takePasswordLink(token().hash), null, 'unknown')
    const late = token()
    await store.people.putPasswordLink(late.hash, { username: 'carol', expiresAtMs: clock.now() + 60_000 })
    clock.advance(60_000)
    tt.equal(await store.people.peekPasswordLink(late.hash), null, 'expired at its time')
    tt.equal(await store.people.takePasswordLink(late.hash), null)
  })
}
