/**
 * `admin_api` (issue #42): off unless enabled, the admin scopes added to the
 * listed clients only, and every mistake refused at load where it was written.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const config = (admin: string, o: { routePath?: string; workers?: number } = {}): string => `
${o.workers === undefined ? '' : `workers: ${o.workers}\nstore: redis://127.0.0.1:1\n`}authorization_server:
  scopes: { 'orders:read': Read orders }
  clients:
    - { client_id: ops, type: confidential, secret_hash: "${HASH}", grant_types: [client_credentials] }
    - { client_id: svc, type: confidential, secret_hash: "${HASH}", grant_types: [client_credentials], scopes: ['orders:read'] }
  users:
    - { username: alice, password_hash: "${HASH}", sub: u-alice }
routes:
  - name: orders
    match: { path: ${o.routePath ?? '/orders'} }
    upstream: http://127.0.0.1:3000
admin_api:
${admin
  .trim()
  .split('\n')
  .map((l) => `  ${l}`)
  .join('\n')}
`

t.test('enabled: the listed clients get both admin scopes; no other client does', async (t) => {
  const c = inspect(config('enabled: true\nclients: [ops]\npeople: [alice]'))
  t.same(c.problems, [], describe(c.problems))
  const clients = c.config?.authorizationServer?.clients ?? []
  t.same(clients.find((x) => x.clientId === 'ops')?.scopes, ['bearward:admin', 'bearward:admin:read'])
  t.same(clients.find((x) => x.clientId === 'svc')?.scopes, ['orders:read'])
  t.same(c.config?.adminApi?.peopleSubs, ['u-alice'], 'a YAML person is matched by the sub their tokens carry')
})

t.test('absent or enabled: false: off, and the scopes are unknown to every client', async (t) => {
  const off = inspect(config('enabled: false\nclients: [ops]'))
  t.same(off.problems, [], describe(off.problems))
  t.equal(off.config?.adminApi, null)
  t.notOk(off.config?.authorizationServer?.clients.some((x) => x.scopes.includes('bearward:admin')))
})

t.test('a client that lists an admin scope itself is refused (the scopes are granted by admin_api only)', async (t) => {
  const yaml = config('enabled: true\nclients: [ops]').replace("scopes: ['orders:read']", "scopes: ['orders:read', 'bearward:admin']")
  const c = inspect(yaml)
  t.ok(
    c.problems.some((p) => p.message.includes('bearward:admin')),
    describe(c.problems),
  )
})

t.test('an unknown client in admin_api.clients is refused where it is written', async (t) => {
  const c = inspect(config('enabled: true\nclients: [nobody]'))
  t.equal(at(c.problems, 'admin_api.clients[0]').length, 1, describe(c.problems))
  t.match(at(c.problems, 'admin_api.clients[0]')[0]?.message, /no client `nobody`/)
})

t.test('a route overlapping public_path is refused, naming both', async (t) => {
  for (const routePath of ['/-/admin', '/-', '/-/admin/v1']) {
    const c = inspect(config('enabled: true\npublic_path: /-/admin\nclients: [ops]', { routePath }))
    const found = at(c.problems, 'admin_api.public_path')
    t.equal(found.length, 1, `${routePath}: ${describe(c.problems)}`)
    t.match(found[0]?.message, /route `orders`/)
  }
  const apart = inspect(config('enabled: true\npublic_path: /-/admin\nclients: [ops]', { routePath: '/-/administrator' }))
  t.same(apart.problems, [], 'a segment-boundary neighbour is not an overlap')
})

t.test('public_path must be a normalized path other than /', async (t) => {
  t.equal(at(inspect(config('enabled: true\npublic_path: /')).problems, 'admin_api.public_path').length, 1)
  t.equal(at(inspect(config('enabled: true\npublic_path: /-/admin/')).problems, 'admin_api.public_path').length, 1)
  t.equal(at(inspect(config('enabled: true\npublic_path: admin')).problems, 'admin_api.public_path').length, 1)
})

t.test('with workers, admin_listen cannot serve the API: public_path is required', async (t) => {
  const c = inspect(config('enabled: true\nclients: [ops]', { workers: 2 }))
  t.match(describe(at(c.problems, 'admin_api')), /public_path/)
  const ok = inspect(config('enabled: true\npublic_path: /-/admin\nclients: [ops]', { workers: 2 }))
  t.same(at(ok.problems, 'admin_api'), [], describe(ok.problems))
})

t.test('admin_api without an authorization server is refused', async (t) => {
  const c = inspect('admin_api: { enabled: true }\nroutes: []\n')
  t.match(describe(at(c.problems, 'admin_api')), /needs `authorization_server`/)
})
