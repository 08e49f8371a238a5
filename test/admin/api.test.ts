/**
 * The admin API's framework through `bin/bearward`: authorization (audience,
 * scopes, who may hold them), problem details, pagination with signed
 * cursors, the OpenAPI document every answer here is validated against.
 */
import t, { type Test } from 'tap'
import { adminConfig, AdminClient, idsOf, itemsOf, adminToken, accessTokenOf, openApiChecker } from '../helpers/admin-api.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { freePort, reply } from '../helpers/http.js'
import { startUpstream } from '../helpers/upstream.js'
import type { ConfigTree } from '../helpers/config-tree.js'

async function startAdmin(t: Test, admin?: ConfigTree) {
  const up = await startUpstream('orders')
  const port = await freePort()
  const config = await adminConfig({ port, upstream: up.url, ...(admin === undefined ? {} : { admin }) })
  const cfg = await tempConfig(config)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const checker = await openApiChecker(bin.admin)
  return { bin, up, api: new AdminClient(bin.admin, checker), checker }
}

t.test('the OpenAPI document is served without a token and describes every route', async (t) => {
  const { bin } = await startAdmin(t)
  const r = await reply(fetch(`${bin.admin}/admin/v1/openapi.json`))
  t.equal(r.status, 200)
  t.equal(r.headers.get('content-type'), 'application/json')
  t.equal(r.json?.openapi, '3.1.0')
  const paths = r.json?.paths as Record<string, Record<string, unknown>>
  t.ok(paths['/clients']?.get, 'GET /clients documented')
  t.ok(paths['/clients/{id}']?.get, 'GET /clients/{id} documented')
  t.equal((r.json?.servers as Array<{ url: string }> | undefined)?.[0]?.url, `${bin.url}/admin/v1`)
})

t.test('without a token: 401 problem with a Bearer challenge', async (t) => {
  const { api } = await startAdmin(t)
  const r = await api.call('GET', '/clients')
  t.equal(r.status, 401)
  t.equal(r.headers.get('content-type'), 'application/problem+json')
  t.match(r.headers.get('www-authenticate'), /^Bearer realm="bearward"/)
  t.equal(r.json?.type, 'https://bearward.dev/problems/admin/unauthorized')
  t.equal(r.json?.status, 401)
})

t.test('an admin client lists the YAML clients, read-only with source config, in signed pages', async (t) => {
  const { bin, api } = await startAdmin(t)
  const token = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
  const first = await api.call('GET', '/clients?limit=2', { token })
  t.equal(first.status, 200, first.text)
  const items = itemsOf(first)
  t.same(
    items.map((c) => c.id),
    ['auditor', 'cli'],
  )
  t.equal(items[0]?.source, 'config')
  t.notOk('secret_hash' in (items[0] ?? {}), 'no secret hash shown')
  const cursor = first.json?.next_cursor as string
  t.type(cursor, 'string')
  const second = await api.call('GET', `/clients?limit=2&cursor=${encodeURIComponent(cursor)}`, { token })
  t.same(idsOf(second), ['ops', 'service'])
  const last = await api.call('GET', `/clients?limit=2&cursor=${encodeURIComponent(second.json?.next_cursor as string)}`, { token })
  t.same(idsOf(last), ['web'])
  t.equal(last.json?.next_cursor, null)
  const one = await api.call('GET', '/clients/web', { token })
  t.equal(one.status, 200)
  t.match(one.headers.get('etag'), /^"h[A-Za-z0-9_-]+"$/)
})
