/**
 * Routes must not hide bearward's own paths (issue #42): a route on an
 * endpoint or page of the authorization server, or on a prefix above one,
 * is refused at load naming both; the issuer's own prefix (the catch-all)
 * and paths beside bearward's are not. The list is the router's own
 * (src/config/own-paths.ts): the face built from it owns exactly those paths.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'
import { FRONT_CHANNEL_PATHS, ownPaths } from '../../src/config/own-paths.js'
import { frontChannelRoutes } from '../../src/as/interaction/front-channel-routes.js'

const config = (path: string, o: { publicUrl?: string; registration?: boolean; extra?: string } = {}): string => `
public_url: ${o.publicUrl ?? 'http://localhost:8080'}
authorization_server:
  clients:
    - { client_id: svc, type: confidential, secret_hash: "${HASH}", grant_types: [client_credentials], scopes: [orders:read] }
  scopes: { orders:read: Read orders }
${o.registration === true ? '  registration: { enabled: true }\n' : ''}routes:
  - name: app
    match: { path: ${path}${o.extra ?? ''} }
    upstream: http://127.0.0.1:3000
    scopes: [orders:read]
`

t.test('a route on an own endpoint or page is refused, naming both', async (t) => {
  for (const [path, own] of [
    ['/account', /`\/account` is bearward's \/account page/],
    ['/token', /`\/token` is bearward's \/token endpoint/],
    ['/authorize', /bearward's \/authorize page/],
    ['/jwks.json', /bearward's \/jwks.json endpoint/],
  ] as const) {
    const { problems } = inspect(config(path))
    const found = at(problems, 'routes[0].match.path')
    t.equal(found.length, 1, `${path}: ${describe(problems)}`)
    t.match(found[0]?.message, /route `app` on `.*` overlaps bearward's own paths/)
    t.match(found[0]?.message, own)
  }
})

t.test('a route on a prefix above an own path is refused, naming the path it hides', async (t) => {
  const assets = inspect(config('/assets'))
  t.match(at(assets.problems, 'routes[0].match.path')[0]?.message, /`\/assets` holds bearward's \/assets\/bearward.css page \(`\/assets\/bearward.css`\)/)
  const wellKnown = inspect(config('/.well-known'))
  t.match(at(wellKnown.problems, 'routes[0].match.path')[0]?.message, /holds the authorization server metadata document/)
})

t.test('a case-insensitive route is compared without case', async (t) => {
  const { problems } = inspect(config('/ACCOUNT', { extra: ', case_insensitive: true' }))
  t.equal(at(problems, 'routes[0].match.path').length, 1, describe(problems))
})

t.test('the catch-all, paths beside bearward and endpoints that are off are not refused', async (t) => {
  for (const path of ['/', '/orders', '/accounts', '/token-info', '/account-api', '/register']) {
    const { problems } = inspect(config(path))
    t.same(at(problems, 'routes[0].match.path'), [], `${path}: ${describe(problems)}`)
  }
  const registered = inspect(config('/register', { registration: true }))
  t.match(at(registered.problems, 'routes[0].match.path')[0]?.message, /bearward's \/register endpoint/)
})

t.test('an issuer with a path: its own paths live under it', async (t) => {
  const under = inspect(config('/auth/token', { publicUrl: 'https://h.example/auth' }))
  t.equal(at(under.problems, 'routes[0].match.path').length, 1, describe(under.problems))
  const base = inspect(config('/auth', { publicUrl: 'https://h.example/auth' }))
  t.same(at(base.problems, 'routes[0].match.path'), [], 'the issuer prefix is the catch-all')
  const beside = inspect(config('/token', { publicUrl: 'https://h.example/auth' }))
  t.same(at(beside.problems, 'routes[0].match.path'), [], '/token is not bearward’s when the issuer is /auth')
})

t.test('the pages config load knows are exactly the pages the router serves', async (t) => {
  t.same([...frontChannelRoutes.keys()].sort(), [...FRONT_CHANNEL_PATHS].sort())
  const paths = ownPaths('http://localhost:8080', { identityProviders: [], registration: null }).map((o) => o.path)
  t.ok(paths.includes('/token') && paths.includes('/.well-known/openid-configuration') && paths.includes('/.well-known/oauth-authorization-server'))
  t.notOk(paths.includes('/register'))
})
