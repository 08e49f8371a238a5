import t, { type Test } from 'tap'
import * as client from 'openid-client'
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose'
import { DEMO_SECRET } from '../helpers/as-config.js'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import {
  ALICE,
  POST_CLIENT_ID,
  keyedClientAuth,
  WEB_REDIRECT_URI,
  basicAuth,
  webLogin,
  type WebLogin,
  isJsonMediaType,
  jwsHeader,
  personDecidesDevice,
  postForm,
  privateJwk,
  startConformanceServer,
  type ConformanceServer,
} from '../helpers/conformance.js'

/**
 * The metadata documents judged against RFC 8414 2/3 and OpenID Connect
 * Discovery 1.0 3/4, and every advertised capability tried for real: a
 * client that trusts the document must not be refused for using what it
 * says. Plain fetch on purpose (the library suites are elsewhere), so
 * nothing is smoothed over by a client library's leniency.
 */

type Metadata = Record<string, unknown>

const FOREIGN_ORIGIN = 'https://rp.example'
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
/** RFC 7517 / RFC 7518 6: members that exist only in private keys. */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']
/** Members RFC 8414 2 and OIDC Discovery 3 give as arrays of strings. */
const STRING_ARRAY_MEMBERS = [
  'scopes_supported',
  'response_types_supported',
  'response_modes_supported',
  'grant_types_supported',
  'token_endpoint_auth_methods_supported',
  'token_endpoint_auth_signing_alg_values_supported',
  'revocation_endpoint_auth_methods_supported',
  'introspection_endpoint_auth_methods_supported',
  'code_challenge_methods_supported',
  'subject_types_supported',
  'id_token_signing_alg_values_supported',
  'claims_supported',
  'ui_locales_supported',
  'claim_types_supported',
]
const ENDPOINT_MEMBERS = [
  'authorization_endpoint',
  'token_endpoint',
  'jwks_uri',
  'userinfo_endpoint',
  'registration_endpoint',
  'revocation_endpoint',
  'introspection_endpoint',
  'device_authorization_endpoint',
  'end_session_endpoint',
  'pushed_authorization_request_endpoint',
]

/** The two well-known locations of an issuer: RFC 8414 3.1 inserts, OIDC Discovery 4.1 appends. */
function wellKnownUrls(issuer: string): { rfc8414: string; oidc: string } {
  const u = new URL(issuer)
  const path = u.pathname === '/' ? '' : u.pathname
  return { rfc8414: `${u.origin}/.well-known/oauth-authorization-server${path}`, oidc: `${issuer}/.well-known/openid-configuration` }
}

/**
 * Structural problems of a metadata document (empty when none): REQUIRED
 * members (RFC 8414 2, OIDC Discovery 3), issuer form (https/http, no query
 * or fragment), member types, no empty arrays (RFC 8414 2: "Claims with zero
 * elements MUST be omitted"), absolute endpoint URLs under the issuer, and
 * nothing RFC 9700 forbids (implicit, password).
 */
function metadataProblems(m: Metadata): string[] {
  const problems: string[] = []
  const required = [
    'issuer',
    'authorization_endpoint',
    'token_endpoint',
    'jwks_uri',
    'response_types_supported',
    'subject_types_supported',
    'id_token_signing_alg_values_supported',
  ]
  for (const k of required) if (m[k] === undefined) problems.push(`REQUIRED member ${k} is missing`)
  for (const k of ['userinfo_endpoint', 'scopes_supported', 'claims_supported'])
    if (m[k] === undefined) problems.push(`RECOMMENDED member ${k} is missing (OIDC Discovery 3)`)
  const issuer = typeof m.issuer === 'string' ? m.issuer : ''
  if (!URL.canParse(issuer)) problems.push(`issuer ${JSON.stringify(m.issuer)} is not a URL`)
  else {
    const u = new URL(issuer)
    if (u.protocol !== 'https:' && u.protocol !== 'http:') problems.push('issuer scheme is not https (or http for local tests)')
    if (u.search !== '' || u.hash !== '' || issuer.includes('?') || issuer.includes('#')) problems.push('issuer has a query or fragment (RFC 8414 2)')
    if (issuer.endsWith('/')) problems.push('issuer ends with "/" (clients compare it byte for byte, RFC 8414 3.3)')
  }
  for (const [k, v] of Object.entries(m)) {
    if (Array.isArray(v) && v.length === 0) problems.push(`${k} is an empty array (RFC 8414 2: omit it)`)
  }
  for (const k of STRING_ARRAY_MEMBERS) {
    const v = m[k]
    if (v !== undefined && !(Array.isArray(v) && v.every((x) => typeof x === 'string'))) problems.push(`${k} is not an array of strings`)
  }
  for (const k of ENDPOINT_MEMBERS) {
    const v = m[k]
    if (v === undefined) continue
    if (typeof v !== 'string' || !URL.canParse(v)) {
      problems.push(`${k} is not an absolute URL`)
      continue
    }
    const u = new URL(v)
    if (u.protocol !== 'https:' && u.protocol !== 'http:') problems.push(`${k} is not https/http`)
    if (u.hash !== '') problems.push(`${k} has a fragment (RFC 6749 3.1)`)
    if (!v.startsWith(`${issuer}/`)) problems.push(`${k} ${v} is not under the issuer ${issuer}`)
  }
  for (const k of [
    'authorization_response_iss_parameter_supported',
    'claims_parameter_supported',
    'request_parameter_supported',
    'request_uri_parameter_supported',
  ]) {
    if (m[k] !== undefined && typeof m[k] !== 'boolean') problems.push(`${k} is not a boolean`)
  }
  const responseTypes = (m.response_types_supported as string[] | undefined) ?? []
  if (responseTypes.some((r) => r.split(' ').includes('token')))
    problems.push('a response type returns an access token from the authorization endpoint (RFC 9700 2.1.2)')
  const grants = (m.grant_types_supported as string[] | undefined) ?? []
  for (const g of ['password', 'implicit']) if (grants.includes(g)) problems.push(`grant type ${g} is advertised (RFC 9700 2.4 / 2.1.2)`)
  if (((m.token_endpoint_auth_signing_alg_values_supported as string[] | undefined) ?? []).includes('none'))
    problems.push('token_endpoint_auth_signing_alg_values_supported lists none')
  if (((m.id_token_signing_alg_values_supported as string[] | undefined) ?? []).includes('none'))
    problems.push('id_token_signing_alg_values_supported lists none, though every flow here returns the ID token from the token endpoint only')
  const subjects = (m.subject_types_supported as string[] | undefined) ?? []
  if (!subjects.every((s) => s === 'public' || s === 'pairwise')) problems.push('subject_types_supported has a value other than public / pairwise')
  const scopes = (m.scopes_supported as string[] | undefined) ?? []
  if (m.scopes_supported !== undefined && !scopes.includes('openid'))
    problems.push('scopes_supported lacks openid (OIDC Discovery 3: the server MUST support it)')
  return problems
}

/** Fetch a public document the way a browser app would (with an Origin) and check its transport. */
async function fetchPublicJson(t: Test, url: string): Promise<Metadata> {
  const res = await fetch(url, { headers: { origin: FOREIGN_ORIGIN } })
  t.equal(res.status, 200, `${url} answers 200 (RFC 8414 3.2)`)
  t.ok(
    isJsonMediaType(res.headers.get('content-type')) || /^application\/jwk-set\+json/.test(res.headers.get('content-type') ?? ''),
    `${url} is JSON (${String(res.headers.get('content-type'))})`,
  )
  const acao = res.headers.get('access-control-allow-origin')
  t.ok(acao === '*' || acao === FOREIGN_ORIGIN, `${url} may be read cross-origin (Access-Control-Allow-Origin: ${String(acao)})`)
  const pre = await fetch(url, { method: 'OPTIONS', headers: { origin: FOREIGN_ORIGIN, 'access-control-request-method': 'GET' } })
  t.ok(pre.status >= 200 && pre.status < 300, `${url} preflight succeeds (${pre.status})`)
  const preAcao = pre.headers.get('access-control-allow-origin')
  t.ok(preAcao === '*' || preAcao === FOREIGN_ORIGIN, `${url} preflight allows the origin`)
  const body: unknown = await res.json()
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error(`${url} is not a JSON object`)
  return body as Metadata
}

/** Where /authorize sent a browser for one request: accepted (login page, or a code) or refused with an error. */
async function authorizeOutcome(
  authorizationEndpoint: string,
  params: Record<string, string>,
): Promise<{ accepted: boolean; error: string | null; status: number }> {
  const url = `${authorizationEndpoint}?${new URLSearchParams(params)}`
  const res = await fetch(url, { redirect: 'manual' })
  await res.arrayBuffer()
  const location = res.headers.get('location')
  if (res.status >= 300 && res.status < 400 && location !== null) {
    const to = new URL(location, url)
    if (to.href.startsWith(params.redirect_uri ?? '\0')) {
      const error = to.searchParams.get('error') ?? new URLSearchParams(to.hash.slice(1)).get('error')
      return { accepted: error === null, error, status: res.status }
    }
    return { accepted: true, error: null, status: res.status } // on to the server's own login page
  }
  return { accepted: res.status === 200, error: res.status === 200 ? null : `HTTP ${res.status}`, status: res.status }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Poll the device grant as RFC 8628 3.4 says, honouring interval and slow_down. */
async function pollDevice(tokenEndpoint: string, deviceCode: string, intervalSec: number, deadlineMs = 15000): Promise<Response> {
  const until = Date.now() + deadlineMs
  let interval = intervalSec
  for (;;) {
    await sleep(interval * 1000 + 50)
    const res = await postForm(tokenEndpoint, { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: 'cli' })
    if (res.status === 200 || Date.now() > until) return res
    const body = (await res.clone().json()) as { error?: string }
    if (body.error === 'slow_down') interval += 5
    else if (body.error !== 'authorization_pending') return res
  }
}

t.test('metadata conformance (RFC 8414, OIDC Discovery 1.0)', async (t) => {
  const server = await startConformanceServer()
  t.teardown(server.close)
  const where = wellKnownUrls(server.issuer)

  const docs = {
    'RFC 8414 /.well-known/oauth-authorization-server': await fetchPublicJson(t, where.rfc8414),
    'OIDC Discovery /.well-known/openid-configuration': await fetchPublicJson(t, where.oidc),
  }
  const m = docs['OIDC Discovery /.well-known/openid-configuration']
  const endpoints = { authorization_endpoint: String(m.authorization_endpoint), token_endpoint: String(m.token_endpoint) }

  await t.test('required members, types and forms', async (t) => {
    for (const [name, doc] of Object.entries(docs)) t.same(metadataProblems(doc), [], name)
  })

  await t.test('issuer is identical to the identifier the document was fetched from (RFC 8414 3.3, OIDC Discovery 4.3)', async (t) => {
    for (const [name, doc] of Object.entries(docs)) t.equal(doc.issuer, server.issuer, name)
    t.same(docs['RFC 8414 /.well-known/oauth-authorization-server'], m, 'both documents say the same')
  })

  await t.test('response types, response modes and PKCE methods are exactly what /authorize accepts', async (t) => {
    const base = { client_id: 'web', redirect_uri: WEB_REDIRECT_URI, scope: 'openid', state: 'st' }
    const verifier = client.randomPKCECodeVerifier()
    const s256 = { code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }
    const endpoint = String(m.authorization_endpoint)
    for (const rt of m.response_types_supported as string[]) {
      const o = await authorizeOutcome(endpoint, { ...base, ...s256, response_type: rt, nonce: 'n' })
      t.ok(o.accepted, `advertised response_type=${rt} is accepted (${o.error ?? o.status})`)
    }
    for (const rt of ['token', 'id_token', 'code id_token', 'code token', 'none']) {
      if ((m.response_types_supported as string[]).includes(rt)) continue
      const o = await authorizeOutcome(endpoint, { ...base, ...s256, response_type: rt, nonce: 'n' })
      t.equal(o.error, 'unsupported_response_type', `unadvertised response_type=${rt} is refused`)
    }
    for (const mode of (m.response_modes_supported as string[] | undefined) ?? []) {
      const o = await authorizeOutcome(endpoint, { ...base, ...s256, response_type: 'code', response_mode: mode })
      t.ok(o.accepted, `advertised response_mode=${mode} is accepted (${o.error ?? o.status})`)
    }
    const methods = m.code_challenge_methods_supported as string[]
    t.ok(methods.includes('S256'), 'S256 advertised (RFC 9700 2.1.1)')
    for (const method of methods) {
      const challenge = method === 'S256' ? s256.code_challenge : verifier
      const o = await authorizeOutcome(endpoint, { ...base, response_type: 'code', code_challenge: challenge, code_challenge_method: method })
      t.ok(o.accepted, `advertised code_challenge_method=${method} is accepted (${o.error ?? o.status})`)
    }
    if (!methods.includes('plain')) {
      const o = await authorizeOutcome(endpoint, { ...base, response_type: 'code', code_challenge: verifier, code_challenge_method: 'plain' })
      t.equal(o.error, 'invalid_request', 'unadvertised code_challenge_method=plain is refused')
    }
  })

  let flow!: WebLogin
  await t.test('every advertised grant type works', async (t) => {
    const grants = m.grant_types_supported as string[]
    t.ok(grants.includes('authorization_code'))
    const tokenEndpoint = String(m.token_endpoint)
    for (const grant of grants) {
      switch (grant) {
        case 'authorization_code': {
          flow = await webLogin(endpoints, 'openid profile email orders:read')
          t.match(flow.tokens, { token_type: /^bearer$/i, access_token: String, id_token: String, refresh_token: String }, grant)
          break
        }
        case 'refresh_token': {
          const r = await postForm(
            tokenEndpoint,
            { grant_type: 'refresh_token', refresh_token: (await webLogin(endpoints, 'openid orders:read')).refreshToken },
            basicAuth('web', DEMO_SECRET),
          )
          t.equal(r.status, 200, grant)
          t.match(await r.json(), { access_token: String, refresh_token: String })
          break
        }
        case 'client_credentials': {
          const r = await postForm(tokenEndpoint, { grant_type: grant, scope: 'orders:read' }, basicAuth('service', DEMO_SECRET))
          t.equal(r.status, 200, grant)
          t.match(await r.json(), { access_token: String, token_type: /^bearer$/i })
          break
        }
        case DEVICE_GRANT: {
          const start = await postForm(String(m.device_authorization_endpoint), { client_id: 'cli', scope: 'orders:read' })
          t.equal(start.status, 200, 'device authorization request')
          const da = (await start.json()) as { device_code: string; verification_uri_complete: string; interval?: number }
          const [res] = await Promise.all([pollDevice(tokenEndpoint, da.device_code, da.interval ?? 5), personDecidesDevice(da.verification_uri_complete)])
          t.equal(res.status, 200, grant)
          t.match(await res.json(), { access_token: String })
          break
        }
        default:
          t.fail(`advertised grant type ${grant} has no known way to be tried`)
      }
    }
    const password = await postForm(
      tokenEndpoint,
      { grant_type: 'password', username: ALICE.username, password: ALICE.password },
      basicAuth('web', DEMO_SECRET),
    )
    t.equal(password.status, 400, 'the password grant is refused (RFC 9700 2.4)')
    t.match(await password.json(), { error: /^(unsupported_grant_type|unauthorized_client)$/ })
  })

  await t.test('every advertised client authentication method is accepted where it is advertised', async (t) => {
    const tokenEndpoint = String(m.token_endpoint)
    const tryAt: Record<string, Record<string, () => Promise<Response>>> = {
      token_endpoint_auth_methods_supported: {
        client_secret_basic: () => postForm(tokenEndpoint, { grant_type: 'client_credentials', scope: 'orders:read' }, basicAuth('service', DEMO_SECRET)),
        client_secret_post: () =>
          postForm(tokenEndpoint, { grant_type: 'client_credentials', scope: 'orders:read', client_id: POST_CLIENT_ID, client_secret: DEMO_SECRET }),
        private_key_jwt: async () =>
          postForm(tokenEndpoint, { grant_type: 'client_credentials', scope: 'orders:read', ...(await keyedClientAuth(tokenEndpoint)) }),
        // A public client authenticates by naming itself; a fresh device code then is "pending", not invalid_client.
        none: async () => {
          const start = await postForm(String(m.device_authorization_endpoint), { client_id: 'cli', scope: 'orders:read' })
          const { device_code: deviceCode } = (await start.json()) as { device_code: string }
          return postForm(tokenEndpoint, { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: 'cli' })
        },
      },
      revocation_endpoint_auth_methods_supported: {
        client_secret_basic: () => postForm(String(m.revocation_endpoint), { token: 'unknown-token' }, basicAuth('web', DEMO_SECRET)),
        client_secret_post: () => postForm(String(m.revocation_endpoint), { token: 'unknown-token', client_id: POST_CLIENT_ID, client_secret: DEMO_SECRET }),
        none: () => postForm(String(m.revocation_endpoint), { token: 'unknown-token', client_id: 'cli' }),
        private_key_jwt: async () =>
          postForm(String(m.revocation_endpoint), { token: 'unknown-token', ...(await keyedClientAuth(String(m.revocation_endpoint))) }),
      },
      introspection_endpoint_auth_methods_supported: {
        client_secret_basic: () => postForm(String(m.introspection_endpoint), { token: 'unknown-token' }, basicAuth('service', DEMO_SECRET)),
        client_secret_post: () => postForm(String(m.introspection_endpoint), { token: 'unknown-token', client_id: POST_CLIENT_ID, client_secret: DEMO_SECRET }),
        none: () => postForm(String(m.introspection_endpoint), { token: 'unknown-token', client_id: 'cli' }),
        private_key_jwt: async () =>
          postForm(String(m.introspection_endpoint), { token: 'unknown-token', ...(await keyedClientAuth(String(m.introspection_endpoint))) }),
      },
    }
    for (const [member, attempts] of Object.entries(tryAt)) {
      const advertised = (m[member] as string[] | undefined) ?? []
      t.ok(advertised.length > 0, `${member} advertised`)
      for (const method of advertised) {
        const attempt = attempts[method]
        if (attempt === undefined) {
          t.fail(`${member}: ${method} has no known way to be tried`)
          continue
        }
        const res = await attempt()
        // RFC 7009 2.2: a revocation answer's body is empty; the others are JSON.
        const text = await res.text()
        const error = text === '' ? undefined : (JSON.parse(text) as { error?: string }).error
        const ok = res.status === 200 || (method === 'none' && member.startsWith('token') && error === 'authorization_pending')
        t.ok(ok, `${member}: ${method} is accepted (${res.status} ${error ?? ''})`)
      }
      for (const method of Object.keys(attempts).filter((x) => !advertised.includes(x))) {
        const res = await attempts[method]!()
        t.equal(res.status, 401, `${member}: unadvertised ${method} is refused with 401`)
        t.match(await res.json(), { error: 'invalid_client' })
      }
    }
    // A 200 above means something only if a wrong secret is refused at the same endpoints.
    for (const url of [tokenEndpoint, String(m.revocation_endpoint), String(m.introspection_endpoint)]) {
      const res = await postForm(url, { grant_type: 'client_credentials', token: 'unknown-token', client_id: POST_CLIENT_ID, client_secret: 'wrong' })
      t.equal(res.status, 401, `${url}: a wrong client_secret_post secret is 401`)
    }
  })

  await t.test('JWKS: public keys with kid, alg and use that match id_token_signing_alg_values_supported', async (t) => {
    const jwks = (await fetchPublicJson(t, String(m.jwks_uri))) as unknown as JSONWebKeySet
    t.ok(Array.isArray(jwks.keys) && jwks.keys.length > 0, 'keys is a non-empty array')
    const kids = new Set<string>()
    for (const key of jwks.keys) {
      t.type(key.kid, 'string', 'kid present')
      t.type(key.alg, 'string', 'alg present')
      t.equal(key.use, 'sig', 'use is sig')
      t.type(key.kty, 'string')
      t.same(
        PRIVATE_JWK_MEMBERS.filter((p) => p in key),
        [],
        `key ${String(key.kid)} has no private members`,
      )
      t.notOk(kids.has(String(key.kid)), 'kid unique')
      kids.add(String(key.kid))
    }
    const algs = m.id_token_signing_alg_values_supported as string[]
    for (const alg of algs)
      t.ok(
        jwks.keys.some((k) => k.alg === alg),
        `a published key has advertised alg ${alg}`,
      )
    const header = jwsHeader(flow.idToken)
    t.ok(algs.includes(String(header.alg)), `the id_token is signed with an advertised alg (${String(header.alg)})`)
    t.equal(jwks.keys.find((k) => k.kid === header.kid)?.alg, header.alg, 'the id_token kid names a published key of that alg')
    const keyset = createLocalJWKSet(jwks)
    const { payload } = await jwtVerify(flow.idToken, keyset, { issuer: server.issuer, audience: 'web', algorithms: algs })
    t.equal(payload.sub, 'alice', 'the id_token verifies with the published keys')
    const at = await jwtVerify(flow.accessToken, keyset, { issuer: server.issuer, typ: 'at+jwt' })
    t.equal(at.protectedHeader.typ, 'at+jwt', 'the access token verifies with the published keys (RFC 9068)')
  })

  await t.test('claims_supported covers what userinfo and the id_token carry', async (t) => {
    const supported = new Set(m.claims_supported as string[])
    const res = await fetch(String(m.userinfo_endpoint), { headers: { authorization: `Bearer ${flow.accessToken}` } })
    t.equal(res.status, 200)
    t.ok(isJsonMediaType(res.headers.get('content-type')), 'userinfo is JSON')
    const userinfo = (await res.json()) as Record<string, unknown>
    t.equal(userinfo.sub, 'alice')
    t.same(
      Object.keys(userinfo).filter((c) => !supported.has(c)),
      [],
      'every userinfo claim is in claims_supported',
    )
    const { payload } = await jwtVerify(flow.idToken, createLocalJWKSet((await (await fetch(String(m.jwks_uri))).json()) as JSONWebKeySet))
    // JWT bookkeeping claims (RFC 7519 4.1) are not user claims; OIDC lists only what it defines.
    t.same(
      Object.keys(payload).filter((c) => !supported.has(c) && c !== 'jti' && c !== 'nbf'),
      [],
      'every id_token claim is in claims_supported',
    )
    const scopes = m.scopes_supported as string[]
    for (const s of (flow.tokens.scope as string).split(' ')) t.ok(scopes.includes(s), `granted scope ${s} is in scopes_supported`)
  })

  await t.test('OIDC Discovery 3: id_token_signing_alg_values_supported includes RS256 (default key setup)', async (t) => {
    // "The algorithm RS256 MUST be included." Clients that do not read this
    // member (oauth4webapi without discovery, many server-side libraries)
    // default to RS256 and refuse any other alg.
    t.ok((m.id_token_signing_alg_values_supported as string[]).includes('RS256'), `advertised: ${JSON.stringify(m.id_token_signing_alg_values_supported)}`)
  })
})

t.test('an issuer with a path and configured keys (RFC 8414 3.1 path insertion)', async (t) => {
  const server: ConformanceServer = await startConformanceServer({
    issuerPath: '/auth',
    keys: [await privateJwk('RS256', 'rsa-current'), await privateJwk('ES256', 'ec-previous')],
  })
  t.teardown(server.close)
  const where = wellKnownUrls(server.issuer)
  t.equal(where.rfc8414, `${server.origin}/.well-known/oauth-authorization-server/auth`)

  const rfc8414 = await fetchPublicJson(t, where.rfc8414)
  const oidc = await fetchPublicJson(t, where.oidc)
  t.equal(rfc8414.issuer, server.issuer, 'issuer identical at the RFC 8414 location')
  t.equal(oidc.issuer, server.issuer, 'issuer identical at the OIDC location')
  t.same(metadataProblems(oidc), [])
  t.same(oidc.id_token_signing_alg_values_supported, ['RS256'], 'the first key signs')

  const jwks = (await fetchPublicJson(t, String(oidc.jwks_uri))) as unknown as JSONWebKeySet
  t.same(
    jwks.keys.map((k) => [k.kid, k.alg, k.use]).sort(),
    [
      ['ec-previous', 'ES256', 'sig'],
      ['rsa-current', 'RS256', 'sig'],
    ],
    'both keys are published',
  )
  t.same(
    jwks.keys.flatMap((k) => PRIVATE_JWK_MEMBERS.filter((p) => p in k)),
    [],
    'no private members',
  )

  // A library finds the server from the issuer alone, either way, and completes a login under the path.
  const insecure: client.DiscoveryRequestOptions = { execute: [client.allowInsecureRequests] }
  const viaOauth2 = await client.discovery(new URL(server.issuer), 'web', DEMO_SECRET, client.ClientSecretBasic(DEMO_SECRET), {
    ...insecure,
    algorithm: 'oauth2',
  })
  t.equal(viaOauth2.serverMetadata().issuer, server.issuer)
  const web = await client.discovery(new URL(server.issuer), 'web', DEMO_SECRET, client.ClientSecretBasic(DEMO_SECRET), insecure)
  const verifier = client.randomPKCECodeVerifier()
  const nonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(web, {
    redirect_uri: WEB_REDIRECT_URI,
    scope: 'openid orders:read',
    nonce,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  })
  t.ok(url.href.startsWith(`${server.issuer}/`), 'authorization endpoint under the issuer path')
  const callback = await authorizeAsPerson(new Browser(), url.href, ALICE)
  t.equal(callback.searchParams.get('iss'), server.issuer, 'RFC 9207 iss is the issuer with its path')
  const tokens = await client.authorizationCodeGrant(web, callback, { pkceCodeVerifier: verifier, expectedNonce: nonce })
  t.equal(jwsHeader(tokens.id_token!).kid, 'rsa-current', 'signed by the first key')
  t.equal(tokens.claims()?.iss, server.issuer)
  const route = await client.fetchProtectedResource(web, tokens.access_token, new URL('/orders/1', server.origin), 'GET')
  t.equal(route.status, 200, 'the gateway accepts tokens of an issuer with a path')
})
