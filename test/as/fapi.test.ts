/**
 * The FAPI 2.0 Security Profile (`profile: fapi2`): a full code flow as a
 * client calls it with oauth4webapi (pushedAuthorizationRequest with
 * private_key_jwt, its DPoP handle at /par, /token, refresh and the
 * gateway), a person going through the pages (authorizeAs); then what the
 * profile refuses, sent by hand: /authorize without PAR, PKCE plain or
 * missing, a code past 60 s, /token without a proof, a secret, no
 * authentication, an HMAC or unsigned assertion or request object, and an
 * assertion whose aud is the token endpoint.
 */
import { SignJWT, type CryptoKey } from 'jose'
import * as oauth from 'oauth4webapi'
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { API_AUDIENCE, Browser, CLIENT_SECRET, authorizeAs, countCodes, frontYaml, get, pkce, startFront } from '../helpers/as-front.js'
import { makeProof, proofKeyPair } from '../helpers/dpop.js'
import { postForm, reply, type Reply } from '../helpers/http.js'
import { ASSERTION_TYPE, clientKeyPair as keyPair, keyedClientLines } from '../helpers/keyed-clients.js'
import { startUpstream } from '../helpers/upstream.js'
import { basic } from '../helpers/client-auth.js'

const insecure = { [oauth.allowInsecureRequests]: true } as const
const FAPI_CB = 'https://fapi.example.com/cb'
const CLASSIC_CB = 'https://classic.example.com/cb'

const fapiKey = await keyPair('fapi-1')
const classicKey = await keyPair('classic-1')
const upstream = await startUpstream('fapi-api')
t.teardown(() => upstream.close())

// oauth4webapi dates its assertions and proofs with Date.now(): the server's clock starts there.
const clock = new ManualClock(Date.now())
const front = await startFront(
  await frontYaml({
    // Longer than the profile allows: a FAPI client's codes still live 60 s, the others' 5 minutes.
    codeTtl: '5m',
    clientsExtra: [
      ...keyedClientLines({
        clientId: 'fapi',
        name: 'FAPI Bank',
        jwk: fapiKey.publicJwk,
        redirectUri: FAPI_CB,
        grantTypes: ['authorization_code', 'refresh_token'],
        scopes: ['openid', 'orders:read'],
        more: ['      profile: fapi2', '      dpop_bound_access_tokens: true'],
      }),
      // The same kind of client without the profile: what RFC 7523 alone allows, for contrast.
      ...keyedClientLines({
        clientId: 'classic',
        jwk: classicKey.publicJwk,
        redirectUri: CLASSIC_CB,
        grantTypes: ['authorization_code'],
        scopes: ['orders:read'],
      }),
    ].join('\n'),
    routesExtra: [
      '  - name: fapi-api',
      '    match: { path: /fapi-api }',
      `    upstream: ${upstream.url}`,
      `    audience: ${API_AUDIENCE}`,
      '    dpop: required',
    ].join('\n'),
  }),
  { clock },
)
t.teardown(() => front.close())
const codes = countCodes(front.store)

const as: oauth.AuthorizationServer = await oauth.processDiscoveryResponse(
  new URL(front.issuer),
  await oauth.discoveryRequest(new URL(front.issuer), { algorithm: 'oauth2', ...insecure }),
)
const fapi: oauth.Client = { client_id: 'fapi' }
const fapiAuth = oauth.PrivateKeyJwt({ key: fapiKey.privateKey, kid: 'fapi-1' })

/** The pushed request's parameters, as a FAPI client sends them. */
function fapiParams(challenge: string, over: Record<string, string> = {}): Record<string, string> {
  return {
    redirect_uri: FAPI_CB,
    response_type: 'code',
    scope: 'orders:read',
    state: 'st-fapi',
    resource: API_AUDIENCE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...over,
  }
}

function authorizeWith(requestUri: string): string {
  return `${front.url}/authorize?${new URLSearchParams({ client_id: 'fapi', request_uri: requestUri }).toString()}`
}

/** A client assertion made by hand on the server's clock (the attacker's tests, and tests that move the clock). */
async function assertion(o: { clientId?: string; key?: CryptoKey | Uint8Array; alg?: string; kid?: string; aud?: string } = {}): Promise<string> {
  const clientId = o.clientId ?? 'fapi'
  const now = Math.floor(clock.now() / 1000)
  return new SignJWT({ iss: clientId, sub: clientId, aud: o.aud ?? front.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: o.alg ?? 'ES256', kid: o.kid ?? 'fapi-1' })
    .sign(o.key ?? fapiKey.privateKey)
}

/** A code for `fapi`, through PAR (oauth4webapi) and the pages; its verifier. */
async function fapiCode(): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce()
  const res = await oauth.pushedAuthorizationRequest(as, fapi, fapiAuth, fapiParams(challenge), insecure)
  const { request_uri } = await oauth.processPushedAuthorizationResponse(as, fapi, res)
  const callback = await authorizeAs(new Browser(), authorizeWith(request_uri))
  const params = oauth.validateAuthResponse(as, fapi, callback, 'st-fapi')
  return { code: params.get('code') ?? '', verifier }
}

/** The cause the server logged for the last refusal since log line `from`. */
function causeSince(from: number): unknown {
  return front.logs
    .slice(from)
    .filter((l) => l.msg === 'request refused')
    .at(-1)?.cause
}

/** A JSON refusal: status, error, no-store, never a redirect. */
function refused(t: Test, r: Reply, error: string, status = 400): void {
  t.equal(r.status, status, `${error}: status (${r.text.slice(0, 200)})`)
  t.equal(r.json?.error, error)
  t.equal(r.headers.get('location'), null, 'never a redirect')
}

t.test(
  'a full FAPI 2.0 flow with oauth4webapi: PAR with private_key_jwt and DPoP, code, DPoP token, refresh, a DPoP-bound call through the gateway',
  async (t) => {
    const dpopKeys = await oauth.generateKeyPair('ES256')
    const dpop = oauth.DPoP(fapi, dpopKeys)
    const { verifier, challenge } = pkce()

    const pushed = await oauth.pushedAuthorizationRequest(as, fapi, fapiAuth, fapiParams(challenge), { DPoP: dpop, ...insecure })
    const { request_uri, expires_in } = await oauth.processPushedAuthorizationResponse(as, fapi, pushed)
    t.equal(expires_in, 60)

    const callback = await authorizeAs(new Browser(), authorizeWith(request_uri))
    t.equal(`${callback.origin}${callback.pathname}`, FAPI_CB)
    t.equal(callback.searchParams.get('iss'), front.issuer, 'RFC 9207 iss in the authorization response')
    // validateAuthResponse checks iss against the metadata (authorization_response_iss_parameter_supported).
    const params = oauth.validateAuthResponse(as, fapi, callback, 'st-fapi')

    const res = await oauth.authorizationCodeGrantRequest(as, fapi, fapiAuth, params, FAPI_CB, verifier, { DPoP: dpop, ...insecure })
    const tokens = await oauth.processAuthorizationCodeResponse(as, fapi, res)
    t.equal(tokens.token_type, 'dpop', 'a DPoP-bound access token')
    t.equal(tokens.scope, 'orders:read')
    t.type(tokens.refresh_token, 'string')

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      fapi,
      await oauth.refreshTokenGrantRequest(as, fapi, fapiAuth, tokens.refresh_token ?? '', { DPoP: dpop, ...insecure }),
    )
    t.equal(refreshed.token_type, 'dpop')

    const before = upstream.seen.length
    const call = await oauth.protectedResourceRequest(refreshed.access_token, 'GET', new URL(`${front.url}/fapi-api`), undefined, undefined, {
      DPoP: dpop,
      ...insecure,
    })
    t.equal(call.status, 200, 'the gateway forwards the DPoP-bound call')
    t.same(await call.json(), { upstream: 'fapi-api', method: 'GET', url: '/fapi-api' })
    t.equal(upstream.seen.length, before + 1)

    // The same token as a bearer token: the route refuses it, and nothing reaches the API.
    const bare = await fetch(`${front.url}/fapi-api`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })
    t.equal(bare.status, 401)
    await bare.text()
    t.equal(upstream.seen.length, before + 1, 'nothing reached the upstream')
  },
)

t.test("a FAPI client's plain /authorize without PAR is refused on our page, never redirected", async (t) => {
  const before = codes.count
  const res = await get(`${front.url}/authorize?${new URLSearchParams({ client_id: 'fapi', ...fapiParams(pkce().challenge) }).toString()}`)
  t.equal(res.status, 400)
  t.equal(res.headers.get('location'), null)
  t.match(res.text, /Error code: <code>invalid_request<\/code>/)
  t.match(res.text, /must push its authorization requests/)
  t.equal(codes.count, before, 'no code')
})

t.test('PKCE plain, PKCE missing or no redirect_uri in a pushed request: invalid_request at /par, nothing pushed', async (t) => {
  const before = front.store.pushedRequests.size
  const { verifier } = pkce()
  const cases: Array<[string, Record<string, string>]> = [
    ['plain', fapiParams(verifier, { code_challenge_method: 'plain' })],
    ['method omitted (plain)', fapiParams(verifier, { code_challenge_method: '' })],
    ['no challenge', fapiParams('', { code_challenge: '', code_challenge_method: '' })],
    ['no redirect_uri', fapiParams(pkce().challenge, { redirect_uri: '' })],
  ]
  for (const [name, params] of cases) {
    const sent = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== ''))
    const r = await reply(oauth.pushedAuthorizationRequest(as, fapi, fapiAuth, sent, insecure))
    refused(t, r, 'invalid_request')
    t.ok(typeof r.json?.error_description === 'string', `${name}: described`)
  }
  t.equal(front.store.pushedRequests.size, before, 'nothing pushed')
})

t.test("a FAPI client's code past 60 s is refused (the injected clock), while another client's lives code_ttl", async (t) => {
  const { code, verifier } = await fapiCode()
  clock.advance(61_000)
  t.teardown(() => clock.advance(-61_000))
  const proof = makeProof(proofKeyPair('ES256'), { htm: 'POST', htu: `${front.issuer}/token`, nowMs: clock.now() })
  const from = front.logs.length
  const late = await reply(
    postForm(
      `${front.url}/token`,
      {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: FAPI_CB,
        client_assertion_type: ASSERTION_TYPE,
        client_assertion: await assertion(),
      },
      { dpop: proof },
    ),
  )
  refused(t, late, 'invalid_grant')
  t.equal(causeSince(from), 'code unknown or expired', 'gone from the store at 60 s, not at code_ttl')

  // `web` has no profile: code_ttl (5m) holds for it.
  clock.advance(-61_000)
  const { verifier: webVerifier, challenge } = pkce()
  const url = `${front.url}/authorize?${new URLSearchParams({ client_id: 'web', redirect_uri: 'https://app.example.com/callback', response_type: 'code', scope: 'orders:read', state: 's', code_challenge: challenge, code_challenge_method: 'S256' })}`
  const callback = await authorizeAs(new Browser(), url)
  clock.advance(61_000)
  const ok = await reply(
    postForm(
      `${front.url}/token`,
      {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') ?? '',
        code_verifier: webVerifier,
        redirect_uri: 'https://app.example.com/callback',
      },
      { authorization: basic('web', CLIENT_SECRET) },
    ),
  )
  t.equal(ok.status, 200, 'redeemed at 61 s')
})

t.test('/token without a DPoP proof for the FAPI client: invalid_dpop_proof, and the code is still good', async (t) => {
  const { code, verifier } = await fapiCode()
  const form = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: FAPI_CB, client_assertion_type: ASSERTION_TYPE }
  const bare = await reply(postForm(`${front.url}/token`, { ...form, client_assertion: await assertion() }))
  refused(t, bare, 'invalid_dpop_proof')
  const proof = makeProof(proofKeyPair('ES256'), { htm: 'POST', htu: `${front.issuer}/token`, nowMs: clock.now() })
  const ok = await reply(postForm(`${front.url}/token`, { ...form, client_assertion: await assertion() }, { dpop: proof }))
  t.equal(ok.status, 200, 'redeemed with a proof')
  t.equal(ok.json?.token_type, 'DPoP')
})

t.test('client authentication the profile refuses: a secret, none, an HMAC or unsigned assertion, an assertion for the token endpoint URL', async (t) => {
  const before = front.store.pushedRequests.size
  const params = fapiParams(pkce().challenge)
  const par = async (auth: Record<string, string>, headers: Record<string, string> = {}) => reply(postForm(`${front.url}/par`, { ...params, ...auth }, headers))
  refused(t, await par({ client_id: 'fapi', client_secret: CLIENT_SECRET }), 'invalid_client', 401)
  refused(t, await par({}, { authorization: basic('fapi', CLIENT_SECRET) }), 'invalid_client', 401)
  refused(t, await par({ client_id: 'fapi' }), 'invalid_client', 401)
  // HMAC with the client's public key as the secret: the classic key-confusion forgery.
  const hmacKey = new TextEncoder().encode(JSON.stringify(fapiKey.publicJwk))
  refused(t, await par({ client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion({ alg: 'HS256', key: hmacKey }) }), 'invalid_client', 401)
  const signed = await assertion()
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${signed.split('.')[1]}.`
  refused(t, await par({ client_assertion_type: ASSERTION_TYPE, client_assertion: unsigned }), 'invalid_client', 401)
  for (const aud of [`${front.issuer}/token`, `${front.issuer}/par`]) {
    const from = front.logs.length
    refused(t, await par({ client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion({ aud }) }), 'invalid_client', 401)
    t.equal(causeSince(from), 'client assertion: aud is not this server', `aud ${aud}: refused for its aud`)
  }
  t.equal(front.store.pushedRequests.size, before, 'nothing pushed')

  // The same at /token, before the grant is looked at: the code stays unredeemed.
  const { code, verifier } = await fapiCode()
  const grant = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: FAPI_CB }
  const proof = () => makeProof(proofKeyPair('ES256'), { htm: 'POST', htu: `${front.issuer}/token`, nowMs: clock.now() })
  const atToken = async (auth: Record<string, string>, headers: Record<string, string> = {}) =>
    reply(postForm(`${front.url}/token`, { ...grant, ...auth }, { dpop: proof(), ...headers }))
  const from = front.logs.length
  refused(
    t,
    await atToken({ client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion({ aud: `${front.issuer}/token` }) }),
    'invalid_client',
    401,
  )
  t.equal(causeSince(from), 'client assertion: aud is not this server', 'aud the token endpoint URL: refused at /token')
  refused(t, await atToken({}, { authorization: basic('fapi', CLIENT_SECRET) }), 'invalid_client', 401)
  refused(t, await atToken({ client_id: 'fapi' }), 'invalid_client', 401)
  const redeemed = await atToken({ client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion() })
  t.equal(redeemed.status, 200, 'the code was never spent by the refused requests')

  // RFC 7523 alone allows the token endpoint URL: a client without the profile is accepted with it.
  const classic = await reply(
    postForm(`${front.url}/par`, {
      ...params,
      redirect_uri: CLASSIC_CB,
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: await assertion({ clientId: 'classic', key: classicKey.privateKey, kid: 'classic-1', aud: `${front.issuer}/token` }),
    }),
  )
  t.equal(classic.status, 201, 'pushed')
})

t.test('request objects signed with none or HMAC are refused for the FAPI client', async (t) => {
  const now = Math.floor(clock.now() / 1000)
  const claims = { iss: 'fapi', aud: front.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID(), client_id: 'fapi', ...fapiParams(pkce().challenge) }
  const hmacKey = new TextEncoder().encode(JSON.stringify(fapiKey.publicJwk))
  const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'fapi-1', typ: 'oauth-authz-req+jwt' }).sign(hmacKey)
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'oauth-authz-req+jwt' })).toString('base64url')}.${hmac.split('.')[1]}.`
  for (const request of [hmac, unsigned]) {
    const r = await reply(postForm(`${front.url}/par`, { client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(), request }))
    refused(t, r, 'invalid_request_object')
  }
})

t.test('authorization_server.profile: fapi2: the metadata says PAR is required, S256 only, keys and certificates only', async (t) => {
  const server = await startFront(
    [
      'public_url: ${PUBLIC_URL}',
      'authorization_server:',
      '  profile: fapi2',
      '  clients:',
      '    - client_id: fapi',
      '      type: confidential',
      '      token_endpoint_auth_method: private_key_jwt',
      `      jwks: ${JSON.stringify({ keys: [fapiKey.publicJwk] })}`,
      `      redirect_uris: [${FAPI_CB}]`,
      '      dpop_bound_access_tokens: true',
    ].join('\n'),
  )
  t.teardown(() => server.close())
  const r = await reply(fetch(`${server.url}/.well-known/oauth-authorization-server`))
  t.equal(r.json?.require_pushed_authorization_requests, true)
  t.same(r.json?.code_challenge_methods_supported, ['S256'])
  t.same(r.json?.token_endpoint_auth_methods_supported, ['private_key_jwt'], 'no secret, no none (no mTLS configured here)')
  t.same(r.json?.revocation_endpoint_auth_methods_supported, ['private_key_jwt'])
  t.same(r.json?.introspection_endpoint_auth_methods_supported, ['private_key_jwt'])
  t.equal(r.json?.authorization_response_iss_parameter_supported, true)
  // Without the server-wide profile the metadata is the usual one.
  t.equal(as.require_pushed_authorization_requests, false)
  t.ok(as.token_endpoint_auth_methods_supported?.includes('client_secret_basic'))
})
