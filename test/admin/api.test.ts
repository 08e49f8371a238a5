/**
 * The admin API's framework through `bin/bearward`: authorization (audience,
 * scopes, who may hold them), problem details, pagination with signed
 * cursors, the OpenAPI document every answer here is validated against.
 */
import t, { type Test } from 'tap'
import { accessTokenOf, adminConfig, AdminClient, adminToken, idsOf, itemsOf, jtiOf, openApiChecker, personToken } from '../helpers/admin-api.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { freePort, reply } from '../helpers/http.js'
import { startUpstream } from '../helpers/upstream.js'
import { makeProof, proofKeyPair } from '../helpers/dpop.js'
import { basic } from '../helpers/admin-api.js'
import { DEMO_SECRET, type DemoConfig } from '../helpers/as-config.js'
import type { ConfigTree } from '../helpers/config-tree.js'

async function startAdmin(t: Test, admin?: ConfigTree, edit: (config: DemoConfig) => void = () => undefined) {
  const up = await startUpstream('orders')
  const port = await freePort()
  const config = await adminConfig({ port, upstream: up.url, ...(admin === undefined ? {} : { admin }) })
  edit(config)
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

/**
 * One instance for the tests that only read it or change what is theirs
 * alone, since a start costs about a second of CPU on the suite's two cores;
 * the grants test (it counts alice's grants) runs before any other test signs
 * alice in.
 */
let shared: ReturnType<typeof startAdmin> | undefined
function sharedAdmin(): ReturnType<typeof startAdmin> {
  shared ??= startAdmin(t)
  return shared
}

/**
 * One instance for the two tests of other configs: `public_path` (a second
 * mount of the API) and `mfa` (it changes what a person signed in with a
 * password alone may get; the public_path test uses only a client's token).
 */
let other: ReturnType<typeof startAdmin> | undefined
function publicPathAndMfa(): ReturnType<typeof startAdmin> {
  other ??= startAdmin(t, { public_path: '/-/admin' }, (config) => {
    config.authorization_server.mfa = { required: false }
  })
  return other
}

t.test('the OpenAPI document is served without a token and describes every route', async (t) => {
  const { bin } = await sharedAdmin()
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
  const { api } = await sharedAdmin()
  const r = await api.call('GET', '/clients')
  t.equal(r.status, 401)
  t.equal(r.headers.get('content-type'), 'application/problem+json')
  t.match(r.headers.get('www-authenticate'), /^Bearer realm="bearward"/)
  t.equal(r.json?.type, 'https://bearward.dev/problems/admin/unauthorized')
  t.equal(r.json?.status, 401)
})

t.test('an admin client lists the YAML clients, read-only with source config, in signed pages', async (t) => {
  const { bin, api } = await sharedAdmin()
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
  t.same(idsOf(second), ['console', 'ops'])
  const last = await api.call('GET', `/clients?limit=2&cursor=${encodeURIComponent(second.json?.next_cursor as string)}`, { token })
  t.same(idsOf(last), ['service', 'web'])
  t.equal(last.json?.next_cursor, null)
  const one = await api.call('GET', '/clients/web', { token })
  t.equal(one.status, 200)
  t.match(one.headers.get('etag'), /^"h[A-Za-z0-9_-]+"$/)
})

t.test("grants: a person's grants listed, one revoked, its tokens refused at once", async (t) => {
  const { bin, api, up } = await sharedAdmin()
  const token = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
  const first = accessTokenOf(await personToken(bin.url, { client: 'web', username: 'alice', scope: 'openid orders:read' }))
  accessTokenOf(await personToken(bin.url, { client: 'web', username: 'alice', scope: 'openid orders:read' }))
  const listed = await api.call('GET', '/grants?person=alice', { token })
  t.equal(listed.status, 200, listed.text)
  const grants = itemsOf(listed)
  t.equal(grants.length, 2)
  t.equal(grants[0]?.client_id, 'web')
  const page = await api.call('GET', '/grants?person=alice&limit=1', { token })
  t.equal(itemsOf(page).length, 1)
  const cursor = page.json?.next_cursor as string
  const otherPerson = await api.call('GET', `/grants?person=bob&limit=1&cursor=${encodeURIComponent(cursor)}`, { token })
  t.equal(otherPerson.status, 400, "a cursor of alice's grants is refused on bob's")
  const second = await api.call('GET', `/grants?person=alice&limit=1&cursor=${encodeURIComponent(cursor)}`, { token })
  t.equal(itemsOf(second).length, 1)
  t.not(itemsOf(second)[0]?.id, itemsOf(page)[0]?.id)

  const firstGrant = JSON.parse(Buffer.from(first.split('.')[1] ?? '', 'base64url').toString('utf8')).grant_id as string
  t.equal((await reply(fetch(`${bin.url}/orders`, { headers: { authorization: `Bearer ${first}` } }))).status, 200)
  const seenBefore = up.seen.length
  const wrongKind = await api.call('DELETE', '/grants/web', { token })
  t.equal(wrongKind.status, 404, 'a client id is not a grant id')
  const revoked = await api.call('DELETE', `/grants/${encodeURIComponent(firstGrant)}`, { token })
  t.equal(revoked.status, 204)
  const refused = await reply(fetch(`${bin.url}/orders`, { headers: { authorization: `Bearer ${first}` } }))
  t.equal(refused.status, 401)
  t.equal(up.seen.length, seenBefore, 'nothing reached the upstream')
  const after = itemsOf(await api.call('GET', '/grants?person=alice', { token }))
  t.same(after.map((g) => g.id).includes(firstGrant), false)
  t.equal(after.length, 1)
})

t.test('attacks on who may hold the admin scopes and what a token may do', async (t) => {
  const { bin, api } = await sharedAdmin()

  t.test('a client not in admin_api.clients asking for the scope gets invalid_scope', async (t) => {
    for (const scope of ['bearward:admin', 'bearward:admin:read']) {
      const r = await adminToken(bin.url, 'service', scope)
      t.equal(r.status, 400, scope)
      t.equal(r.json?.error, 'invalid_scope')
    }
  })

  t.test('a person not in admin_api.people gets invalid_scope through an admin client', async (t) => {
    const r = await personToken(bin.url, { client: 'console', username: 'bob', scope: 'openid bearward:admin', resource: `${bin.url}/admin/v1` })
    t.equal(r.status, 400, r.text)
    t.equal(r.json?.error, 'invalid_scope')
    const ops = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin:read'))
    t.same(itemsOf(await api.call('GET', '/grants?person=bob', { token: ops })), [], 'no grant was left behind')
  })

  t.test('a person in admin_api.people gets an admin token that works', async (t) => {
    const r = await personToken(bin.url, { client: 'console', username: 'alice', scope: 'openid bearward:admin:read', resource: `${bin.url}/admin/v1` })
    const token = accessTokenOf(r)
    const list = await api.call('GET', '/clients', { token })
    t.equal(list.status, 200)
  })

  t.test('a non-admin client cannot get the scope through the code flow either', async (t) => {
    const r = await personToken(bin.url, { client: 'web', username: 'alice', scope: 'openid bearward:admin' })
    // The web client never has the scope: /authorize refuses it before any code.
    t.equal(r.json?.error, 'invalid_scope', r.text)
  })

  t.test('a read token writing is 403 insufficient_scope, and changes nothing', async (t) => {
    const read = accessTokenOf(await adminToken(bin.url, 'auditor', 'bearward:admin:read'))
    const victim = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
    const r = await api.call('POST', '/tokens/revoke', { token: read, body: { jti: jtiOf(victim) } })
    t.equal(r.status, 403)
    t.equal(r.headers.get('content-type'), 'application/problem+json')
    t.match(r.headers.get('www-authenticate'), /error="insufficient_scope"/)
    t.match(r.headers.get('www-authenticate'), /scope="bearward:admin"/)
    t.equal((await api.call('GET', '/clients', { token: victim })).status, 200, 'the token it tried to revoke still works')
  })

  t.test('a token for another audience is 401 invalid_token', async (t) => {
    const token = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin', bin.url))
    const r = await api.call('GET', '/clients', { token })
    t.equal(r.status, 401)
    t.match(r.headers.get('www-authenticate'), /error="invalid_token"/)
  })

  t.test('a token without an admin scope is 403', async (t) => {
    const r0 = await adminToken(bin.url, 'service', 'orders:read', `${bin.url}/admin/v1`)
    const r = await api.call('GET', '/clients', { token: accessTokenOf(r0) })
    t.equal(r.status, 403)
  })

  t.test('an admin token revoked by jti is refused at once', async (t) => {
    const ops = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
    const doomed = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
    t.equal((await api.call('GET', '/clients', { token: doomed })).status, 200)
    const revoked = await api.call('POST', '/tokens/revoke', { token: ops, body: { jti: jtiOf(doomed) } })
    t.equal(revoked.status, 204)
    const after = await api.call('GET', '/clients', { token: doomed })
    t.equal(after.status, 401)
    t.match(after.headers.get('www-authenticate'), /error="invalid_token"/)
    const asToken = await api.call('POST', '/tokens/revoke', { token: ops, body: { jti: doomed } })
    t.equal(asToken.status, 400, 'a whole token in place of its jti is refused (it is never logged or audited)')
  })
})

t.test('requests the API refuses: problems with a status and a type', async (t) => {
  const { bin, api } = await sharedAdmin()
  const token = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))

  const missing = await api.call('GET', '/nothing-here', { token })
  t.equal(missing.status, 404)
  t.equal(missing.json?.type, 'https://bearward.dev/problems/admin/not_found')

  const method = await api.call('PUT', '/clients', { token })
  t.equal(method.status, 405)
  t.equal(method.headers.get('allow'), 'GET, POST, HEAD')

  const forged = await api.call('GET', '/clients?cursor=eyJsIjoiY2xpZW50cyIsInAiOiJ3In0.AAAA', { token })
  t.equal(forged.status, 400)
  t.equal(forged.json?.type, 'https://bearward.dev/problems/admin/invalid_cursor')

  const page = await api.call('GET', '/clients?limit=1', { token })
  const cursor = page.json?.next_cursor as string
  const otherList = await api.call('GET', `/grants?person=alice&cursor=${encodeURIComponent(cursor)}`, { token })
  t.equal(otherList.status, 400, 'a clients cursor on the grants list')
  t.equal(otherList.json?.type, 'https://bearward.dev/problems/admin/invalid_cursor')

  const badLimit = await api.call('GET', '/clients?limit=100000', { token })
  t.equal(badLimit.status, 400)

  const big = await api.call('POST', '/tokens/revoke', { token, body: { jti: 'x'.repeat(70 * 1024) } })
  t.equal(big.status, 413)

  const text = await api.call('POST', '/tokens/revoke', { token, headers: { 'content-type': 'text/plain' }, body: 'jti' })
  t.equal(text.status, 415)

  const notJson = await reply(
    fetch(`${bin.admin}/admin/v1/tokens/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{',
    }),
  )
  t.equal(notJson.status, 400)
  t.equal(notJson.headers.get('content-type'), 'application/problem+json')
})

t.test('admin_api.public_path serves the same API on the main listener', async (t) => {
  const { bin, checker } = await publicPathAndMfa()
  const token = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin:read'))
  const main = new AdminClient(bin.url, checker, '/-/admin/v1')
  const r = await main.call('GET', '/clients', { token })
  t.equal(r.status, 200)
  t.ok(r.headers.get('x-request-id'), 'answered by the main listener')
  t.equal((await main.call('GET', '/clients')).status, 401)
  t.equal((await reply(fetch(`${bin.url}/admin/v1/clients`, { headers: { authorization: `Bearer ${token}` } }))).status, 404, 'only under public_path')
})

t.test('a DPoP-bound admin token works with its proof and is refused without one', async (t) => {
  const { bin, api } = await sharedAdmin()
  const key = proofKeyPair()
  const tokenUrl = `${bin.url}/token`
  const issued = await reply(
    fetch(tokenUrl, {
      method: 'POST',
      headers: {
        authorization: basic('ops', DEMO_SECRET),
        'content-type': 'application/x-www-form-urlencoded',
        dpop: makeProof(key, { htm: 'POST', htu: tokenUrl }),
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'bearward:admin', resource: `${bin.url}/admin/v1` }).toString(),
    }),
  )
  t.equal(issued.json?.token_type, 'DPoP', issued.text)
  const token = accessTokenOf(issued)
  const url = `${bin.admin}/admin/v1/clients`
  const withProof = await api.call('GET', '/clients', { headers: { authorization: `DPoP ${token}`, dpop: makeProof(key, { htu: url, accessToken: token }) } })
  t.equal(withProof.status, 200, withProof.text)
  const asBearer = await api.call('GET', '/clients', { token })
  t.equal(asBearer.status, 401, 'a bound token sent as Bearer')
  const noProof = await api.call('GET', '/clients', { headers: { authorization: `DPoP ${token}` } })
  t.equal(noProof.status, 401)
  t.match(noProof.headers.get('www-authenticate'), /DPoP/)
  const otherKey = await api.call('GET', '/clients', {
    headers: { authorization: `DPoP ${token}`, dpop: makeProof(proofKeyPair(), { htu: url, accessToken: token }) },
  })
  t.equal(otherKey.status, 401, 'a proof by another key')
  const otherUri = await api.call('GET', '/clients', {
    headers: { authorization: `DPoP ${token}`, dpop: makeProof(key, { htu: `${bin.admin}/admin/v1/grants`, accessToken: token }) },
  })
  t.equal(otherUri.status, 401, 'a proof for another URI')
})

t.test('with mfa configured, an admin person signed in with a password alone gets invalid_scope', async (t) => {
  const { bin, api } = await publicPathAndMfa()
  const r = await personToken(bin.url, { client: 'console', username: 'alice', scope: 'openid bearward:admin', resource: `${bin.url}/admin/v1` })
  t.equal(r.status, 400, r.text)
  t.equal(r.json?.error, 'invalid_scope')
  t.match(r.json?.error_description, /second factor/)
  const ops = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin:read'))
  t.same(itemsOf(await api.call('GET', '/grants?person=alice', { token: ops })), [], 'no grant was left behind')
  const orders = await personToken(bin.url, { client: 'web', username: 'alice', scope: 'openid orders:read' })
  t.equal(orders.status, 200, 'the same sign-in still gets other scopes')
})
