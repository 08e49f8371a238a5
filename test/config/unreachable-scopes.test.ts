/**
 * check-config warns about a route scope no client can be granted (issue
 * #42): a typo (`orders:raed`) is named with its route; a scope some client
 * (or registration) can get is not; another issuer's routes are not judged.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const config = (routeScope: string, o: { issuers?: string } = {}): string => `
authorization_server:
  scopes: { orders:read: Read orders }
  clients:
    - { client_id: svc, type: confidential, secret_hash: "${HASH}", grant_types: [client_credentials], scopes: [orders:read] }
${o.issuers ?? ''}routes:
  - name: orders
    match: { path: /orders }
    upstream: http://127.0.0.1:3000
    scopes: { GET: [${routeScope}] }
${o.issuers === undefined ? '' : '    issuers: [corp]\n'}`

t.test('a route scope no client can be granted is a warning naming it and the route', async (t) => {
  const { problems, warnings } = inspect(config('orders:raed'))
  t.same(problems, [], describe(problems))
  const found = at(warnings, 'routes[0].scopes')
  t.equal(found.length, 1, describe(warnings))
  t.match(found[0]?.message, /no client can be granted `orders:raed`.*route `orders`; a typo\?/)
})

t.test('a scope a client can be granted is not warned about', async (t) => {
  const { warnings } = inspect(config('orders:read'))
  t.same(at(warnings, 'routes[0].scopes'), [], describe(warnings))
})

t.test('a route that takes only another issuer’s tokens is not judged', async (t) => {
  const { problems, warnings } = inspect(
    config('orders:raed', { issuers: 'issuers:\n  - { id: corp, issuer: "https://corp.example", jwks_uri: "https://corp.example/jwks" }\n' }),
  )
  t.same(problems, [], describe(problems))
  t.same(at(warnings, 'routes[0].scopes'), [], describe(warnings))
})
