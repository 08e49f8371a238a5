/** The contract of registered clients (RFC 7591) (src/store/clients/types.ts), run on every store. */
import type { Test } from 'tap'
import type { ManualClock } from '../../../src/clock.js'
import type { RegisteredClientRecord } from '../../../src/store/types.js'
import { token, nowSec, type Setup } from './fixtures.js'

export function clientsContract(t: Test, name: string, setup: Setup): void {
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
      await store.clients.put(record)
      const got = await store.clients.get(record.clientId)
      t2.same(got, record, 'the record round-trips, empty lists included')
      if (got) got.metadata.redirect_uris.push('https://evil.example/cb')
      t2.same((await store.clients.get(record.clientId))?.metadata.redirect_uris, ['http://127.0.0.1/cb'], 'a returned record is a copy')
      const other = await h.peer()
      t2.same(await other.clients.get(record.clientId), record)
      t2.equal(await store.clients.get('unknown'), null)
      t2.equal(await store.clients.delete(record.clientId), true)
      t2.equal(await store.clients.get(record.clientId), null)
      t2.equal(await store.clients.delete(record.clientId), false, 'deleting twice finds nothing')
    })
    tt.test('an unused client is forgotten at its expiry; touching moves it on, never back', async (t2) => {
      const { clock, store } = await setup(t2)
      const record = client(clock, 'ttl-client', 100)
      await store.clients.put(record)
      clock.advance(99_000)
      t2.not(await store.clients.get(record.clientId), null, 'alive just before expiry')
      await store.clients.touch(record.clientId, nowSec(clock) + 100)
      await store.clients.touch(record.clientId, nowSec(clock) + 10)
      clock.advance(99_000)
      t2.equal((await store.clients.get(record.clientId))?.expiresAt, record.expiresAt + 99, 'the later expiry holds')
      clock.advance(1_000)
      t2.equal(await store.clients.get(record.clientId), null, 'forgotten once unused for its ttl')
      await store.clients.touch(record.clientId, nowSec(clock) + 100)
      t2.equal(await store.clients.get(record.clientId), null, 'a touch does not revive a forgotten client')
      const gone = client(clock, 'deleted-client')
      await store.clients.put(gone)
      await store.clients.delete(gone.clientId)
      await store.clients.touch(gone.clientId, nowSec(clock) + 1000)
      t2.equal(await store.clients.get(gone.clientId), null, 'a touch does not revive a deleted client')
    })
    tt.test('the cap on live clients: atomic across instances; expiry and deletion free seats', async (t2) => {
      const { clock, store, h } = await setup(t2)
      const other = await h.peer()
      t2.equal(await store.clients.count(), 0)
      // Twenty registrations at once, half through each instance, against a cap of five.
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).clients.putWithin(client(clock, `cap-${i}`, 100 + i), 5)),
      )
      const stored = results.filter((r) => r.stored)
      t2.equal(stored.length, 5, 'exactly five seated')
      t2.equal(await store.clients.count(), 5)
      t2.equal(await other.clients.count(), 5, 'the same count through the other instance')
      const storedIds = results.flatMap((r, i) => (r.stored ? [`cap-${i}`] : []))
      for (const id of storedIds) t2.not(await other.clients.get(id), null, `${id} is there`)
      const refusedIds = results.flatMap((r, i) => (r.stored ? [] : [`cap-${i}`]))
      for (const id of refusedIds) t2.equal(await store.clients.get(id), null, `${id} was not stored`)
      const refused = results.find((r) => !r.stored)
      // cap-i expires at now + 100 + i s: the first seat to free is the seated client with the lowest i.
      const firstExpiry = Math.min(...storedIds.map((id) => nowSec(clock) + 100 + Number(id.slice('cap-'.length))))
      t2.same(refused, { stored: false, live: 5, freeAtMs: firstExpiry * 1000 }, 'a refusal says when the first seat frees itself')

      t2.equal(await other.clients.delete(storedIds[0] as string), true)
      t2.equal(await store.clients.count(), 4, 'a deleted client frees its seat')
      t2.match(await store.clients.putWithin(client(clock, 'after-delete', 100), 5), { stored: true, live: 5 })
      t2.match(await other.clients.putWithin(client(clock, 'still-full', 100), 5), { stored: false, live: 5 })

      clock.advance(200_000)
      t2.equal(await store.clients.count(), 0, 'expired clients hold no seat')
      t2.match(await other.clients.putWithin(client(clock, 'after-expiry', 100), 1), { stored: true, live: 1 })
      t2.match(await store.clients.putWithin(client(clock, 'over-one', 100), 1), { stored: false, live: 1 })
    })

    tt.test('putClient counts too; a touched client keeps its seat past its first expiry, a deleted one is not counted again', async (t2) => {
      const { clock, store } = await setup(t2)
      await store.clients.put(client(clock, 'plain', 100))
      t2.equal(await store.clients.count(), 1)
      await store.clients.touch('plain', nowSec(clock) + 300)
      clock.advance(200_000)
      t2.equal(await store.clients.count(), 1, 'still live after its first expiry: the touch moved it on')
      t2.match(await store.clients.putWithin(client(clock, 'second', 100), 1), { stored: false, live: 1 })
      await store.clients.delete('plain')
      await store.clients.touch('plain', nowSec(clock) + 300)
      t2.equal(await store.clients.count(), 0, 'a touch after deletion does not count it again')
    })
  })
}
