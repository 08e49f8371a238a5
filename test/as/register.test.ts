/**
 * RFC 7591 dynamic client registration and RFC 7592 read/delete: what a
 * client gets back, what the store keeps (hashes only), the error codes for
 * each refused metadata, the initial access token, the per-address limit,
 * client_ttl, and that a registered client is found by every endpoint
 * through the one client lookup.
 */
import t from 'tap'
import { issueIdToken } from '../../src/as/issue.js'
import { hashToken } from '../../src/store/hash.js'
import { codeParams, mintCode, send, startAs, type Harness, type Reply } from '../helpers/as-back.js'
import { authorizeUrl, authParams, loggedIn, frontYaml, parseForms, startFront, pkce as frontPkce } from '../helpers/as-front.js'
import { basic } from '../helpers/client-auth.js'
import { postForm, reply } from '../helpers/http.js'

/** The `registration` section under authorization_server, with what a test changes. */
function registration(extra = '', rateLimit = 'per_address: 1000, window: 1h'): string {
  return `  registration: { enabled: true, scopes: [orders:read, orders:write], client_ttl: 1h, rate_limit: { ${rateLimit} }${extra} }`
}

const PUBLIC_CLIENT = {
  client_name: 'Desk Tool',
  redirect_uris: ['http://127.0.0.1:33418/callback'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  scope: 'orders:read',
}

function register(h: Harness, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return send(`${h.url}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

t.test('registration is off by default: no endpoint, no metadata entry', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  t.equal((await register(h, PUBLIC_CLIENT)).status, 404)
  const meta = await send(`${h.url}/.well-known/oauth-authorization-server`)
  t.equal(meta.json?.registration_endpoint, undefined)
})

t.test('dynamic registration', async (t) => {
  const h = await startAs({ asExtra: registration() })
  t.teardown(() => h.close())

  t.test('the metadata names the endpoint', async (t) => {
    const meta = await send(`${h.url}/.well-known/oauth-authorization-server`)
    t.equal(meta.json?.registration_endpoint, `${h.url}/register`)
  })

  t.test('a public client: 201 with its metadata; the store keeps hashes only', async (t) => {
    const res = await register(h, { ...PUBLIC_CLIENT, unknown_member: 'ignored' })
    t.equal(res.status, 201)
    t.equal(res.headers.get('cache-control'), 'no-store')
    const body = res.json ?? {}
    const id = String(body.client_id)
    t.match(body, {
      client_id: /^[A-Za-z0-9_-]{22}$/,
      client_id_issued_at: Math.floor(h.clock.now() / 1000),
      registration_access_token: /^[A-Za-z0-9_-]{43}$/,
      registration_client_uri: `${h.url}/register?client_id=${encodeURIComponent(id)}`,
      client_name: 'Desk Tool',
      redirect_uris: ['http://127.0.0.1:33418/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'orders:read',
    })
    t.equal(body.client_secret, undefined, 'a public client has no secret')
    t.equal(body.unknown_member, undefined, 'unknown members are ignored (RFC 7591 2)')
    const stored = await h.store.clients.get(id)
    t.equal(stored?.registrationTokenHash, hashToken(String(body.registration_access_token)))
    t.notMatch(JSON.stringify(stored), String(body.registration_access_token), 'the token itself is not stored')

    // The one client lookup: /token finds it (a code issued to it redeems).
    const m = await mintCode(h, {
      clientId: id,
      redirectUri: PUBLIC_CLIENT.redirect_uris[0],
      effectiveRedirectUri: PUBLIC_CLIENT.redirect_uris[0],
      scope: 'orders:read',
    })
    const tok = await reply(postForm(`${h.url}/token`, { ...codeParams(m), client_id: id }))
    t.equal(tok.status, 200, tok.text)
    t.type(tok.json?.refresh_token, 'string')
  })

  t.test('a confidential client gets a secret once; only its scrypt hash is kept', async (t) => {
    const res = await register(h, { redirect_uris: ['https://tool.example.com/cb'], token_endpoint_auth_method: 'client_secret_basic' })
    t.equal(res.status, 201)
    const id = String(res.json?.client_id)
    const secret = String(res.json?.client_secret)
    t.match(secret, /^[A-Za-z0-9_-]{43}$/)
    t.equal(res.json?.client_secret_expires_at, 0)
    t.same(res.json?.grant_types, ['authorization_code'], 'RFC 7591 2 default grant')
    const stored = await h.store.clients.get(id)
    t.match(stored?.secretHash, /^scrypt\$/)
    t.notMatch(JSON.stringify(stored), secret)
    const m = await mintCode(h, {
      clientId: id,
      redirectUri: 'https://tool.example.com/cb',
      effectiveRedirectUri: 'https://tool.example.com/cb',
      scope: 'orders:read',
    })
    const basicAuth = (s: string): string => basic(id, s)
    t.equal((await reply(postForm(`${h.url}/token`, codeParams(m), { authorization: basicAuth('wrong') }))).status, 401, 'a wrong secret is invalid_client')
    const ok = await reply(postForm(`${h.url}/token`, codeParams(m), { authorization: basicAuth(secret) }))
    t.equal(ok.status, 200, ok.text)
    t.equal(ok.json?.refresh_token, undefined, 'no refresh_token grant registered: no refresh token')
  })

  t.test('redirect URIs: https, loopback http on any port, private-use schemes; nothing else', async (t) => {
    const accepted = [
      'https://a.example.com/cb',
      'http://127.0.0.1:1/cb',
      'http://[::1]:65000/cb',
      'http://localhost:8080/cb',
      'com.example.app:/oauth2redirect',
    ]
    for (const uri of accepted) {
      const res = await register(h, { ...PUBLIC_CLIENT, redirect_uris: [uri] })
      t.equal(res.status, 201, uri)
    }
    const refused: Array<[string, RegExp]> = [
      ['http://app.example.com/cb', /loopback host/],
      ['javascript:alert(1)', /cannot be a redirect URI/],
      ['data:text/html,hi', /cannot be a redirect URI/],
      ['https://a.example.com/cb#frag', /fragment/],
      ['https://user:pw@a.example.com/cb', /credentials/],
      ['myapp:/cb', /reversed domain name/],
      ['/relative/cb', /absolute URI/],
    ]
    for (const [uri, why] of refused) {
      const res = await register(h, { ...PUBLIC_CLIENT, redirect_uris: [uri] })
      t.equal(res.status, 400, uri)
      t.equal(res.json?.error, 'invalid_redirect_uri', uri)
      t.match(res.json?.error_description, why, uri)
    }
    t.equal((await register(h, { ...PUBLIC_CLIENT, redirect_uris: [] })).json?.error, 'invalid_redirect_uri')
  })

  t.test('other metadata the server will not accept: invalid_client_metadata', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['a scope outside registration.scopes', { ...PUBLIC_CLIENT, scope: 'orders:read admin' }],
      ['the client_credentials grant', { ...PUBLIC_CLIENT, grant_types: ['client_credentials'] }],
      ['the implicit response type', { ...PUBLIC_CLIENT, response_types: ['token'] }],
      ['an unknown auth method', { ...PUBLIC_CLIENT, token_endpoint_auth_method: 'private_key_jwt' }],
      ['an svg logo', { ...PUBLIC_CLIENT, logo_uri: 'data:image/svg+xml;base64,PHN2Zz4=' }],
      ['a javascript policy link', { ...PUBLIC_CLIENT, policy_uri: 'javascript:alert(1)' }],
      ['a name with control characters', { ...PUBLIC_CLIENT, client_name: 'Tool\u0007' }],
      ['an array', [PUBLIC_CLIENT]],
      ['not JSON', '{"redirect_uris":'],
    ]
    for (const [what, body] of cases) {
      const res = await register(h, body)
      t.equal(res.status, 400, what)
      t.equal(res.json?.error, 'invalid_client_metadata', what)
    }
    // The description names the scope at fault (issue #42), and what may be asked for.
    const scoped = await register(h, { ...PUBLIC_CLIENT, scope: 'orders:read admin' })
    t.match(scoped.json?.error_description, /scope `admin` is not one this server lets registered clients ask for; allowed: .*orders:read/)
    const wrongType = await send(`${h.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'redirect_uris=x',
    })
    t.equal(wrongType.json?.error, 'invalid_request')
  })

  t.test('RFC 7592: read and delete with the registration access token', async (t) => {
    const made = (await register(h, PUBLIC_CLIENT)).json ?? {}
    const uri = String(made.registration_client_uri)
    const rat = String(made.registration_access_token)
    const read = await send(uri, { headers: { authorization: `Bearer ${rat}` } })
    t.equal(read.status, 200)
    t.equal(read.json?.client_id, made.client_id)
    t.equal(read.json?.registration_access_token, undefined, 'the token is not shown again')
    const other = (await register(h, PUBLIC_CLIENT)).json ?? {}
    for (const [what, auth] of [
      ['no token', undefined],
      ['a wrong token', 'Bearer AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ["another client's token", `Bearer ${String(other.registration_access_token)}`],
    ] as const) {
      const res = await send(uri, { method: 'DELETE', headers: auth === undefined ? {} : { authorization: auth } })
      t.equal(res.status, 401, what)
      t.match(res.headers.get('www-authenticate'), /^Bearer /, what)
    }
    t.not(await h.store.clients.get(String(made.client_id)), null, 'the refused deletes changed nothing')
    const del = await send(uri, { method: 'DELETE', headers: { authorization: `Bearer ${rat}` } })
    t.equal(del.status, 204)
    t.equal(await h.store.clients.get(String(made.client_id)), null)
    t.equal((await send(uri, { headers: { authorization: `Bearer ${rat}` } })).status, 401, 'a deleted client is unknown')
    const tok = await reply(postForm(`${h.url}/token`, { grant_type: 'refresh_token', refresh_token: 'x', client_id: String(made.client_id) }))
    t.equal(tok.json?.error, 'invalid_client', 'and /token no longer knows it')
    t.equal((await send(uri, { method: 'PUT', headers: { authorization: `Bearer ${rat}` } })).status, 405)
  })

  t.test('client_ttl: an unused client is forgotten; use keeps it', async (t) => {
    const used = String((await register(h, PUBLIC_CLIENT)).json?.client_id)
    const unused = String((await register(h, PUBLIC_CLIENT)).json?.client_id)
    h.clock.advance(3000_000)
    const m = await mintCode(h, {
      clientId: used,
      redirectUri: PUBLIC_CLIENT.redirect_uris[0],
      effectiveRedirectUri: PUBLIC_CLIENT.redirect_uris[0],
      scope: 'orders:read',
    })
    t.equal((await reply(postForm(`${h.url}/token`, { ...codeParams(m), client_id: used }))).status, 200, 'used at 50 minutes')
    h.clock.advance(1000_000)
    t.equal(await h.store.clients.get(unused), null, 'unused for more than client_ttl: forgotten')
    t.not(await h.store.clients.get(used), null, 'the used one lives on')
  })
})

t.test('an initial access token closes registration to strangers', async (t) => {
  const h = await startAs({ asExtra: registration(', initial_access_token: reg-token-0123456789abcdef') })
  t.teardown(() => h.close())
  for (const [what, auth] of [
    ['none', undefined],
    ['wrong', 'Bearer reg-token-0123456789abcdeX'],
    ['not bearer', 'Basic cmVnOnRva2Vu'],
  ] as const) {
    const res = await register(h, PUBLIC_CLIENT, auth === undefined ? {} : { authorization: auth })
    t.equal(res.status, 401, what)
    t.equal(res.json?.error, 'invalid_token', what)
  }
  t.equal((await register(h, PUBLIC_CLIENT, { authorization: 'Bearer reg-token-0123456789abcdef' })).status, 201)
})

t.test('each address may register only so many clients per window', async (t) => {
  const h = await startAs({ asExtra: registration('', 'per_address: 3, window: 10m') })
  t.teardown(() => h.close())
  const statuses: number[] = []
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const res = await register(h, PUBLIC_CLIENT)
    statuses.push(res.status)
    if (res.status === 201) ids.push(String(res.json?.client_id))
    if (res.status === 429) t.equal(res.headers.get('retry-after'), '600')
  }
  t.same(statuses, [201, 201, 201, 429, 429])
  t.equal(ids.length, 3, 'the store holds three registrations, not five')
  h.clock.advance(600_000)
  t.equal((await register(h, PUBLIC_CLIENT)).status, 201, 'a new window')
})

t.test('consent: always shown for a registered client, saying it registered itself and where it sends the person', async (t) => {
  const front = await startFront(await frontYaml({ asExtra: '  registration: { enabled: true, scopes: ["orders:read"] }' }))
  t.teardown(() => front.close())
  const now = Math.floor(front.clock.now() / 1000)
  await front.store.clients.put({
    clientId: 'dyn-1',
    secretHash: null,
    registrationTokenHash: hashToken('x'),
    metadata: {
      client_name: 'Helpful Tool',
      redirect_uris: ['https://tool.example.net/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
    issuedAt: now,
    expiresAt: now + 3600,
  })
  const { browser } = await loggedIn(front)
  const url = (): string => {
    const { challenge } = frontPkce()
    return authorizeUrl(front, authParams({ client_id: 'dyn-1', redirect_uri: 'https://tool.example.net/cb', scope: 'orders:read', code_challenge: challenge }))
  }
  for (const round of ['first', 'after allowing once']) {
    const page = await browser.get(url())
    t.equal(page.status, 200, round)
    const html = await page.text()
    t.match(
      html,
      /<bdi>Helpful Tool<\/bdi> registered itself with this server; nobody here has checked who runs it\. If you allow, you will be sent to <code><bdi>tool\.example\.net<\/bdi><\/code>\./,
      round,
    )
    const form = parseForms(html, page.url).find((f) => f.buttons.some((b) => b.value === 'allow'))
    if (form === undefined) throw new Error('no consent form')
    const answer = await browser.submit(form, { decision: 'allow' })
    t.equal(answer.status, 302, round)
    t.match(answer.headers.get('location'), /^https:\/\/tool\.example\.net\/cb\?code=/, round)
  }
  const none = await browser.get(`${url()}&prompt=none`)
  t.match(none.headers.get('location'), /error=consent_required/, 'prompt=none cannot skip it either')
})

t.test('a registered client is named by the end-session endpoint, and sent back only with an id_token_hint issued to it', async (t) => {
  const h = await startAs({ asExtra: registration() })
  t.teardown(() => h.close())
  const bye = 'http://127.0.0.1:33418/bye'
  const reg = await register(h, { ...PUBLIC_CLIENT, post_logout_redirect_uris: [bye] })
  t.equal(reg.status, 201)
  const id = String(reg.json?.client_id)
  const hint = await issueIdToken(h.as, { sub: 'user-0001', clientId: id, scope: 'openid', authTime: null, nonce: null, accessToken: 'unused' })
  const logout = (params: Record<string, string>): Promise<Response> =>
    fetch(`${h.url}/logout?${new URLSearchParams({ client_id: id, state: 's-1', ...params })}`, { redirect: 'manual' })
  const bare = await logout({ post_logout_redirect_uri: bye })
  t.equal(bare.status, 400, 'without a hint its URI is not trusted (anyone could have registered it)')
  t.equal(bare.headers.get('location'), null)
  await bare.arrayBuffer()
  const ok = await logout({ post_logout_redirect_uri: bye, id_token_hint: hint })
  t.equal(ok.status, 303, 'no session to end: straight back to the client')
  t.equal(ok.headers.get('location'), `${bye}?state=s-1`, 'its registered post_logout_redirect_uri, with state')
  await ok.arrayBuffer()
  const other = await logout({ post_logout_redirect_uri: 'http://127.0.0.1:33418/elsewhere', id_token_hint: hint })
  t.equal(other.status, 400, 'a URI it did not register is refused')
  await other.arrayBuffer()
})
