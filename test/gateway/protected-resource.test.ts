/**
 * RFC 9728 at the gateway: each protected route's metadata document at its
 * path-aware well-known URL, `resource_metadata` in every Bearer challenge,
 * `scope` in a 401, and the RFC 8707 audience binding a route's resource
 * identifier gives (a token for one route's resource is refused by another).
 */
import t from 'tap'
import { PUBLIC_URL, startGateway, type Harness } from './fixture.js'

/** Every protected route takes DPoP-bound tokens too (dpop: allowed): its challenges say so (RFC 9449 7.1). */
const ACCEPTS_DPOP = ', DPoP algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"'

const META = `${PUBLIC_URL}/.well-known/oauth-protected-resource`

function routes(up: string): string {
  return `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    protected_resource: { name: Orders MCP, documentation: https://docs.example.com/mcp }
    mcp: { tools: { delete_order: ["orders:write"] } }
  - name: orders-read
    match: { path: /orders, methods: [GET] }
    upstream: ${up}
    scopes: { GET: ["orders:read"] }
    token_in_query: true
  - name: orders-write
    match: { path: /orders, methods: [POST] }
    upstream: ${up}
    scopes: { POST: ["orders:write"] }
    issuers: [self, corp]
  - name: hidden
    match: { path: /hidden }
    upstream: ${up}
    protected_resource: false
  - name: docs
    match: { path: /docs }
    upstream: ${up}
    public: true
  - name: elsewhere
    match: { path: /other }
    upstream: ${up}
    protected_resource: { resource: "https://api.example.com/v2/things?tenant=a" }
`
}

const EXTRA = `
issuers:
  - id: corp
    issuer: https://idp.example.com
    jwks_uri: https://idp.example.com/jwks.json
`

t.test('protected resource metadata (RFC 9728)', async (t) => {
  const gw: Harness = await startGateway({ routes, extra: EXTRA })
  t.teardown(() => gw.close())

  t.test('a route publishes its document at the path-aware well-known URL', async (t) => {
    const res = await gw.send('/.well-known/oauth-protected-resource/mcp')
    t.equal(res.status, 200)
    t.equal(res.headers['content-type'], 'application/json')
    t.equal(res.headers['access-control-allow-origin'], '*', 'public metadata: any origin may read it')
    t.same(res.json(), {
      resource: `${PUBLIC_URL}/mcp`,
      authorization_servers: [PUBLIC_URL],
      bearer_methods_supported: ['header'],
      scopes_supported: ['mcp:tools', 'orders:write'],
      resource_name: 'Orders MCP',
      resource_documentation: 'https://docs.example.com/mcp',
      dpop_signing_alg_values_supported: ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'RS256', 'PS256'],
      dpop_bound_access_tokens_required: false,
    })
    const head = await gw.send('/.well-known/oauth-protected-resource/mcp', { method: 'HEAD' })
    t.equal(head.status, 200)
    t.equal(head.body, '')
    const pre = await gw.send('/.well-known/oauth-protected-resource/mcp', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    })
    t.equal(pre.status, 204)
    const post = await gw.send('/.well-known/oauth-protected-resource/mcp', { method: 'POST' })
    t.equal(post.status, 405)
    t.equal(post.headers.allow, 'GET, HEAD, OPTIONS')
  })

  t.test('routes split by method share one identifier and one document: the union', async (t) => {
    const res = await gw.send('/.well-known/oauth-protected-resource/orders')
    t.equal(res.status, 200)
    t.same(res.json(), {
      resource: `${PUBLIC_URL}/orders`,
      authorization_servers: [PUBLIC_URL, 'https://idp.example.com'],
      bearer_methods_supported: ['header', 'query'],
      scopes_supported: ['orders:read', 'orders:write'],
      dpop_signing_alg_values_supported: ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'RS256', 'PS256'],
      dpop_bound_access_tokens_required: false,
    })
  })

  t.test('an explicit resource identifier decides the URL; hidden and public routes publish nothing', async (t) => {
    const other = await gw.send('/.well-known/oauth-protected-resource/v2/things')
    t.equal(other.status, 200)
    t.equal(other.json().resource, 'https://api.example.com/v2/things?tenant=a')
    t.equal((await gw.send('/.well-known/oauth-protected-resource/hidden')).status, 404)
    t.equal((await gw.send('/.well-known/oauth-protected-resource/docs')).status, 404)
    t.equal((await gw.send('/.well-known/oauth-protected-resource')).status, 404, 'no route at / publishes the root document')
    t.equal(gw.upstream.seen.length, 0, 'metadata requests never reach an upstream')
  })

  t.test('a 401 names the metadata and the scopes the method needs; a 403 names the metadata', async (t) => {
    const missing = await gw.send('/mcp', { method: 'POST' })
    t.equal(missing.status, 401)
    t.equal(missing.headers['www-authenticate'], `Bearer realm="bearward", scope="mcp:tools", resource_metadata="${META}/mcp"` + ACCEPTS_DPOP)
    const read = await gw.send('/orders')
    t.equal(read.headers['www-authenticate'], `Bearer realm="bearward", scope="orders:read", resource_metadata="${META}/orders"` + ACCEPTS_DPOP)
    const write = await gw.send('/orders', { method: 'POST' })
    t.equal(write.headers['www-authenticate'], `Bearer realm="bearward", scope="orders:write", resource_metadata="${META}/orders"` + ACCEPTS_DPOP)
    const forbidden = await gw.get('/orders', await gw.mint({ scope: 'other' }))
    t.equal(forbidden.status, 403)
    t.equal(
      forbidden.headers['www-authenticate'],
      `Bearer realm="bearward", error="insufficient_scope", error_description="The access token does not grant the scope this request needs", scope="orders:read", resource_metadata="${META}/orders"` +
        ACCEPTS_DPOP,
    )
    const hidden = await gw.send('/hidden')
    t.equal(hidden.headers['www-authenticate'], 'Bearer realm="bearward"' + ACCEPTS_DPOP, 'a route without metadata names none')
    t.equal(gw.upstream.seen.length, 0, 'nothing reached the upstream')
  })
})

t.test('a route at / publishes the root document, before the route could take the path', async (t) => {
  const gw = await startGateway({ routes: (up) => `\n  - name: all\n    match: { path: / }\n    upstream: ${up}\n` })
  t.teardown(() => gw.close())
  const res = await gw.send('/.well-known/oauth-protected-resource')
  t.equal(res.status, 200)
  t.equal(res.json().resource, PUBLIC_URL)
  const missing = await gw.send('/anything')
  t.equal(missing.headers['www-authenticate'], `Bearer realm="bearward", resource_metadata="${META}"` + ACCEPTS_DPOP)
  t.equal(gw.upstream.seen.length, 0)
})

t.test('audience binding (RFC 8707): a token for a route resource is for that route only', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: a
    match: { path: /a }
    upstream: ${up}
  - name: b
    match: { path: /b }
    upstream: ${up}
  - name: pinned
    match: { path: /pinned }
    upstream: ${up}
    audience: https://pinned.example.com
    protected_resource: false
`,
  })
  t.teardown(() => gw.close())
  const forA = await gw.mint({ aud: `${PUBLIC_URL}/a` })
  t.equal((await gw.get('/a/x', forA)).status, 200, 'accepted by the route whose resource it names')
  const before = gw.upstream.seen.length
  const atB = await gw.get('/b/x', forA)
  t.equal(atB.status, 401, 'refused by a route with another resource')
  t.match(atB.headers['www-authenticate'], /error="invalid_token"/)
  t.equal(gw.upstream.seen.length, before, 'the refused request reached no upstream')
  const plain = await gw.mint()
  t.equal((await gw.get('/a/x', plain)).status, 200, 'a token without resource (aud = public_url) keeps working everywhere')
  t.equal((await gw.get('/b/x', plain)).status, 200)
  t.equal((await gw.get('/pinned', plain)).status, 401, 'an explicit audience is the only one, without metadata')
  t.equal((await gw.get('/pinned', await gw.mint({ aud: 'https://pinned.example.com' }))).status, 200)
  t.same(
    gw.config.routes.map((r) => r.audiences),
    [[PUBLIC_URL, `${PUBLIC_URL}/a`], [PUBLIC_URL, `${PUBLIC_URL}/b`], ['https://pinned.example.com']],
  )
})
