/**
 * The admin API on two `bin/bearward` instances sharing one Redis (one
 * issuer, one signing key, as behind a load balancer): a revocation made
 * through one instance's admin API is refused by the other, at its gateway
 * and at its admin API, within the revocation list's pub/sub delay.
 * Every answer is validated against the served OpenAPI document.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { accessTokenOf, adminConfig, AdminClient, adminToken, itemsOf, jtiOf, openApiChecker, personToken } from '../helpers/admin-api.js'
import { oneIssuer } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { configYaml, mergeConfig } from '../helpers/config-tree.js'
import { eventually, freePort, reply } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { startUpstream } from '../helpers/upstream.js'

t.test('a revoke through one instance is refused on the other', async (t) => {
  const redis = await startRedis()
  const up = await startUpstream('orders')
  const cfg = await tempConfig('')
  const keyFile = join(cfg.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  const portA = await freePort()
  const portB = await freePort()
  for (const [name, port] of [
    ['a.yaml', portA],
    ['b.yaml', portB],
  ] as const) {
    const config = await adminConfig({ port, upstream: up.url, store: redis.url })
    await writeFile(join(cfg.dir, name), configYaml(mergeConfig(config, oneIssuer(portA, keyFile))))
  }
  const [a, b] = await Promise.all([startBin(join(cfg.dir, 'a.yaml')), startBin(join(cfg.dir, 'b.yaml'))])
  t.teardown(async () => {
    await Promise.all([a.stop(), b.stop()])
    await up.close()
    await redis.stop()
    await cfg.cleanup()
  })
  const checker = await openApiChecker(a.admin)
  const apiA = new AdminClient(a.admin, checker)
  const apiB = new AdminClient(b.admin, checker)
  const ops = accessTokenOf(await adminToken(a.url, 'ops', 'bearward:admin'))

  t.test('a grant revoked at B: its token refused at A, nothing reaches the upstream', async (t) => {
    const person = accessTokenOf(await personToken(a.url, { client: 'web', username: 'alice', scope: 'openid orders:read' }))
    t.equal((await reply(fetch(`${a.url}/orders`, { headers: { authorization: `Bearer ${person}` } }))).status, 200)
    const grants = itemsOf(await apiB.call('GET', '/grants?person=alice', { token: ops }))
    t.equal(grants.length, 1, 'B lists the grant A created')
    const seen = up.seen.length
    t.equal((await apiB.call('DELETE', `/grants/${encodeURIComponent(String(grants[0]?.id))}`, { token: ops })).status, 204)
    const refused = await eventually(
      async () => (await reply(fetch(`${a.url}/orders`, { headers: { authorization: `Bearer ${person}` } }))).status === 401,
      3000,
    )
    t.ok(refused, 'A refuses the token within 3 s')
    t.equal(up.seen.length, seen, 'nothing reached the upstream after the revoke')
    t.same(itemsOf(await apiA.call('GET', '/grants?person=alice', { token: ops })), [], 'A lists no grant')
  })

  t.test('an admin token revoked by jti at B is refused by A’s admin API', async (t) => {
    const doomed = accessTokenOf(await adminToken(a.url, 'ops', 'bearward:admin'))
    t.equal((await apiA.call('GET', '/clients', { token: doomed })).status, 200)
    t.equal((await apiB.call('POST', '/tokens/revoke', { token: ops, body: { jti: jtiOf(doomed) } })).status, 204)
    const refused = await eventually(async () => (await apiA.call('GET', '/clients', { token: doomed })).status === 401, 3000)
    t.ok(refused, 'A refuses the replayed admin token within 3 s')
  })

  t.test('a cursor made by A is good at B (one key), and refused on another list', async (t) => {
    const page = await apiA.call('GET', '/clients?limit=2', { token: ops })
    const cursor = encodeURIComponent(String(page.json?.next_cursor))
    t.equal((await apiB.call('GET', `/clients?limit=2&cursor=${cursor}`, { token: ops })).status, 200)
    t.equal((await apiB.call('GET', `/grants?person=alice&cursor=${cursor}`, { token: ops })).status, 400)
  })
})
