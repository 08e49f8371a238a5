import t from 'tap'
import { DEMO_SECRET } from '../helpers/as-config.js'
import {
  ChallengeSyntaxError,
  NQSCHAR,
  WEB_REDIRECT_URI,
  basicAuth,
  parseChallenges,
  postForm,
  rawRequest,
  readErrorResponse,
  startConformanceServer,
  webLogin,
} from '../helpers/conformance.js'

/**
 * Error answers judged by their shape: RFC 6749 5.2 JSON bodies (`error`,
 * optional `error_description` in %x20-21 / %x23-5B / %x5D-7E) at /token,
 * /revoke and /introspect; RFC 6750 3 Bearer challenges at /userinfo and the
 * gateway; and every `WWW-Authenticate` parsed by a strict RFC 9110 11.6.1
 * parser (auth-scheme, comma-separated auth-params, quoted-string values).
 */

t.test('the strict WWW-Authenticate parser itself', async (t) => {
  t.same(parseChallenges('Bearer realm="bearward", error="invalid_token", error_description="The access token is invalid"'), [
    { scheme: 'Bearer', params: { realm: 'bearward', error: 'invalid_token', error_description: 'The access token is invalid' } },
  ])
  t.same(
    parseChallenges('Basic realm="a",Bearer realm="b" , scope="x y"'),
    [
      { scheme: 'Basic', params: { realm: 'a' } },
      { scheme: 'Bearer', params: { realm: 'b', scope: 'x y' } },
    ],
    'two challenges, OWS around commas',
  )
  t.same(parseChallenges('Bearer realm="a \\"q\\""'), [{ scheme: 'Bearer', params: { realm: 'a "q"' } }], 'quoted-pair')
  t.same(parseChallenges('Bearer realm="a",  '), [{ scheme: 'Bearer', params: { realm: 'a' } }], 'an empty list element is ignored (RFC 9110 5.6.1.2)')
  t.same(
    parseChallenges('Negotiate, Bearer realm="x"'),
    [
      { scheme: 'Negotiate', params: {} },
      { scheme: 'Bearer', params: { realm: 'x' } },
    ],
    'a scheme without params',
  )
  for (const bad of [
    '',
    'Bearer realm=bearward',
    'Bearer realm="a" error="b"',
    'Bearer realm="a", realm="b"',
    'Bearer abc==',
    'Bearer realm="unterminated',
    'Bearer  realm="a"x',
    'Bearer realm="tab\x01"',
    '"Bearer" realm="a"',
  ]) {
    t.throws(() => parseChallenges(bad), ChallengeSyntaxError, `refuses ${JSON.stringify(bad)}`)
  }
})

const server = await startConformanceServer()
t.teardown(server.close)

t.test('error responses of the authorization server and the gateway', async (t) => {
  const at = (path: string): string => `${server.issuer}${path}`
  const token = at('/token')
  const orders = `${server.origin}/orders/1`

  const user = await webLogin({ authorization_endpoint: at('/authorize'), token_endpoint: token }, 'openid profile orders:read')
  const cc = await postForm(token, { grant_type: 'client_credentials', scope: 'orders:read' }, basicAuth('service', DEMO_SECRET))
  const serviceToken = String(((await cc.json()) as { access_token: string }).access_token)
  const revoked = await webLogin({ authorization_endpoint: at('/authorize'), token_endpoint: token }, 'openid orders:read')
  t.equal((await postForm(at('/revoke'), { token: revoked.accessToken }, basicAuth('web', DEMO_SECRET))).status, 200, 'a token revoked for the cases below')

  const [h, p, sig] = user.accessToken.split('.') as [string, string, string]
  const badSignature = `${h}.${p}.${sig.slice(0, -2)}${sig.endsWith('AA') ? 'BB' : 'AA'}`
  const algNone = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`
  const bearer = (tok: string): Record<string, string> => ({ authorization: `Bearer ${tok}` })

  const start = await postForm(at('/device_authorization'), { client_id: 'cli', scope: 'orders:read' })
  const { device_code: deviceCode } = (await start.json()) as { device_code: string }
  const poll = (): Promise<Response> =>
    postForm(token, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: deviceCode, client_id: 'cli' })

  interface Case {
    name: string
    send: () => Promise<Response>
    status: number
    error: string | null
    scheme?: 'Basic' | 'Bearer'
  }
  const cases: Case[] = [
    // /token (RFC 6749 5.2)
    {
      name: 'token: no client authentication',
      send: () => postForm(token, { grant_type: 'client_credentials' }),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    {
      name: 'token: wrong Basic secret',
      send: () => postForm(token, { grant_type: 'client_credentials' }, basicAuth('service', 'wrong-secret')),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    {
      name: 'token: unknown client',
      send: () => postForm(token, { grant_type: 'client_credentials' }, basicAuth('nobody', 'x')),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    {
      name: 'token: Basic credentials not base64',
      send: () => postForm(token, { grant_type: 'client_credentials' }, { authorization: 'Basic !!!' }),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    {
      name: 'token: a Bearer header instead of client credentials',
      send: () => postForm(token, { grant_type: 'client_credentials' }, bearer(serviceToken)),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    {
      name: 'token: client_secret_post by a client registered for basic',
      send: () => postForm(token, { grant_type: 'client_credentials', client_id: 'service', client_secret: DEMO_SECRET }),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    {
      name: 'token: a public client sends a secret',
      send: () => postForm(token, { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'cli', client_secret: 'x' }),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    { name: 'token: no grant_type', send: () => postForm(token, {}, basicAuth('service', DEMO_SECRET)), status: 400, error: 'invalid_request' },
    {
      name: 'token: grant_type repeated',
      send: () =>
        fetch(token, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...basicAuth('service', DEMO_SECRET) },
          body: 'grant_type=client_credentials&grant_type=client_credentials',
        }),
      status: 400,
      error: 'invalid_request',
    },
    {
      name: 'token: JSON body instead of a form',
      send: () =>
        fetch(token, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...basicAuth('service', DEMO_SECRET) },
          body: '{"grant_type":"client_credentials"}',
        }),
      status: 400,
      error: 'invalid_request',
    },
    {
      name: 'token: unknown grant_type',
      send: () => postForm(token, { grant_type: 'urn:example:nope' }, basicAuth('service', DEMO_SECRET)),
      status: 400,
      error: 'unsupported_grant_type',
    },
    {
      name: 'token: password grant',
      send: () => postForm(token, { grant_type: 'password', username: 'alice', password: 'x' }, basicAuth('web', DEMO_SECRET)),
      status: 400,
      error: 'unsupported_grant_type',
    },
    {
      name: 'token: a code that does not exist',
      send: () =>
        postForm(
          token,
          { grant_type: 'authorization_code', code: 'nope', redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: 'a'.repeat(43) },
          basicAuth('web', DEMO_SECRET),
        ),
      status: 400,
      error: 'invalid_grant',
    },
    {
      name: 'token: an unknown refresh token',
      send: () => postForm(token, { grant_type: 'refresh_token', refresh_token: 'nope' }, basicAuth('web', DEMO_SECRET)),
      status: 400,
      error: 'invalid_grant',
    },
    {
      name: 'token: a grant the client is not registered for',
      send: () =>
        postForm(
          token,
          { grant_type: 'authorization_code', code: 'x', redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: 'a'.repeat(43) },
          basicAuth('service', DEMO_SECRET),
        ),
      status: 400,
      error: 'unauthorized_client',
    },
    {
      name: 'token: a scope the client may not have',
      send: () => postForm(token, { grant_type: 'client_credentials', scope: 'orders:write' }, basicAuth('service', DEMO_SECRET)),
      status: 400,
      error: 'invalid_scope',
    },
    { name: 'token: device code not yet approved', send: poll, status: 400, error: 'authorization_pending' },
    { name: 'token: device polled faster than the interval', send: poll, status: 400, error: 'slow_down' },
    { name: 'token: GET', send: () => fetch(token), status: 405, error: 'method_not_allowed' },
    // /revoke (RFC 7009 2.2.1) and /introspect (RFC 7662 2.3)
    {
      name: 'revoke: wrong secret',
      send: () => postForm(at('/revoke'), { token: 'x' }, basicAuth('web', 'wrong-secret')),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    { name: 'revoke: no token parameter', send: () => postForm(at('/revoke'), {}, basicAuth('web', DEMO_SECRET)), status: 400, error: 'invalid_request' },
    {
      name: 'introspect: no client authentication',
      send: () => postForm(at('/introspect'), { token: 'x' }),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    {
      name: 'introspect: a public client',
      send: () => postForm(at('/introspect'), { token: 'x', client_id: 'cli' }),
      status: 401,
      error: 'invalid_client',
      scheme: 'Basic',
    },
    // /userinfo (OIDC Core 5.3.3, RFC 6750 3.1)
    { name: 'userinfo: no token', send: () => fetch(at('/userinfo')), status: 401, error: null },
    {
      name: 'userinfo: Basic credentials are not a bearer token',
      send: () => fetch(at('/userinfo'), { headers: basicAuth('web', DEMO_SECRET) }),
      status: 401,
      error: null,
    },
    { name: 'userinfo: unknown token', send: () => fetch(at('/userinfo'), { headers: bearer('abc') }), status: 401, error: 'invalid_token' },
    { name: 'userinfo: bad signature', send: () => fetch(at('/userinfo'), { headers: bearer(badSignature) }), status: 401, error: 'invalid_token' },
    { name: 'userinfo: alg none', send: () => fetch(at('/userinfo'), { headers: bearer(algNone) }), status: 401, error: 'invalid_token' },
    { name: 'userinfo: revoked token', send: () => fetch(at('/userinfo'), { headers: bearer(revoked.accessToken) }), status: 401, error: 'invalid_token' },
    { name: 'userinfo: token without openid', send: () => fetch(at('/userinfo'), { headers: bearer(serviceToken) }), status: 403, error: 'insufficient_scope' },
    {
      name: 'userinfo: token in header and body',
      send: () => postForm(at('/userinfo'), { access_token: user.accessToken }, bearer(user.accessToken)),
      status: 400,
      error: 'invalid_request',
      scheme: 'Bearer',
    },
    // the gateway (RFC 6750 3.1, SPEC "JWT access-token validation order")
    { name: 'gateway: no token', send: () => fetch(orders), status: 401, error: null },
    { name: 'gateway: not three segments', send: () => fetch(orders, { headers: bearer('abc') }), status: 400, error: 'invalid_request', scheme: 'Bearer' },
    { name: 'gateway: bad signature', send: () => fetch(orders, { headers: bearer(badSignature) }), status: 401, error: 'invalid_token' },
    { name: 'gateway: alg none', send: () => fetch(orders, { headers: bearer(algNone) }), status: 401, error: 'invalid_token' },
    { name: 'gateway: revoked token', send: () => fetch(orders, { headers: bearer(revoked.accessToken) }), status: 401, error: 'invalid_token' },
    {
      name: 'gateway: scope too narrow',
      send: () => fetch(orders, { method: 'POST', headers: bearer(user.accessToken) }),
      status: 403,
      error: 'insufficient_scope',
    },
    {
      name: 'gateway: token in the query string',
      send: () => fetch(`${orders}?access_token=${user.accessToken}`),
      status: 400,
      error: 'invalid_request',
      scheme: 'Bearer',
    },
    {
      name: 'gateway: Bearer credentials outside the b64token grammar',
      send: () => fetch(orders, { headers: { authorization: 'Bearer a b' } }),
      status: 400,
      error: 'invalid_request',
      scheme: 'Bearer',
    },
    {
      name: 'gateway: Authorization header repeated',
      send: () => rawRequest(orders, 'GET', { authorization: [`Bearer ${user.accessToken}`, `Bearer ${serviceToken}`] }),
      status: 400,
      error: 'invalid_request',
      scheme: 'Bearer',
    },
  ]

  for (const c of cases) {
    const r = await readErrorResponse(await c.send(), { status: c.status, error: c.error, ...(c.scheme ? { scheme: c.scheme } : {}) })
    // The raw answer goes into the message only when something is wrong, so a failure shows exactly what was sent.
    const detail = r.problems.length === 0 ? '' : ` -> ${r.status} ${String(r.headers.get('www-authenticate'))} ${r.rawBody}`
    t.same(r.problems, [], `${c.name}${detail}`)
    if (c.status === 403 && c.error === 'insufficient_scope') {
      const scope = r.challenges?.find((x) => x.scheme.toLowerCase() === 'bearer')?.params.scope
      t.ok(scope !== undefined && scope !== '', `${c.name}: the challenge names the scope needed (RFC 6750 3)`)
    }
    if (c.status === 401 && c.scheme !== 'Basic') {
      t.equal(r.challenges?.[0]?.params.realm, 'bearward', `${c.name}: realm`)
    }
  }
})

t.test('authorization endpoint errors go back to the client in the RFC 6749 4.1.2.1 shape', async (t) => {
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
  const base = {
    response_type: 'code',
    client_id: 'web',
    redirect_uri: WEB_REDIRECT_URI,
    scope: 'openid',
    state: 'st-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }
  const { code_challenge: _c, code_challenge_method: _m, ...withoutPkce } = base
  const cases: Array<{ name: string; query: string; error: string }> = [
    { name: 'unsupported response type', query: new URLSearchParams({ ...base, response_type: 'token' }).toString(), error: 'unsupported_response_type' },
    { name: 'unknown scope', query: new URLSearchParams({ ...base, scope: 'openid bogus' }).toString(), error: 'invalid_scope' },
    { name: 'repeated parameter', query: `${new URLSearchParams(base)}&scope=openid`, error: 'invalid_request' },
    { name: 'no PKCE', query: new URLSearchParams(withoutPkce).toString(), error: 'invalid_request' },
    { name: 'prompt=none without a session', query: new URLSearchParams({ ...base, prompt: 'none' }).toString(), error: 'login_required' },
  ]
  for (const c of cases) {
    const res = await fetch(`${server.issuer}/authorize?${c.query}`, { redirect: 'manual' })
    await res.arrayBuffer()
    t.equal(res.status, 302, `${c.name}: redirected`)
    const to = new URL(res.headers.get('location') ?? '', server.issuer)
    const p = to.searchParams
    const problems: string[] = []
    if (to.origin + to.pathname !== WEB_REDIRECT_URI) problems.push(`sent to ${to.origin + to.pathname}`)
    if (p.get('error') !== c.error) problems.push(`error ${String(p.get('error'))}`)
    if (!NQSCHAR.test(p.get('error_description') ?? '')) problems.push(`error_description ${JSON.stringify(p.get('error_description'))} outside NQSCHAR`)
    if (p.get('state') !== base.state) problems.push('state not echoed')
    if (p.get('iss') !== server.issuer) problems.push(`iss ${String(p.get('iss'))} (RFC 9207 2)`)
    if (p.has('code')) problems.push('a code beside an error')
    if (p.getAll('error').length !== 1) problems.push('error repeated')
    t.same(problems, [], `${c.name} -> ${to.search}`)
  }
})
