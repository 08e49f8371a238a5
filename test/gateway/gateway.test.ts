/**
 * The gateway as a client sees it: JWT validation in the order docs/architecture.md gives and the
 * attacks RFC 8725 lists, token extraction (RFC 6750 2), challenges
 * (RFC 6750 3), scope, revocation, routing and forwarding through the real
 * UpstreamProxy to a real upstream.
 */
import t from 'tap'
import { createHmac, createHash } from 'node:crypto'
import { createServer } from 'node:http'
import { CompactSign, exportJWK, exportSPKI, SignJWT } from 'jose'
import { mint, newKey, PUBLIC_URL, sendRaw, startGateway, type Harness } from './fixture.js'
import { listen } from '../helpers/http.js'

/** Every protected route takes DPoP-bound tokens too (dpop: allowed): its challenges say so (RFC 9449 7.1). */
const ACCEPTS_DPOP = ', DPoP algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"'

const b64url = (value: unknown): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')

/** What a 401 on GET /orders adds (RFC 9728 5.1): the scopes GET needs and where the route's metadata is. */
const ORDERS_GET = ', scope="orders:read", resource_metadata="http://gw.test/.well-known/oauth-protected-resource/orders"'
const INVALID = `Bearer realm="bearward", error="invalid_token", error_description="The access token is invalid"${ORDERS_GET}${ACCEPTS_DPOP}`
const EXPIRED = `Bearer realm="bearward", error="invalid_token", error_description="The access token is expired"${ORDERS_GET}${ACCEPTS_DPOP}`
const REVOKED = `Bearer realm="bearward", error="invalid_token", error_description="The access token has been revoked"${ORDERS_GET}${ACCEPTS_DPOP}`

/** A CL.TE request smuggling attempt: a second request hidden in the body. */
function smuggle(token: string): string {
  return (
    'POST /orders HTTP/1.1\r\nHost: x\r\n' +
    `Authorization: Bearer ${token}\r\n` +
    'Content-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n' +
    '0\r\n\r\nGET /admin HTTP/1.1\r\nHost: x\r\n\r\n'
  )
}

function routes(up: string): string {
  return `
  - name: orders
    match: { path: /orders }
    upstream: ${up}
    scopes: { GET: ["orders:read"], POST: ["orders:write"] }
  - name: admin
    match: { path: /admin, methods: [GET, PUT] }
    upstream: ${up}
    scopes: { "*": [admin] }
  - name: docs
    match: { path: /docs }
    upstream: ${up}
    public: true
  - name: query
    match: { path: /q }
    upstream: ${up}
    token_in_query: true
  - name: form
    match: { path: /form }
    upstream: ${up}
    token_in_body: true
    max_body: 200b
  - name: svc
    match: { path: /svc }
    upstream: ${up}
    strip_prefix: true
  - name: cors
    match: { path: /cors }
    upstream: ${up}
    pass_preflight: true
  - name: open
    match: { path: /open }
    upstream: ${up}
    store_unavailable: open
  - name: api-host
    match: { path: /orders, host: api.example.com }
    upstream: ${up}
    realm: api
    scopes: { GET: ["api:read"] }
`
}

t.test('gateway', async (t) => {
  const gw: Harness = await startGateway({ routes })
  t.teardown(() => gw.close())
  const reached = (): number => gw.upstream.seen.length

  t.test('a valid token reaches the upstream with the identity and the judged path', async (t) => {
    const before = reached()
    const token = await gw.mint()
    const res = await gw.get('/orders/1?x=1', token)
    t.equal(res.status, 200)
    t.equal(reached(), before + 1)
    const seen = gw.upstream.seen.at(-1)
    t.equal(seen?.url, '/orders/1?x=1')
    t.equal(seen?.headers['x-auth-subject'], 'alice')
    t.equal(seen?.headers['x-auth-client-id'], 'web')
    t.equal(seen?.headers.authorization, undefined, 'the token is not forwarded by default')
  })

  t.test('no token: 401 with a bare challenge', async (t) => {
    const res = await gw.send('/orders')
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], `Bearer realm="bearward"${ORDERS_GET}` + ACCEPTS_DPOP)
  })

  t.test('another scheme (Basic) is no bearer token: 401 bare challenge', async (t) => {
    const res = await gw.send('/orders', { headers: { authorization: 'Basic d2ViOnNlY3JldA==' } })
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], `Bearer realm="bearward"${ORDERS_GET}` + ACCEPTS_DPOP)
  })

  t.test('lowercase `bearer` is accepted', async (t) => {
    const token = await gw.mint()
    const res = await gw.send('/orders', { headers: { authorization: `bearer ${token}` } })
    t.equal(res.status, 200)
  })

  t.test('a Bearer value outside the b64token grammar is 400 invalid_request', async (t) => {
    for (const value of ['Bearer abc$def', 'Bearer', 'Bearer a b', 'Bearer ab=c', 'Bearer\tabc']) {
      const res = await gw.send('/orders', { headers: { authorization: value } })
      t.equal(res.status, 400, value)
      t.equal(res.json().error, 'invalid_request', value)
      t.match(res.headers['www-authenticate'], /error="invalid_request"/, value)
    }
  })

  t.test('a repeated Authorization header is 400', async (t) => {
    const token = await gw.mint()
    const res = await gw.send('/orders', { headers: { authorization: [`Bearer ${token}`, `Bearer ${token}`] } })
    t.equal(res.status, 400)
  })

  t.test('alg none is refused', async (t) => {
    const token = `${b64url({ alg: 'none', typ: 'at+jwt', kid: gw.key.kid })}.${b64url({ iss: PUBLIC_URL, aud: PUBLIC_URL, exp: 2e9, scope: 'orders:read' })}.`
    const res = await gw.get('/orders', token)
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], INVALID)
  })

  t.test('HS256 with the public key as the HMAC secret is refused (PEM and JWK forms)', async (t) => {
    const rsa = await newKey('RS256', 'rsa-1')
    const gwRsa = await startGateway({ routes, keys: [rsa] })
    t.teardown(() => gwRsa.close())
    t.equal((await gwRsa.get('/orders', await gwRsa.mint())).status, 200, 'the RS256 key itself works')
    const now = Math.floor(gwRsa.clock.now() / 1000)
    const payload = b64url({ iss: PUBLIC_URL, aud: PUBLIC_URL, exp: now + 600, scope: 'orders:read', sub: 'mallory' })
    const secrets = [await exportSPKI(rsa.publicKey), JSON.stringify(await exportJWK(rsa.publicKey)), JSON.stringify(rsa.publicJwk)]
    for (const secret of secrets) {
      const input = `${b64url({ alg: 'HS256', typ: 'at+jwt', kid: rsa.kid })}.${payload}`
      const token = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`
      const res = await gwRsa.get('/orders', token)
      t.equal(res.status, 401)
      t.equal(res.headers['www-authenticate'], INVALID)
    }
  })

  t.test('a kid that is a path or a URL is just an unknown kid', async (t) => {
    for (const kid of ['../../../../etc/passwd', 'https://evil.example/jwks.json', `../${gw.key.kid}`]) {
      const res = await gw.get('/orders', await gw.mint({ header: { kid } }))
      t.equal(res.status, 401, kid)
      t.equal(res.headers['www-authenticate'], INVALID)
    }
  })

  t.test('jku / jwk / x5u headers are never followed', async (t) => {
    let fetched = 0
    const attacker = await newKey('ES256', 'attacker')
    const evil = createServer((_req, res) => {
      fetched++
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ keys: [attacker.publicJwk] }))
    })
    const evilAt = await listen(evil)
    t.teardown(() => new Promise<void>((resolve) => evil.close(() => resolve())))
    const jku = `${evilAt.url}/jwks.json`
    const cases = [
      { key: attacker, header: { jku, kid: 'attacker' } },
      { key: attacker, header: { jku, kid: gw.key.kid } },
      { key: attacker, header: { jwk: attacker.publicJwk } },
      { key: attacker, header: { x5u: jku } },
      // Even signed by the trusted key, a token pointing elsewhere is refused.
      { key: gw.key, header: { jku } },
    ]
    for (const c of cases) {
      const res = await gw.get('/orders', await gw.mint(c))
      t.equal(res.status, 401)
      t.equal(res.headers['www-authenticate'], INVALID)
    }
    t.equal(fetched, 0, 'the jku server received no request')
  })

  t.test('an unknown crit header is refused', async (t) => {
    const now = Math.floor(gw.clock.now() / 1000)
    const payload = new TextEncoder().encode(JSON.stringify({ iss: PUBLIC_URL, aud: PUBLIC_URL, exp: now + 600, scope: 'orders:read' }))
    const token = await new CompactSign(payload)
      .setProtectedHeader({ alg: gw.key.alg, kid: gw.key.kid, typ: 'at+jwt', crit: ['exp-policy'], 'exp-policy': 1 })
      .sign(gw.key.privateKey, { crit: { 'exp-policy': true } })
    const res = await gw.get('/orders', token)
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], INVALID)
  })

  t.test('an ID token (typ JWT) is not an access token', async (t) => {
    for (const typ of ['JWT', undefined]) {
      const res = await gw.get('/orders', await gw.mint({ header: { typ } }))
      t.equal(res.status, 401, String(typ))
      t.equal(res.headers['www-authenticate'], INVALID)
    }
    t.equal((await gw.get('/orders', await gw.mint({ header: { typ: 'application/AT+JWT' } }))).status, 200, 'application/at+jwt in any case is fine')
  })

  t.test('an untrusted issuer is refused', async (t) => {
    const other = await newKey('ES256', 'other')
    t.equal((await gw.get('/orders', await gw.mint({ iss: 'https://evil.example' }))).status, 401, 'our key, another iss')
    t.equal((await gw.get('/orders', await gw.mint({ key: other, iss: 'https://evil.example' }))).status, 401, 'their key, their iss')
    t.equal((await gw.get('/orders', await gw.mint({ key: other, header: { kid: gw.key.kid } }))).status, 401, 'their key, our kid')
  })

  t.test('a wrong audience is refused', async (t) => {
    const res = await gw.get('/orders', await gw.mint({ aud: 'https://other-api.example' }))
    t.equal(res.status, 401)
    t.equal((await gw.get('/orders', await gw.mint({ aud: ['https://other-api.example', PUBLIC_URL] }))).status, 200, 'aud containing ours is fine')
  })

  t.test('exp: past the skew is refused, within it accepted', async (t) => {
    const late = await gw.get('/orders', await gw.mint({ expIn: -31 }))
    t.equal(late.status, 401)
    t.equal(late.headers['www-authenticate'], EXPIRED)
    t.equal((await gw.get('/orders', await gw.mint({ expIn: -20 }))).status, 200)
  })

  t.test('a token without exp is refused', async (t) => {
    const now = Math.floor(gw.clock.now() / 1000)
    const token = await new SignJWT({ scope: 'orders:read' })
      .setProtectedHeader({ alg: gw.key.alg, kid: gw.key.kid, typ: 'at+jwt' })
      .setIssuer(PUBLIC_URL)
      .setAudience(PUBLIC_URL)
      .setIssuedAt(now)
      .sign(gw.key.privateKey)
    t.equal((await gw.get('/orders', token)).status, 401)
  })

  t.test('nbf in the future is refused', async (t) => {
    const now = Math.floor(gw.clock.now() / 1000)
    t.equal((await gw.get('/orders', await gw.mint({ claims: { nbf: now + 120 } }))).status, 401)
    t.equal((await gw.get('/orders', await gw.mint({ claims: { nbf: now + 10 } }))).status, 200, 'within the skew')
  })

  t.test('a valid signature over an altered payload is refused', async (t) => {
    const [header, payload, signature] = (await gw.mint()).split('.') as [string, string, string]
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
    const altered = b64url({ ...claims, scope: 'orders:read admin', sub: 'root' })
    const res = await gw.get('/admin', `${header}.${altered}.${signature}`)
    t.equal(res.status, 401)
    t.equal(
      res.headers['www-authenticate'],
      'Bearer realm="bearward", error="invalid_token", error_description="The access token is invalid", scope="admin", resource_metadata="http://gw.test/.well-known/oauth-protected-resource/admin"' +
        ACCEPTS_DPOP,
    )
  })

  t.test('2 and 4 segments are 400 invalid_request', async (t) => {
    const [h, p, s] = (await gw.mint()).split('.') as [string, string, string]
    for (const token of [`${h}.${p}`, `${h}.${p}.${s}.${s}`, 'opaque-token']) {
      const res = await gw.get('/orders', token)
      t.equal(res.status, 400, token.slice(0, 10))
      t.equal(res.json().error, 'invalid_request')
    }
  })

  t.test('insufficient scope: 403 with the scope attribute', async (t) => {
    const token = await gw.mint({ scope: 'orders:read' })
    const admin = await gw.get('/admin', token)
    t.equal(admin.status, 403)
    t.equal(
      admin.headers['www-authenticate'],
      'Bearer realm="bearward", error="insufficient_scope", error_description="The access token does not grant the scope this request needs", scope="admin", resource_metadata="http://gw.test/.well-known/oauth-protected-resource/admin"' +
        ACCEPTS_DPOP,
    )
    const post = await gw.send('/orders', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    t.equal(post.status, 403)
    t.match(post.headers['www-authenticate'], /scope="orders:write"/)
    t.equal((await gw.get('/admin', await gw.mint({ scope: 'admin other' }))).status, 200)
    const head = await gw.send('/orders', { method: 'HEAD', headers: { authorization: `Bearer ${await gw.mint({ scope: 'profile' })}` } })
    t.equal(head.status, 403, "HEAD without a rule of its own needs GET's scopes")
    // Our own tokens always carry `scope` (src/tokens/own-access-token.ts); `scp` is read for other issuers (jwks-client.test.ts).
    t.equal(
      (await gw.get('/orders', await gw.mint({ scope: undefined, claims: { scope: undefined, scp: ['orders:read'] } }))).status,
      401,
      'our issuer without scope: refused',
    )
  })

  t.test('a route method list: other methods get 405 with Allow', async (t) => {
    const res = await gw.send('/admin', { method: 'DELETE' })
    t.equal(res.status, 405)
    t.equal(res.headers.allow, 'GET, PUT')
  })

  t.test('no route: not ours (404), fail closed', async (t) => {
    t.equal((await gw.send('/nothing')).status, 404)
    t.equal((await gw.send('/ordersx')).status, 404, 'prefixes match on segment boundaries')
  })

  t.test('host-specific route wins over any-host for its host', async (t) => {
    const token = await gw.mint({ scope: 'orders:read' })
    const res = await gw.get('/orders', token, { host: 'API.Example.com:8443' })
    t.equal(res.status, 403, 'the api-host route needs api:read')
    t.equal(res.headers['www-authenticate']?.startsWith('Bearer realm="api"'), true, 'with that route realm')
    t.equal((await gw.get('/orders', await gw.mint({ scope: 'api:read' }), { host: 'api.example.com' })).status, 200)
    t.equal((await gw.get('/orders', token, { host: 'other.example.com' })).status, 200, 'another host takes the any-host route')
  })

  t.test('public routes need no token and never inspect one', async (t) => {
    t.equal((await gw.send('/docs/readme')).status, 200)
    t.equal((await gw.send('/docs', { headers: { authorization: 'Bearer not.a.valid.token' } })).status, 200)
  })

  t.test('token in the query only where allowed, removed from the forwarded query', async (t) => {
    const token = await gw.mint()
    const res = await gw.send(`/q/items?a=1&access_token=${token}&b=2`)
    t.equal(res.status, 200)
    t.equal(gw.upstream.seen.at(-1)?.url, '/q/items?a=1&b=2')
    const refused = await gw.send(`/orders?access_token=${token}`)
    t.equal(refused.status, 400, 'refused (not ignored and forwarded) on a route that does not allow it')
    t.match(refused.headers['www-authenticate'], /error="invalid_request"/)
    const headerAndQuery = await gw.send(`/orders?access_token=${token}`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(headerAndQuery.status, 400, 'header and query at once: invalid_request even where the query is not enabled')
    t.equal(
      (await gw.send(`/orders?xaccess_tokens=1`, { headers: { authorization: `Bearer ${token}` } })).status,
      200,
      'a parameter merely containing the name is fine',
    )
    const both = await gw.send(`/q?access_token=${token}`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(both.status, 400, 'header and query')
    t.equal(both.json().error, 'invalid_request')
    t.equal((await gw.send(`/q?access_token=${token}&access_token=${token}`)).status, 400, 'repeated in the query')
  })

  t.test('token in a form body where allowed; the body is forwarded without it', async (t) => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    // This route has max_body: 200b: a bigger form is refused before any token is looked for.
    const tooBig = await gw.send('/form', { method: 'POST', headers: form, body: 'x'.repeat(201) })
    t.equal(tooBig.status, 413)
    const gwBig = await startGateway({
      routes: (up) => `
  - name: form
    match: { path: /form }
    upstream: ${up}
    token_in_body: true
`,
    })
    t.teardown(() => gwBig.close())
    const token2 = await gwBig.mint()
    const body2 = `note=hello+world&access_token=${token2}`
    const ok = await gwBig.send('/form', { method: 'POST', headers: form, body: body2 })
    t.equal(ok.status, 200)
    t.equal(gwBig.upstream.seen.at(-1)?.body, 'note=hello+world', 'the other fields as sent, the token taken out (issue #38)')
    const both = await gwBig.send('/form', { method: 'POST', headers: { ...form, authorization: `Bearer ${token2}` }, body: body2 })
    t.equal(both.status, 400, 'header and body')
    const json = await gwBig.send('/form', { method: 'POST', headers: { 'content-type': 'application/json' }, body: body2 })
    t.equal(json.status, 401, 'a JSON body is not a form: no token found')
  })

  t.test('strip_prefix forwards the rest of the normalized path', async (t) => {
    const token = await gw.mint()
    t.equal((await gw.get('/svc/a//b/./c', token)).status, 200)
    t.equal(gw.upstream.seen.at(-1)?.url, '/a/b/c')
    t.equal((await gw.get('/svc', token)).status, 200)
    t.equal(gw.upstream.seen.at(-1)?.url, '/')
  })

  t.test('CORS preflight passes without a token only where pass_preflight', async (t) => {
    const preflight = { origin: 'https://app.example', 'access-control-request-method': 'GET' }
    const before = reached()
    t.equal((await gw.send('/cors/x', { method: 'OPTIONS', headers: preflight })).status, 200)
    t.equal(reached(), before + 1)
    t.equal(gw.upstream.seen.at(-1)?.method, 'OPTIONS')
    t.equal((await gw.send('/orders', { method: 'OPTIONS', headers: preflight })).status, 401, 'elsewhere a preflight needs a token')
    t.equal((await gw.send('/cors/x', { method: 'OPTIONS', headers: { origin: 'https://app.example' } })).status, 401, 'a plain OPTIONS is not a preflight')
  })

  t.test('revocation is checked on every request, cache hit or not', async (t) => {
    const jti = 'jti-to-revoke'
    const token = await gw.mint({ claims: { jti } })
    t.equal((await gw.get('/orders', token)).status, 200, 'validated and cached')
    const exp = Math.floor(gw.clock.now() / 1000) + 600
    await gw.store.revocations.add({ kind: 'jti', id: jti, exp })
    const res = await gw.get('/orders', token)
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], REVOKED)

    const grant = await gw.mint({ claims: { grant_id: 'grant-7' } })
    t.equal((await gw.get('/orders', grant)).status, 200)
    await gw.store.revocations.add({ kind: 'grant', id: 'grant-7', exp })
    t.equal((await gw.get('/orders', grant)).status, 401, 'revoked grant')
  })

  t.test('a refused token is logged with its reason at debug level, never with the token', async (t) => {
    const token = await gw.mint({ expIn: -600 })
    const before = gw.logs.length
    t.equal((await gw.get('/orders', token)).status, 401)
    const line = gw.logs
      .slice(before)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request refused')
    t.match(line, { level: 20, status: 401, error: 'invalid_token' }, 'logged at debug')
    t.type(line?.cause, 'string', 'with the reason')
    t.equal(line?.code, 'ERR_ACCESS_TOKEN_EXPIRED', 'and the class code')
    t.notOk(
      gw.logs.slice(before).some((l) => l.includes(token)),
      'the token itself is not logged',
    )
  })

  t.test('a cached token still expires', async (t) => {
    const token = await gw.mint({ expIn: 60 })
    t.equal((await gw.get('/orders', token)).status, 200)
    gw.clock.advance(80_000)
    t.equal((await gw.get('/orders', token)).status, 200, 'within the skew')
    gw.clock.advance(20_000)
    const res = await gw.get('/orders', token)
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], EXPIRED)
  })

  t.test("Content-Length with Transfer-Encoding is refused (by Node's parser first)", async (t) => {
    const before = reached()
    const answer = await sendRaw(gw.url, smuggle(await gw.mint()))
    t.match(answer, /^HTTP\/1\.1 400 /)
    t.notMatch(answer, /HTTP\/1\.1 200 /)
    t.equal(reached(), before, 'nothing reached the upstream')
  })

  t.test('tokens never reach the log', async (t) => {
    const token = await gw.mint()
    await gw.get('/orders', token)
    await gw.get('/admin', token)
    await gw.get('/orders', token.slice(0, -3) + 'AAA')
    const leaked = gw.logs.filter((line) => line.includes(token.split('.')[2] as string))
    t.same(leaked, [])
  })

  t.test('validations are counted by result, one count per request', async (t) => {
    const m = gw.metrics.tokenValidations
    const valid = await gw.mint()
    const revoked = await gw.mint({ claims: { jti: 'jti-counted-as-revoked' } })
    await gw.store.revocations.add({ kind: 'jti', id: 'jti-counted-as-revoked', exp: Math.floor(gw.clock.now() / 1000) + 600 })
    const cases: Array<[string, () => Promise<{ status: number }>, number]> = [
      ['valid', async () => gw.get('/orders', valid), 200],
      ['missing', async () => gw.send('/orders'), 401],
      ['invalid', async () => gw.get('/orders', valid.slice(0, -3) + 'AAA'), 401],
      ['expired', async () => gw.get('/orders', await gw.mint({ expIn: -31 })), 401],
      ['revoked', async () => gw.get('/orders', revoked), 401],
      ['insufficient_scope', async () => gw.get('/admin', await gw.mint({ scope: 'orders:read' })), 403],
      ['malformed', async () => gw.get('/orders', 'not-a-jwt'), 400],
    ]
    for (const [result, request, status] of cases) {
      const before = m.get({ result })
      t.equal((await request()).status, status, `${result}: ${status}`)
      t.equal(m.get({ result }) - before, 1, `${result}: counted once`)
    }
  })

  t.test('store unreachable: closed routes answer 503, open routes allow and warn once', async (t) => {
    const token = await gw.mint({ scope: 'orders:read' })
    await gw.store.close()
    await gw.revocations.resync()
    t.equal(gw.revocations.healthy, false)
    const closed = await gw.get('/orders', token)
    t.equal(closed.status, 503)
    t.equal(closed.json().error, 'temporarily_unavailable')
    t.equal((await gw.get('/open', token)).status, 200)
    t.equal((await gw.get('/open', token)).status, 200)
    const warnings = gw.logs.filter((l) => l.includes('store_unavailable: open'))
    t.equal(warnings.length, 1, 'the warning is rate-limited')
  })
})

t.test('Content-Length with Transfer-Encoding is refused by the gateway when the parser is lenient', async (t) => {
  const gw = await startGateway({ routes, insecureHTTPParser: true })
  t.teardown(() => gw.close())
  const answer = await sendRaw(gw.url, smuggle(await gw.mint()))
  t.match(answer, /^HTTP\/1\.1 400 /)
  t.match(answer, /"error":"invalid_request"/, 'the gateway itself answered')
  t.notMatch(answer, /HTTP\/1\.1 200 /)
  t.equal(gw.upstream.seen.length, 0, 'nothing reached the upstream')
})

t.test('WebSocket upgrades get the same checks', async (t) => {
  const seen: string[] = []
  const wsUpstream = createServer((_req, res) => res.end())
  wsUpstream.on('upgrade', (req, socket) => {
    seen.push(req.url ?? '')
    const accept = createHash('sha1')
      .update(`${String(req.headers['sec-websocket-key'])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64')
    socket.end(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
  })
  const wsUpstreamAt = await listen(wsUpstream)
  t.teardown(() => new Promise<void>((resolve) => wsUpstream.close(() => resolve())))
  const wsUrl = wsUpstreamAt.url
  const gw = await startGateway({
    routes: () => `
  - name: chat
    match: { path: /chat }
    upstream: ${wsUrl}
    token_in_query: true
    scopes: { GET: [chat] }
`,
  })
  t.teardown(() => gw.close())
  const upgrade = (target: string, extra = ''): string =>
    `GET ${target} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`

  const missing = await sendRaw(gw.url, upgrade('/chat/room'))
  t.match(missing, /^HTTP\/1\.1 401 /)
  t.match(
    missing,
    /www-authenticate: Bearer realm="bearward", scope="chat", resource_metadata="http:\/\/gw.test\/.well-known\/oauth-protected-resource\/chat", DPoP algs="[^"]+"\r\n/i,
  )

  const narrow = await sendRaw(gw.url, upgrade('/chat/room', `Authorization: Bearer ${await gw.mint({ scope: 'other' })}\r\n`))
  t.match(narrow, /^HTTP\/1\.1 403 /)
  t.match(narrow, /scope="chat"/)

  t.equal(seen.length, 0, 'refused upgrades never reach the upstream')
  const ok = await sendRaw(gw.url, upgrade(`/chat/../chat/room?access_token=${await gw.mint({ scope: 'chat' })}&v=1`))
  t.match(ok, /^HTTP\/1\.1 101 /)
  t.same(seen, ['/chat/room?v=1'], 'the upstream sees the normalized path, without the query token')
  t.match(await sendRaw(gw.url, upgrade('/elsewhere')), /^HTTP\/1\.1 404 /)
})

t.test('mint helper sanity: tokens of the fixture are JWT access tokens', async (t) => {
  const key = await newKey()
  const token = await mint(new (await import('../../src/clock.js')).ManualClock(), { key })
  const header = JSON.parse(Buffer.from(token.split('.')[0] as string, 'base64url').toString('utf8')) as Record<string, unknown>
  t.equal(header.typ, 'at+jwt')
})
