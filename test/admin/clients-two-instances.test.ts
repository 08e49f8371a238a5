/**
 * Admin-managed clients on two `bin/bearward` instances sharing one Redis
 * (one issuer, one signing key, as behind a load balancer): a client
 * created, rotated or disabled through one instance's admin API is seen by
 * the other's /token at once (the record is in the store, read per lookup).
 * Every answer is validated against the served OpenAPI document.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { accessTokenOf, AdminClient, adminConfig, adminToken, idsOf, openApiChecker } from '../helpers/admin-api.js'
import { oneIssuer } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { basic } from '../helpers/client-auth.js'
import { configYaml, mergeConfig } from '../helpers/config-tree.js'
import { freePort } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { form } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

t.test('a client created, rotated and disabled on one instance is seen by the other', async (t) => {
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
  const token = (base: string, secret: string) =>
    form(`${base}/token`, { grant_type: 'client_credentials', scope: 'orders:read' }, basic('svc', secret)).then((r) => r.status)

  const created = await apiA.call('POST', '/clients', { token: ops, body: { client_id: 'svc', grant_types: ['client_credentials'], scope: 'orders:read' } })
  t.equal(created.status, 201, created.text)
  const first = String(created.json?.client_secret)
  t.equal(await token(b.url, first), 200, 'created at A, B issues it a token')
  t.same(idsOf(await apiB.call('GET', '/clients?source=admin', { token: ops })), ['svc'], 'B lists it')
  t.equal(
    (await apiB.call('POST', '/clients', { token: ops, body: { client_id: 'svc', grant_types: ['client_credentials'] } })).status,
    409,
    'B refuses the id again',
  )

  const rotated = await apiB.call('POST', '/clients/svc/secrets', { token: ops })
  t.equal(rotated.status, 200)
  const second = String(rotated.json?.client_secret)
  t.equal(await token(a.url, second), 200, 'rotated at B, A takes the new secret')
  t.equal(await token(a.url, first), 200, 'and the previous one, within its overlap')

  const race = await Promise.all([
    apiA.call('PATCH', '/clients/svc', { token: ops, body: { client_name: 'A' }, headers: { 'if-match': '"r2"' } }),
    apiB.call('PATCH', '/clients/svc', { token: ops, body: { client_name: 'B' }, headers: { 'if-match': '"r2"' } }),
  ])
  t.same(race.map((r) => r.status).sort(), [200, 412], 'of two updates from one ETag on two instances exactly one wins')

  t.equal((await apiA.call('POST', '/clients/svc/disable', { token: ops })).status, 200)
  t.equal(await token(b.url, second), 401, 'disabled at A, B refuses it at /token')
  t.equal((await apiA.call('POST', '/clients/svc/enable', { token: ops })).status, 200)
  t.equal(await token(b.url, second), 200, 'enabled at A, B issues again')
  t.equal((await apiB.call('DELETE', '/clients/svc', { token: ops })).status, 204)
  t.equal(await token(a.url, second), 401, 'deleted at B, A refuses it')
})
