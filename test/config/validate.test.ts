import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const client = (extra: string): string => `
authorization_server:
  clients:
    - client_id: c
${extra
  .trim()
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
`

t.test('unknown keys: did you mean, or the list of known keys', async (t) => {
  const { problems } = inspect(`
publicurl: http://x
gateway:
  clockskew: 10s
  zzz: 1
authorization_server:
  acess_token: { ttl: 5m }
  clients:
    - clientId: web
`)
  t.match(at(problems, 'publicurl'), [{ line: 2, col: 1, message: 'unknown key `publicurl`; did you mean `public_url`?' }])
  t.match(at(problems, 'gateway.clockskew'), [{ message: /did you mean `clock_skew`\?/ }])
  t.match(at(problems, 'gateway.zzz'), [{ message: /^unknown key `zzz`; known keys here: `realm`, `clock_skew`/ }])
  t.match(at(problems, 'authorization_server.acess_token'), [{ message: /did you mean `access_token`\?/ }])
  t.match(at(problems, 'authorization_server.clients[0].clientId'), [{ line: 9, col: 7, message: /did you mean `client_id`\?/ }])
})

t.test('enum values get a did-you-mean too', async (t) => {
  const { problems } = inspect('log: { level: warning }\n')
  t.match(at(problems, 'log.level'), [
    { message: '`warning` is not a log level: expected one of `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`; did you mean `warn`?' },
  ])
})

t.test('type errors name what was expected and what was found', async (t) => {
  const { problems } = inspect(`
listen: { host: x }
authorization_server:
  scopes: [a, b]
  clients:
    - client_id: [x]
      type: public
      redirect_uris: https://app.example.com/cb
      introspect: 1
routes: {}
`)
  t.match(at(problems, 'listen'), [{ message: 'expected a string, got a mapping' }])
  t.match(at(problems, 'authorization_server.scopes'), [{ message: /expected a mapping .*got a list/ }])
  t.match(at(problems, 'authorization_server.clients[0].client_id'), [{ message: 'expected a string, got a list' }])
  t.match(at(problems, 'authorization_server.clients[0].redirect_uris'), [{ message: 'expected a list, got a string (write a single value as `[value]`)' }])
  t.match(at(problems, 'authorization_server.clients[0].introspect'), [{ message: 'expected `true` or `false`, got a number' }])
  t.match(at(problems, 'routes'), [{ message: 'expected a list, got a mapping' }])
})

t.test('duplicate ids are refused, pointing back at the first', async (t) => {
  const { problems } = inspect(`
authorization_server:
  clients:
    - { client_id: web, type: public, redirect_uris: [http://127.0.0.1/cb] }
    - { client_id: web, type: public, redirect_uris: [http://127.0.0.1/cb] }
  users:
    - { username: alice, password_hash: "${HASH}" }
    - { username: alice, password_hash: "${HASH}", sub: other }
    - { username: bob, password_hash: "${HASH}", sub: other }
issuers:
  - { id: corp, issuer: https://a.example.com, jwks_uri: https://a.example.com/jwks }
  - { id: corp, issuer: https://b.example.com, jwks_uri: https://b.example.com/jwks }
  - { id: other, issuer: https://a.example.com, jwks_uri: https://a.example.com/jwks }
routes:
  - { name: r, match: { path: /a }, upstream: http://127.0.0.1:1 }
  - { name: r, match: { path: /b }, upstream: http://127.0.0.1:1 }
`)
  t.match(at(problems, 'authorization_server.clients[1].client_id'), [{ line: 5, col: 20, message: 'duplicate client_id `web` (first defined at line 4)' }])
  t.match(at(problems, 'authorization_server.users[1].username'), [{ line: 8, col: 19, message: 'duplicate username `alice` (first defined at line 7)' }])
  t.match(at(problems, 'authorization_server.users[2].sub'), [{ message: 'duplicate sub `other` (first defined at line 8)' }])
  t.match(at(problems, 'issuers[1].id'), [{ line: 12, col: 11, message: 'duplicate issuer id `corp` (first defined at line 11)' }])
  t.match(at(problems, 'issuers[2].issuer'), [{ message: 'duplicate issuer `https://a.example.com` (first defined at line 11)' }])
  t.match(at(problems, 'routes[1].name'), [{ line: 16, col: 13, message: 'duplicate route name `r` (first defined at line 15)' }])
  t.equal(problems.length, 6, describe(problems))
})

t.test('a duplicate is found even when the duplicate entry has other problems', async (t) => {
  const { problems } = inspect(`
authorization_server: {}
routes:
  - { name: r, match: { path: /a }, upstream: http://127.0.0.1:1 }
  - { name: r, match: { path: /b/ }, upstream: http://127.0.0.1:1 }
`)
  t.equal(at(problems, 'routes[1].name').length, 1)
  t.equal(at(problems, 'routes[1].match.path').length, 1)
})

t.test('routes must name known issuers', async (t) => {
  const { problems } = inspect(`
issuers:
  - { id: corp, issuer: https://idp.example.com, jwks_uri: https://idp.example.com/jwks }
routes:
  - name: a
    match: { path: /a }
    upstream: http://127.0.0.1:1
    issuers: [crop, self, partner]
  - name: b
    match: { path: /b }
    upstream: http://127.0.0.1:1
`)
  t.match(at(problems, 'routes[0].issuers[0]'), [{ line: 8, col: 15, message: 'unknown issuer `crop`; did you mean `corp`?' }])
  t.match(at(problems, 'routes[0].issuers[1]'), [{ message: '`self` is the built-in authorization server, but there is no `authorization_server` section' }])
  t.match(at(problems, 'routes[0].issuers[2]'), [{ message: 'unknown issuer `partner`; known issuers: `corp`' }])
  t.match(at(problems, 'routes[1].issuers'), [{ line: 9, col: 5, message: /missing required key `issuers`: there is no `authorization_server`/ }])
  t.equal(problems.length, 4, describe(problems))
})

t.test('each issuer must be able to validate the route token kind', async (t) => {
  const { problems } = inspect(`
authorization_server:
  access_token: { format: opaque }
issuers:
  - { id: jwks-only, issuer: https://a.example.com, jwks_uri: https://a.example.com/jwks }
  - id: introspect-only
    issuer: https://b.example.com
    introspection: { endpoint: https://b.example.com/introspect, client_id: gw, client_secret: s }
routes:
  - { name: a, match: { path: /a }, upstream: http://127.0.0.1:1, token: jwt, issuers: [self, introspect-only, jwks-only] }
  - { name: b, match: { path: /b }, upstream: http://127.0.0.1:1, token: introspect, issuers: [self, jwks-only, introspect-only] }
  - { name: c, match: { path: /c }, upstream: http://127.0.0.1:1, token: any, issuers: [self, jwks-only, introspect-only] }
`)
  t.match(at(problems, 'routes[0].issuers[0]'), [{ message: /`self` issues opaque access tokens/ }])
  t.match(at(problems, 'routes[0].issuers[1]'), [{ message: /issuer `introspect-only` has no `jwks_uri`/ }])
  t.match(at(problems, 'routes[1].issuers[1]'), [{ message: /issuer `jwks-only` has no `introspection` endpoint/ }])
  t.equal(problems.length, 3, describe(problems))
})

t.test('an issuer with its own problem is not reported again as unknown', async (t) => {
  const { problems } = inspect(`
issuers:
  - id: corp
    issuer: https://idp.example.com
    introspection: { endpoint: https://idp.example.com/introspect, client_id: gw, client_secret: "\${CORP_SECRET}" }
routes:
  - { name: a, match: { path: /a }, upstream: http://127.0.0.1:1, token: introspect, issuers: [corp] }
`)
  t.same(
    problems.map((p) => p.path),
    ['issuers[0].introspection.client_secret'],
  )
})

t.test('issuer rules', async (t) => {
  const { problems } = inspect(`
public_url: https://auth.example.com
authorization_server: {}
issuers:
  - id: me
    issuer: https://auth.example.com
    jwks_uri: https://auth.example.com/jwks
  - id: bad id
    issuer: not-a-url
    jwks_uri: ftp://x/jwks
    jwks: { min_ttl: 2h, max_ttl: 1h }
    algorithms: []
`)
  t.match(at(problems, 'issuers[0].issuer'), [{ message: /is the built-in authorization server's issuer.*`self`/ }])
  t.match(at(problems, 'issuers[1].id'), [{ message: /letters, digits/ }])
  t.match(at(problems, 'issuers[1].issuer'), [{ message: /is not an absolute URL/ }])
  t.match(at(problems, 'issuers[1].jwks_uri'), [{ message: /use http:\/\/ or https:\/\// }])
  t.match(at(problems, 'issuers[1].jwks.min_ttl'), [{ message: '`min_ttl` (7200s) must not exceed `max_ttl` (3600s)' }])
  t.match(at(problems, 'issuers[1].algorithms'), [{ message: 'must list at least one value' }])
})

t.test('client rules', async (t) => {
  const cases: Array<[string, string, string | RegExp]> = [
    ['type: public\nsecret_hash: "' + HASH + '"\nredirect_uris: [http://127.0.0.1/cb]', 'secret_hash', /a public client has no secret/],
    ['type: confidential\nredirect_uris: [https://a/cb]', 'secret_hash', /needs `secret_hash`.*bearward hash-secret/],
    ['type: confidential\nsecret_hash: plain\nredirect_uris: [https://a/cb]', 'secret_hash', /not a secret hash.*bearward hash-secret/],
    [
      'type: confidential\nsecret_hash: "scrypt$16384$8$1$short$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"\nredirect_uris: [https://a/cb]',
      'secret_hash',
      /the salt must be base64url/,
    ],
    [
      'type: public\ntoken_endpoint_auth_method: client_secret_basic\nredirect_uris: [http://127.0.0.1/cb]',
      'token_endpoint_auth_method',
      /public clients use `none`/,
    ],
    [
      'type: confidential\nsecret_hash: "' + HASH + '"\ntoken_endpoint_auth_method: none\nredirect_uris: [https://a/cb]',
      'token_endpoint_auth_method',
      /authenticates with its secret/,
    ],
    ['type: public\ngrant_types: [client_credentials]', 'grant_types', /cannot use `client_credentials`/],
    ['type: public\ngrant_types: [implicit]', 'grant_types[0]', /`implicit` grant is not supported/],
    [
      'type: public\ngrant_types: [authorization_code, saml2-bearer]\nredirect_uris: [http://127.0.0.1/cb]',
      'grant_types[1]',
      /`saml2-bearer` is not a supported grant type/,
    ],
    ['type: public\ngrant_types: []', 'grant_types', 'must list at least one value'],
    ['type: public', 'redirect_uris', /`authorization_code` grant needs at least one redirect URI/],
    ['type: public\nredirect_uris: []', 'redirect_uris', /`authorization_code` grant needs at least one redirect URI/],
    ['type: public\nredirect_uris: ["https://a/cb#x"]', 'redirect_uris[0]', /must not contain a fragment/],
    ['type: public\nredirect_uris: [cb]', 'redirect_uris[0]', /not an absolute URI/],
    [
      'type: public\nredirect_uris: [http://127.0.0.1/cb]\nscopes: [opnid]',
      'scopes[0]',
      'unknown scope `opnid`; did you mean `openid`? declare it under `authorization_server.scopes`',
    ],
    [
      'type: public\nredirect_uris: [http://127.0.0.1/cb]\nallowed_origins: [https://a.example.com/]',
      'allowed_origins[0]',
      'an origin has no path, query or trailing slash; write `https://a.example.com`',
    ],
    ['type: public\nredirect_uris: [http://127.0.0.1/cb]\nrequire_pkce: false', 'require_pkce', /must use PKCE/],
    ['type: public\nredirect_uris: [http://127.0.0.1/cb]\nrotate_refresh_tokens: false', 'rotate_refresh_tokens', /must rotate/],
    ['type: robot\nredirect_uris: [http://127.0.0.1/cb]', 'type', /`robot` is not a client type/],
  ]
  for (const [body, key, message] of cases) {
    const { problems } = inspect(client(body))
    const path = `authorization_server.clients[0].${key}`
    t.match(at(problems, path), [{ message }], `${key}: ${describe(problems)}`)
    t.equal(problems.length, 1, `exactly one problem for ${JSON.stringify(body)}: ${describe(problems)}`)
  }
})

t.test('grant type spellings and client scopes', async (t) => {
  const { config, problems } = inspect(`
authorization_server:
  scopes: { "orders:read": Read orders }
  clients:
    - client_id: tv
      type: public
      grant_types: [device_code, refresh_token, device_code]
      scopes: [openid, "orders:read", email, openid]
`)
  t.same(problems, [], describe(problems))
  t.same(config?.authorizationServer?.clients[0]?.grantTypes, ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'])
  t.same(config?.authorizationServer?.clients[0]?.scopes, ['openid', 'orders:read', 'email'])
  t.same(config?.authorizationServer?.clients[0]?.redirectUris, [])
})

t.test('scope names and user claims', async (t) => {
  const { problems } = inspect(`
authorization_server:
  scopes: { "bad scope": x, ok: [not, text] }
  users:
    - { username: u, password_hash: "${HASH}", claims: { sub: x } }
    - { username: v, password_hash: nope, claims: [a] }
    - { password_hash: "${HASH}" }
`)
  t.match(at(problems, 'authorization_server.scopes["bad scope"]'), [{ message: /is not a valid scope name/ }])
  t.match(at(problems, 'authorization_server.scopes.ok'), [{ message: 'expected a string, got a list' }])
  t.match(at(problems, 'authorization_server.users[0].claims.sub'), [{ message: /not in `claims`/ }])
  t.match(at(problems, 'authorization_server.users[1].password_hash'), [{ message: /bearward hash-secret/ }])
  t.match(at(problems, 'authorization_server.users[1].claims'), [{ message: /expected a mapping/ }])
  t.match(at(problems, 'authorization_server.users[2].username'), [{ message: 'missing required key `username`' }])
})

t.test('signing keys', async (t) => {
  const { problems } = inspect(`
authorization_server:
  keys:
    - { jwk: { kty: EC, crv: P-256, x: a, y: b } }
    - { jwk: { kty: oct, k: c2VjcmV0 } }
    - {}
    - { file: "" }
    - jwk: not-a-map
`)
  t.match(at(problems, 'authorization_server.keys[0].jwk.d'), [{ message: /first key signs tokens, so it needs its private part/ }])
  t.match(at(problems, 'authorization_server.keys[1].jwk.kty'), [{ message: /`RSA`, `EC` or `OKP`/ }])
  t.match(at(problems, 'authorization_server.keys[2]'), [{ message: /exactly one of the two/ }])
  t.match(at(problems, 'authorization_server.keys[3].file'), [{ message: 'expected a string, got an empty string' }])
  t.match(at(problems, 'authorization_server.keys[4].jwk'), [{ message: /expected a mapping/ }])
})

t.test('route rules', async (t) => {
  const { config, problems } = inspect(`
authorization_server: {}
routes:
  - name: a
    match: { path: /a, host: "api.example.com:8080", methods: [get, "bad method"] }
    upstream: http://127.0.0.1:1?x=1
    scopes: { GET: [a], get: [b], "bad method": [c], "*": ["bad scope"] }
  - name: b
    match: { path: /b, methods: [get, post, GET] }
    upstream: http://127.0.0.1:1
    scopes: { delete: [x], Get: [y] }
    upstream_ca: /etc/hosts
  - name: c
    match: { path: /c, methods: [] }
    upstream: http://127.0.0.1:1
    token: jwe
    store_unavailable: maybe
`)
  t.equal(config, null)
  t.match(at(problems, 'routes[0].match.host'), [{ message: 'match a host without its port: `api.example.com`' }])
  t.match(at(problems, 'routes[0].match.methods[1]'), [{ message: '`bad method` is not an HTTP method' }])
  t.match(at(problems, 'routes[0].upstream'), [{ message: 'the URL must not have a query string' }])
  t.match(at(problems, 'routes[0].scopes.get'), [{ message: /duplicate method `GET`/ }])
  t.match(at(problems, 'routes[0].scopes["bad method"]'), [{ message: /is not an HTTP method or `"\*"`/ }])
  t.match(at(problems, 'routes[0].scopes.*[0]'), [{ message: /`bad scope` is not a valid scope name/ }])
  t.match(at(problems, 'routes[1].scopes.delete'), [{ message: 'this rule can never apply: the route only matches GET, POST' }])
  t.match(at(problems, 'routes[1].upstream_ca'), [{ message: '`upstream_ca` only applies to https:// upstreams' }])
  t.match(at(problems, 'routes[2].match.methods'), [{ message: /list at least one method/ }])
  t.match(at(problems, 'routes[2].token'), [{ message: /`jwe` is not a token kind/ }])
  t.match(at(problems, 'routes[2].store_unavailable'), [{ message: /`maybe` is not a store_unavailable policy/ }])
})

t.test('route matching fields are normalized', async (t) => {
  const { config, problems } = inspect(`
authorization_server: {}
routes:
  - name: a
    match: { path: /a, host: API.Example.COM, methods: [get, Post, GET] }
    upstream: http://127.0.0.1:1/base/
    scopes: { get: [x] }
  - { name: root, match: { path: / }, upstream: http://127.0.0.1:2 }
`)
  t.same(problems, [], describe(problems))
  t.same(config?.routes[0]?.match, { path: '/a', host: 'api.example.com', methods: ['GET', 'POST'], caseInsensitive: false })
  t.equal(config?.routes[0]?.upstream, 'http://127.0.0.1:1/base')
  t.same(config?.routes[0]?.scopes, { GET: ['x'] })
  t.equal(config?.routes[1]?.match.path, '/')
})

t.test('route path normalization problems suggest the normalized form', async (t) => {
  const paths: Array<[string, string | RegExp]> = [
    ['orders', 'a route path must start with `/`; write `/orders`'],
    ['/orders/', /no trailing slash.*write `\/orders`/],
    ['/a//b', 'a route path must not contain `//`; write `/a/b`'],
    ['/a/./b', 'a route path must not contain `.` or `..` segments; write `/a/b`'],
    ['/a/../b', /write `\/b`/],
    ['/a%2fb', 'a route path must not contain an encoded slash `%2f`; write `/a/b`'],
    ['/a%2E%2E/b', /encoded dot/],
    ['/a%5cb', /encoded backslash/],
    ['/a\\\\b', /must not contain `\\`/],
    ['/a?b=1', /no `\?query`/],
    ['/a b', /spaces/],
    ['/a%zz', /not followed by two hex digits/],
  ]
  for (const [path, message] of paths) {
    const { problems } = inspect(`authorization_server: {}\nroutes:\n  - { name: r, match: { path: "${path}" }, upstream: http://127.0.0.1:1 }\n`)
    t.match(at(problems, 'routes[0].match.path'), [{ message }], path)
  }
  for (const ok of ['/', '/a', '/a/b.c', '/.well-known/x', '/a%20b', '/...']) {
    const { problems } = inspect(`authorization_server: {}\nroutes:\n  - { name: r, match: { path: "${ok}" }, upstream: http://127.0.0.1:1 }\n`)
    t.same(problems, [], ok)
  }
})

t.test('overlapping routes are a warning; shadowing prefixes are not', async (t) => {
  const { config, warnings } = inspect(`
authorization_server: {}
routes:
  - { name: all, match: { path: /orders }, upstream: http://127.0.0.1:1 }
  - { name: get, match: { path: /orders, methods: [GET] }, upstream: http://127.0.0.1:1 }
  - { name: post, match: { path: /orders, methods: [POST, PUT] }, upstream: http://127.0.0.1:1 }
  - { name: put, match: { path: /orders, methods: [PUT, DELETE] }, upstream: http://127.0.0.1:1 }
  - { name: sub, match: { path: /orders/items }, upstream: http://127.0.0.1:1 }
  - { name: host, match: { path: /orders, host: a.example.com }, upstream: http://127.0.0.1:1 }
  - { name: root, match: { path: / }, upstream: http://127.0.0.1:1 }
`)
  t.ok(config, 'warnings do not refuse the config')
  t.same(
    warnings.filter((w) => w.path.startsWith('routes')).map((w) => [w.path, w.message]),
    [
      ['routes[1]', 'route `get` matches the same requests as route `all` (routes[0]) for GET /orders; only one of them can serve them'],
      ['routes[2]', 'route `post` matches the same requests as route `all` (routes[0]) for POST, PUT /orders; only one of them can serve them'],
      ['routes[3]', 'route `put` matches the same requests as route `all` (routes[0]) for PUT, DELETE /orders; only one of them can serve them'],
      ['routes[3]', 'route `put` matches the same requests as route `post` (routes[2]) for PUT /orders; only one of them can serve them'],
    ],
  )
  t.match(
    warnings.find((w) => w.path === 'routes[1]'),
    { line: 5, col: 25 },
    'at the match of the later route',
  )
})

t.test('identity_headers.claims rules', async (t) => {
  const { problems } = inspect(`
routes:
  - name: r
    match: { path: /r }
    upstream: http://127.0.0.1:3000
    identity_headers: { claims: { email: X-Id-Email, mail: x-id-email, groups: "bad header", who: X-Auth-Subject, n: 3 } }
`)
  t.match(at(problems, 'routes[0].identity_headers.claims.mail'), [{ message: /duplicate identity header `x-id-email`/ }])
  t.match(at(problems, 'routes[0].identity_headers.claims.groups'), [{ message: '`bad header` is not a valid header name' }])
  t.match(
    at(problems, 'routes[0].identity_headers.claims.who'),
    [{ message: /duplicate identity header `x-auth-subject`/ }],
    'a claim header cannot take the subject header',
  )
  t.match(at(problems, 'routes[0].identity_headers.claims.n'), [{ message: /expected a string/ }])
})

t.test('gateway rules', async (t) => {
  const { problems } = inspect(`
gateway:
  realm: ""
  identity_headers: { subject: X-Id, client_id: x-id, scope: "bad header" }
  trusted_proxies: [10.0.0.0/33, 10.0.0.1, "::1/128", not-an-ip, 1.2.3.4/8/9]
  token_cache: { max_entries: -1 }
`)
  t.match(at(problems, 'gateway.realm'), [{ message: 'expected a string, got an empty string' }])
  t.match(at(problems, 'gateway.identity_headers.client_id'), [{ message: /duplicate identity header `x-id`/ }])
  t.match(at(problems, 'gateway.identity_headers.scope'), [{ message: '`bad header` is not a valid header name' }])
  t.same(
    problems.filter((p) => p.path.startsWith('gateway.trusted_proxies')).map((p) => p.path),
    ['gateway.trusted_proxies[0]', 'gateway.trusted_proxies[3]', 'gateway.trusted_proxies[4]'],
  )
  t.match(at(problems, 'gateway.token_cache.max_entries'), [{ message: 'must be at least 0, got -1' }])
})

t.test('listen addresses', async (t) => {
  const ok: Array<[string, { host: string; port: number }]> = [
    ['0.0.0.0:8080', { host: '0.0.0.0', port: 8080 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['"[::1]:8080"', { host: '::1', port: 8080 }],
    ['"[::]:443"', { host: '::', port: 443 }],
    ['gw.internal.example.com:65535', { host: 'gw.internal.example.com', port: 65535 }],
    ['9000', { host: '0.0.0.0', port: 9000 }],
  ]
  for (const [text, address] of ok) {
    const { config, problems } = inspect(`listen: ${text}\n`)
    t.same(problems, [], text)
    t.same(config?.listen, address, text)
  }
  const bad: Array<[string, RegExp]> = [
    ['localhost', /has no port/],
    ['0.0.0.0:65536', /is not a port/],
    ['0.0.0.0:http', /is not a port/],
    ['::1:8080', /IPv6 addresses need brackets: `\[::1\]:8080`/],
    ['"[localhost]:80"', /is not an IPv6 address/],
    ['"[::1]8080"', /is not a listen address/],
    ['"bad_host:80"', /is not a host name/],
    ['70000', /is not a port/],
  ]
  for (const [text, message] of bad) {
    t.match(at(inspect(`listen: ${text}\n`).problems, 'listen'), [{ message }], text)
  }
})

t.test('public_url rules', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['https://auth.example.com/#x', /must not have a fragment/],
    ['https://auth.example.com?x', /must not have a query/],
    ['auth.example.com', /is not an absolute URL/],
    ['https://user:pw@auth.example.com', /credentials in the URL/],
    ['https://a.example.com//x', /must not contain `\/\/`/],
  ]
  for (const [url, message] of cases) t.match(at(inspect(`public_url: "${url}"\n`).problems, 'public_url'), [{ message }], url)
})

t.test('store rules never echo the URL (it may hold a password)', async (t) => {
  const { problems } = inspect('store: "mysql://user:hunter2@db/x"\n')
  t.match(at(problems, 'store'), [{ message: /redis:\/\// }])
  t.notMatch(problems[0]?.message, /hunter2/)
  const object = inspect('store: { url: "http://user:hunter2@r", cluster: [nope], kee_prefix: x }\n').problems
  t.match(at(object, 'store.url'), [{ message: /redis:\/\// }])
  t.match(at(object, 'store.cluster[0]'), [{ message: /cluster nodes are `host:port`/ }])
  t.match(at(object, 'store.kee_prefix'), [{ message: /did you mean `key_prefix`\?/ }])
  t.ok(object.every((p) => !p.message.includes('hunter2')))
  t.match(at(inspect('store: {}\n').problems, 'store.url'), [{ message: 'missing required key `url`' }])
  const sentinel = inspect('store: { sentinels: [nope], cluster: [r:7000], name: x, replica_wait: { replicas: -1, timeout: 2s } }\n').problems
  t.match(at(sentinel, 'store.sentinels[0]'), [{ message: /sentinels are `host:port`/ }])
  t.match(at(sentinel, 'store.replica_wait.replicas'), [{}])
  t.match(at(sentinel, 'store.replica_wait.timeout'), [{ message: /shorter than store.command_timeout \(1000 ms\)/ }])
  t.match(at(inspect('store: { url: "redis://r", name: x }\n').problems, 'store.name'), [{ message: /needs `sentinels`/ }])
  t.match(at(inspect('store: { url: "redis://r", sentinels: [a:1], cluster: [b:2] }\n').problems, 'store.sentinels'), [
    { message: /either `sentinels` or `cluster`/ },
  ])
})

t.test('tls files are resolved against the config file and must exist', async (t) => {
  const { config } = inspect('tls: { cert_file: files/cert.pem, key_file: files/key.pem }\n')
  t.match(config?.tls, { certFile: /test\/fixtures\/config\/good\/files\/cert\.pem$/ })
  const { problems } = inspect('tls: { cert_file: files/nope.pem }\n')
  t.match(at(problems, 'tls.cert_file'), [{ message: /^file not found: \/.*files\/nope\.pem$/ }])
  t.match(at(problems, 'tls.key_file'), [{ message: 'missing required key `key_file`' }])
  t.match(at(inspect('tls: { cert_file: files, key_file: files/key.pem }\n').problems, 'tls.cert_file'), [{ message: /not a regular file/ }])
})

t.test('anchors, aliases and merge keys', async (t) => {
  const { config, problems } = inspect(`
x-upstream: &upstream http://127.0.0.1:3000
x-route: &defaults
  upstream: *upstream
  timeouts: { connect: 1s }
  max_body: 1mb
authorization_server: {}
routes:
  - <<: *defaults
    name: a
    match: { path: /a }
  - <<: [*defaults]
    name: b
    match: { path: /b }
    max_body: 2mb
`)
  t.same(problems, [], describe(problems))
  t.same(
    config?.routes.map((r) => [r.name, r.upstream, r.timeouts.connectMs, r.maxBodyBytes]),
    [
      ['a', 'http://127.0.0.1:3000', 1000, 1024 * 1024],
      ['b', 'http://127.0.0.1:3000', 1000, 2 * 1024 * 1024],
    ],
  )
  const bad = inspect(`
x-route: &defaults
  upstrem: http://127.0.0.1:3000
authorization_server: {}
routes:
  - <<: *defaults
    name: a
    match: { path: /a }
  - <<: not-a-map
    name: b
`)
  t.match(at(bad.problems, 'routes[0].upstrem'), [{ line: 3, col: 3, message: /did you mean `upstream`\?/ }], 'a merged key points at its definition')
  t.match(at(bad.problems, 'routes[1].<<'), [{ message: /expected a mapping/ }])
})

t.test('keys that are not plain words are refused', async (t) => {
  const { problems } = inspect('? [a, b]\n: 1\n')
  t.match(problems, [{ line: 1, col: 3, message: /keys must be plain words/ }])
})

t.test('client_timeouts rules', async (t) => {
  const { problems } = inspect(`
client_timeouts: { headers: 0s, body_idle: 30s, request: 10s, keep_alive: soon, idle: 5s }
`)
  t.match(at(problems, 'client_timeouts.headers'), [{ message: /at least/ }])
  t.match(at(problems, 'client_timeouts.request'), [{ message: '`request` bounds the whole body, so it must be at least `body_idle`' }])
  t.match(at(problems, 'client_timeouts.keep_alive'), [{ message: /duration/ }])
  t.match(at(problems, 'client_timeouts.idle'), [{ message: /unknown key/ }])
  const ok = inspect('client_timeouts: { body_idle: 250ms }\n')
  t.same(ok.problems, [], describe(ok.problems))
  t.same(ok.config?.clientTimeouts, { headersMs: 20_000, bodyIdleMs: 250, requestMs: 300_000, keepAliveMs: 65_000 }, 'unset keys keep their defaults')
})

t.test('allow_trace and case_insensitive', async (t) => {
  const { config, problems } = inspect(`
routes:
  - { name: a, match: { path: /a }, upstream: "http://127.0.0.1:1", public: true }
  - { name: b, match: { path: /B, case_insensitive: true }, upstream: "http://127.0.0.1:1", public: true, allow_trace: true }
  - { name: c, match: { path: /c, methods: [get, trace] }, upstream: "http://127.0.0.1:1", public: true }
  - { name: d, match: { path: /d, case_insensitive: yes }, upstream: "http://127.0.0.1:1", public: true, allow_trace: 1 }
`)
  t.match(at(problems, 'routes[3].match.case_insensitive'), [{ message: /expected `true` or `false`/ }])
  t.match(at(problems, 'routes[3].allow_trace'), [{ message: /expected `true` or `false`/ }])
  t.equal(config, null)
  const good = inspect(`
routes:
  - { name: a, match: { path: /a }, upstream: "http://127.0.0.1:1", public: true }
  - { name: b, match: { path: /B, case_insensitive: true }, upstream: "http://127.0.0.1:1", public: true, allow_trace: true }
  - { name: c, match: { path: /c, methods: [get, trace] }, upstream: "http://127.0.0.1:1", public: true }
`)
  t.same(
    good.config?.routes.map((r) => [r.name, r.match.caseInsensitive, r.allowTrace]),
    [
      ['a', false, false],
      ['b', true, true],
      ['c', false, true],
    ],
    'TRACE listed in methods allows it too',
  )
})
