/**
 * The contract of admin-managed clients (src/store/admin-clients/types.ts), of
 * the grants store's index by client and of the registered clients' list, run
 * on every store.
 */
import type { Test } from 'tap'
import type { AdminClientRecord, RegisteredClientRecord } from '../../../src/store/types.js'
import { grantRecord, nowSec, type Setup, token } from './fixtures.js'

function adminClient(id: string, at: number): AdminClientRecord {
  return {
    clientId: id,
    metadata: { redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], response_types: ['code'] },
    secretHash: 'hash-1',
    previousSecretHash: null,
    previousExpiresAt: null,
    disabled: false,
    createdAt: at,
    updatedAt: at,
    version: 1,
  }
}

export function adminClientsContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: admin clients: created once per id; read by every instance`, async (tt) => {
    const { clock, store, h } = await setup(tt)
    const other = await h.peer()
    const at = nowSec(clock)
    tt.equal(await store.adminClients.create(adminClient('svc-{a}/1', at)), true)
    tt.equal(await other.adminClients.create(adminClient('svc-{a}/1', at)), false, 'the id is taken on every instance')
    const racers = await Promise.all([store.adminClients.create(adminClient('race', at)), other.adminClients.create(adminClient('race', at))])
    tt.same(racers.filter((r) => r).length, 1, 'of two concurrent creates exactly one wins')
    tt.same(await other.adminClients.get('svc-{a}/1'), adminClient('svc-{a}/1', at))
    const got = await store.adminClients.get('svc-{a}/1')
    got?.metadata.redirect_uris.push('https://evil.example/cb')
    tt.same((await store.adminClients.get('svc-{a}/1'))?.metadata.redirect_uris, [], 'a returned record is a copy')
    tt.equal(await store.adminClients.get('nobody'), null)
  })

  t.test(`${name}: admin clients: updates move the version; of two writers from one version exactly one wins`, async (tt) => {
    const { clock, store, h } = await setup(tt)
    const other = await h.peer()
    const at = nowSec(clock)
    await store.adminClients.create(adminClient('svc', at))
    const first = await store.adminClients.update('svc', 1, { secretHash: 'hash-2', previousSecretHash: 'hash-1', previousExpiresAt: at + 60 }, at + 5)
    tt.equal(first.kind, 'updated')
    if (first.kind === 'updated')
      tt.match(first.record, { version: 2, secretHash: 'hash-2', previousSecretHash: 'hash-1', previousExpiresAt: at + 60, updatedAt: at + 5 })
    tt.equal((await other.adminClients.update('svc', 1, { disabled: true }, at + 6)).kind, 'stale', 'a write from version 1 after version 2')
    tt.equal((await other.adminClients.get('svc'))?.disabled, false, 'and changed nothing')
    const race = await Promise.all([
      store.adminClients.update('svc', 2, { disabled: true }, at + 7),
      other.adminClients.update('svc', 2, { disabled: false }, at + 7),
    ])
    tt.same(race.map((r) => r.kind).sort(), ['stale', 'updated'])
    tt.equal((await store.adminClients.update('svc', null, { disabled: true }, at + 8)).kind, 'updated', 'without a version: applied to the current one')
    tt.equal((await other.adminClients.get('svc'))?.version, 4)
    tt.equal((await store.adminClients.update('nobody', null, { disabled: true }, at)).kind, 'missing')
    tt.equal((await store.adminClients.delete('svc', 3)).kind, 'stale', 'a stale delete')
    tt.equal((await other.adminClients.delete('svc', 4)).kind, 'updated')
    tt.equal(await store.adminClients.get('svc'), null)
    tt.equal((await store.adminClients.delete('svc', null)).kind, 'missing', 'deleting twice finds nothing')
  })

  t.test(`${name}: admin clients: listed in pages by id`, async (tt) => {
    const { clock, store } = await setup(tt)
    const at = nowSec(clock)
    for (const id of ['c', 'a', 'e', 'b', 'd']) await store.adminClients.create(adminClient(id, at))
    tt.same(
      (await store.adminClients.list(null, 2)).map((c) => c.clientId),
      ['a', 'b'],
    )
    tt.same(
      (await store.adminClients.list('b', 2)).map((c) => c.clientId),
      ['c', 'd'],
    )
    await store.adminClients.delete('d', null)
    tt.same(
      (await store.adminClients.list('c', 5)).map((c) => c.clientId),
      ['e'],
      'a deleted client leaves the list',
    )
  })

  t.test(`${name}: grants by client: live families of one client, in pages; gone ones dropped`, async (tt) => {
    const { clock, store, h } = await setup(tt)
    const other = await h.peer()
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const g = { ...grantRecord(clock, 100 + i * 100), grantId: `g${i}`, clientId: 'svc{1}' }
      await store.grants.create(g, token().hash)
      ids.push(g.grantId)
    }
    await store.grants.create({ ...grantRecord(clock), grantId: 'x0', clientId: 'other' }, null)
    tt.same(
      (await other.grants.listByClient('svc{1}', null, 3)).map((g) => g.grantId),
      ['g0', 'g1', 'g2'],
      'every instance reads the index',
    )
    tt.same(
      (await other.grants.listByClient('svc{1}', 'g2', 3)).map((g) => g.grantId),
      ['g3', 'g4'],
    )
    await store.grants.revoke('g1', nowSec(clock) + 600)
    clock.advance(150_000)
    tt.same(
      (await store.grants.listByClient('svc{1}', null, 2)).map((g) => g.grantId),
      ['g2', 'g3'],
      'expired and revoked families are skipped',
    )
    tt.same(
      (await store.grants.listByClient('svc{1}', null, 10)).map((g) => g.grantId),
      ['g2', 'g3', 'g4'],
    )
    tt.same((await store.grants.listByClient('nobody', null, 10)).length, 0)
  })

  t.test(`${name}: registered clients: listed in pages by id, expired ones not`, async (tt) => {
    const { clock, store } = await setup(tt)
    const reg = (id: string, ttl: number): RegisteredClientRecord => ({
      clientId: id,
      secretHash: null,
      registrationTokenHash: token().hash,
      metadata: { redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], response_types: ['code'] },
      issuedAt: nowSec(clock),
      expiresAt: nowSec(clock) + ttl,
    })
    for (const [id, ttl] of [
      ['r3', 100],
      ['r1', 100],
      ['r2', 10],
    ] as const)
      await store.clients.put(reg(id, ttl))
    tt.same(
      (await store.clients.list(null, 2)).map((c) => c.clientId),
      ['r1', 'r2'],
    )
    tt.same(
      (await store.clients.list('r2', 2)).map((c) => c.clientId),
      ['r3'],
    )
    clock.advance(20_000)
    tt.same(
      (await store.clients.list(null, 5)).map((c) => c.clientId),
      ['r1', 'r3'],
      'an expired registration is not listed',
    )
  })
}
