/**
 * Pushed authorization requests (RFC 9126) and request objects (RFC 9101),
 * as a client calls them with oauth4webapi (pushedAuthorizationRequest,
 * issueRequestObject, PrivateKeyJwt) and a person goes through the pages
 * (authorizeAs), and as an attacker sends them by hand: a pushed request_uri
 * used twice, by another client, after it expired; parameters smuggled beside
 * it; request objects unsigned, HMAC-signed, for another server, replayed,
 * from another issuer, expired, naming another client.
 */
import { calculateJwkThumbprint, decodeJwt, exportJWK, SignJWT, type CryptoKey } from 'jose'
import * as oauth from 'oauth4webapi'
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { ALICE_PASSWORD, Browser, authorizeAs, countCodes, formWith, frontYaml, get, pkce, startFront } from '../helpers/as-front.js'
import { postForm, reply, type Reply } from '../helpers/http.js'
import { ASSERTION_TYPE, clientKeyPair as keyPair, keyedClientLines } from '../helpers/keyed-clients.js'

const insecure = { [oauth.allowInsecureRequests]: true } as const
const BANK_CB = 'https://bank.example.com/cb'
const SIGNER_CB = 'https://signer.example.com/cb'

const bankKey = await keyPair('bank-1')
const signerKey = await keyPair('signer-1')
const strangerKey = await keyPair('bank-1')

// oauth4webapi dates its assertions and request objects with Date.now(): the server's clock starts there.
const clock = new ManualClock(Date.now())
const front = await startFront(
  await frontYaml({
    asExtra: '  registration: { enabled: true, scopes: ["orders:read"] }',
    clientsExtra: [
      ...keyedClientLines({
        clientId: 'bank',
        name: 'Bank',
        jwk: bankKey.publicJwk,
        redirectUri: BANK_CB,
        grantTypes: ['authorization_code'],
        scopes: ['openid', 'orders:read', 'orders:write'],
        more: ['      require_pushed_authorization_requests: true'],
      }),
      ...keyedClientLines({
        clientId: 'signer',
        name: 'Signer',
        jwk: signerKey.publicJwk,
        redirectUri: SIGNER_CB,
        grantTypes: ['authorization_code'],
        scopes: ['orders:read'],
        more: ['      require_signed_request_object: true'],
      }),
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
const bank: oauth.Client = { client_id: 'bank' }
const bankAuth = oauth.PrivateKeyJwt({ key: bankKey.privateKey, kid: 'bank-1' })
const signer: oauth.Client = { client_id: 'signer' }
const signerAuth = oauth.PrivateKeyJwt({ key: signerKey.privateKey, kid: 'signer-1' })

/** A pushed request of `bank` for orders:read, as oauth4webapi sends it; its request_uri and the PKCE verifier. */
async function push(over: Record<string, string> = {}): Promise<{ requestUri: string; verifier: string; expiresIn: number }> {
  const { verifier, challenge } = pkce()
  const params = {
    redirect_uri: BANK_CB,
    response_type: 'code',
    scope: 'orders:read',
    state: 'st-bank',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...over,
  }
  const res = await oauth.pushedAuthorizationRequest(as, bank, bankAuth, params, insecure)
  const pushed = await oauth.processPushedAuthorizationResponse(as, bank, res)
  return { requestUri: pushed.request_uri, verifier, expiresIn: pushed.expires_in }
}

function authorizeWith(clientId: string, requestUri: string, extra: Record<string, string> = {}): string {
  return `${front.url}/authorize?${new URLSearchParams({ client_id: clientId, request_uri: requestUri, ...extra }).toString()}`
}

/** A client assertion for /par made by hand (the attacker's tests send the form themselves). */
async function assertionFor(clientId: string, key: CryptoKey, kid: string): Promise<string> {
  const now = Math.floor(clock.now() / 1000)
  return new SignJWT({ iss: clientId, sub: clientId, aud: front.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: 'ES256', kid })
    .sign(key)
}

/** POST /par by hand for `signer` with a request object. */
async function pushObject(requestObject: string, beside: Record<string, string> = {}): Promise<Reply> {
  return reply(
    postForm(`${front.url}/par`, {
      ...beside,
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: await assertionFor('signer', signerKey.privateKey, 'signer-1'),
      request: requestObject,
    }),
  )
}

/** The request object `signer` would send, with the test's changes to its claims and header. */
async function requestObject(o: { claims?: Record<string, unknown>; omit?: string[]; header?: Record<string, unknown>; key?: CryptoKey | Uint8Array } = {}) {
  const now = Math.floor(clock.now() / 1000)
  const claims: Record<string, unknown> = {
    iss: 'signer',
    aud: front.issuer,
    iat: now,
    nbf: now,
    exp: now + 60,
    jti: crypto.randomUUID(),
    client_id: 'signer',
    response_type: 'code',
    redirect_uri: SIGNER_CB,
    scope: 'orders:read',
    state: 'st-signer',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    ...o.claims,
  }
  for (const name of o.omit ?? []) delete claims[name]
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'signer-1', typ: 'oauth-authz-req+jwt', ...o.header }).sign(o.key ?? signerKey.privateKey)
}

/** Our own error page: 400, no Location, the error code shown, no code stored. */
async function refusedOnPage(t: Test, url: string, error: string, browser?: Browser): Promise<void> {
  const before = codes.count
  const res =
    browser === undefined ? await get(url) : await browser.get(url).then(async (r) => ({ status: r.status, headers: r.headers, text: await r.text() }))
  const text = res.text
  t.equal(res.status, 400, `${error}: 400`)
  t.equal(res.headers.get('location'), null, `${error}: never redirected`)
  t.match(text, new RegExp(`Error code: <code>${error}</code>`), `${error}: shown`)
  t.equal(codes.count, before, 'no code stored')
}

/** The JSON refusal a client gets at /par (RFC 9126 2.3). */
function refusedAtPar(t: Test, r: Reply, error: string, status = 400): void {
  t.equal(r.status, status, `${error}: status`)
  t.equal(r.json?.error, error)
  t.equal(r.headers.get('location'), null, 'never a redirect')
  t.equal(r.headers.get('cache-control'), 'no-store')
}

t.test('the metadata names /par, request objects and their algorithms, and no request_uri of other hosts', async (t) => {
  t.equal(as.pushed_authorization_request_endpoint, `${front.issuer}/par`)
  t.equal(as.require_pushed_authorization_requests, false, 'not every client must push here')
  t.equal(as.request_parameter_supported, true)
  t.equal(as.request_uri_parameter_supported, false)
  const algs = as.request_object_signing_alg_values_supported ?? []
  t.ok(algs.includes('ES256') && algs.includes('PS256'))
  t.notOk(
    algs.some((a) => a === 'none' || a.startsWith('HS')),
    'no none, no HMAC',
  )
})

t.test('oauth4webapi: pushedAuthorizationRequest with private_key_jwt, then the code flow with client_id and request_uri', async (t) => {
  const { requestUri, verifier, expiresIn } = await push()
  t.match(requestUri, /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/)
  t.equal(expiresIn, 60)
  const callback = await authorizeAs(new Browser(), authorizeWith('bank', requestUri))
  t.equal(`${callback.origin}${callback.pathname}`, BANK_CB)
  const params = oauth.validateAuthResponse(as, bank, callback, 'st-bank')
  const res = await oauth.authorizationCodeGrantRequest(as, bank, bankAuth, params, BANK_CB, verifier, insecure)
  const tokens = await oauth.processAuthorizationCodeResponse(as, bank, res)
  t.equal(tokens.scope, 'orders:read')
  t.equal(decodeJwt(tokens.access_token).client_id, 'bank')
})

t.test('a pushed request_uri is single use: the second /authorize with it is our page', async (t) => {
  const { requestUri } = await push()
  const browser = new Browser()
  const first = await browser.get(authorizeWith('bank', requestUri))
  t.equal(first.status, 200, 'the login page')
  await first.text()
  await refusedOnPage(t, authorizeWith('bank', requestUri), 'invalid_request_uri')
  await refusedOnPage(t, authorizeWith('bank', requestUri), 'invalid_request_uri', browser)
})

t.test("a pushed request_uri presented by another client is refused, and the real client's request still works", async (t) => {
  const { requestUri } = await push()
  await refusedOnPage(t, authorizeWith('web', requestUri), 'invalid_request_uri')
  const callback = await authorizeAs(new Browser(), authorizeWith('bank', requestUri))
  t.type(callback.searchParams.get('code'), 'string', 'not spent by the stranger')
})

t.test('a pushed request_uri past request_uri_ttl is refused (the injected clock)', async (t) => {
  const { requestUri } = await push()
  clock.advance(61_000)
  await refusedOnPage(t, authorizeWith('bank', requestUri), 'invalid_request_uri')
  // Back to the clients' own time: oauth4webapi dates its proofs with Date.now().
  clock.advance(-61_000)
})

t.test('parameters beside request_uri are ignored: a smuggled redirect_uri, scope or state changes nothing', async (t) => {
  const { requestUri, verifier } = await push()
  const smuggled = { redirect_uri: 'https://evil.example/cb', scope: 'openid orders:write', state: 'evil', response_type: 'token', prompt: 'none' }
  const callback = await authorizeAs(new Browser(), authorizeWith('bank', requestUri, smuggled))
  t.equal(`${callback.origin}${callback.pathname}`, BANK_CB, 'the pushed redirect_uri')
  t.equal(callback.searchParams.get('state'), 'st-bank', 'the pushed state')
  const params = oauth.validateAuthResponse(as, bank, callback, 'st-bank')
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    bank,
    await oauth.authorizationCodeGrantRequest(as, bank, bankAuth, params, BANK_CB, verifier, insecure),
  )
  t.equal(tokens.scope, 'orders:read', 'the pushed scope')
})

t.test('the started reference the pages carry dies with the code: its parameters never travel, and a second tab gets nothing', async (t) => {
  const { requestUri } = await push({ prompt: 'login' })
  const browser = new Browser()
  const url = authorizeWith('bank', requestUri)
  const page = await browser.get(url)
  const login = formWith(await page.text(), url, 'password')
  const carried = new URLSearchParams(login.fields.request ?? '')
  t.same([...carried.keys()], ['client_id', 'request_uri'], 'the form carries only the client and a reference')
  t.not(carried.get('request_uri'), requestUri, 'a fresh reference, not the pushed one')
  // prompt=login is satisfied by the login just done (no login page again, forever).
  const callback = await authorizeAs(browser, `${front.url}/authorize?${carried.toString()}`)
  t.type(callback.searchParams.get('code'), 'string')
  await refusedOnPage(t, `${front.url}/authorize?${carried.toString()}`, 'invalid_request_uri', browser)
})

t.test('a client that must push is refused on our page without PAR, before any redirect', async (t) => {
  const url = `${front.url}/authorize?${new URLSearchParams({ client_id: 'bank', redirect_uri: BANK_CB, response_type: 'code', scope: 'orders:read', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`
  await refusedOnPage(t, url, 'invalid_request')
})

t.test('a request_uri that is not from /par is refused, never fetched', async (t) => {
  await refusedOnPage(t, authorizeWith('bank', 'https://evil.example/request.jwt'), 'request_uri_not_supported')
})

t.test('PAR with bad client authentication: 401 invalid_client, nothing stored', async (t) => {
  const before = front.store.pushedRequests.size
  const params = { redirect_uri: BANK_CB, response_type: 'code', scope: 'orders:read', code_challenge: pkce().challenge, code_challenge_method: 'S256' }
  const forged = await reply(
    postForm(`${front.url}/par`, {
      ...params,
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: await assertionFor('bank', strangerKey.privateKey, 'bank-1'),
    }),
  )
  refusedAtPar(t, forged, 'invalid_client', 401)
  refusedAtPar(t, await reply(postForm(`${front.url}/par`, { ...params, client_id: 'bank' })), 'invalid_client', 401)
  refusedAtPar(t, await reply(postForm(`${front.url}/par`, { ...params, client_id: 'web', client_secret: 'wrong' })), 'invalid_client', 401)
  t.equal(front.store.pushedRequests.size, before, 'nothing pushed')
})

t.test("/authorize's checks run at push time, answered as JSON to the client, never a redirect", async (t) => {
  const push = (over: Record<string, string>) =>
    reply(
      oauth.pushedAuthorizationRequest(
        as,
        bank,
        bankAuth,
        { redirect_uri: BANK_CB, response_type: 'code', scope: 'orders:read', code_challenge: pkce().challenge, code_challenge_method: 'S256', ...over },
        insecure,
      ),
    )
  refusedAtPar(t, await push({ redirect_uri: 'https://evil.example/cb' }), 'invalid_request')
  refusedAtPar(t, await push({ scope: 'admin' }), 'invalid_scope')
  refusedAtPar(t, await push({ response_type: 'token' }), 'unsupported_response_type')
  refusedAtPar(t, await push({ code_challenge_method: 'plain' }), 'invalid_request')
  refusedAtPar(t, await push({ request_uri: 'urn:ietf:params:oauth:request_uri:x' }), 'invalid_request')
})

t.test('JAR at /par: oauth4webapi issueRequestObject, pushed, then the code flow', async (t) => {
  const { verifier, challenge } = pkce()
  const params = {
    redirect_uri: SIGNER_CB,
    response_type: 'code',
    scope: 'orders:read',
    state: 'st-jar',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }
  const jwt = await oauth.issueRequestObject(as, signer, params, { key: signerKey.privateKey, kid: 'signer-1' })
  const pushed = await oauth.processPushedAuthorizationResponse(
    as,
    signer,
    await oauth.pushedAuthorizationRequest(as, signer, signerAuth, { request: jwt }, insecure),
  )
  const callback = await authorizeAs(new Browser(), authorizeWith('signer', pushed.request_uri))
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    signer,
    await oauth.authorizationCodeGrantRequest(
      as,
      signer,
      signerAuth,
      oauth.validateAuthResponse(as, signer, callback, 'st-jar'),
      SIGNER_CB,
      verifier,
      insecure,
    ),
  )
  t.equal(tokens.scope, 'orders:read')
})

t.test('JAR at /authorize: the claims replace the query, and the object is used once', async (t) => {
  const { verifier, challenge } = pkce()
  const params = {
    redirect_uri: SIGNER_CB,
    response_type: 'code',
    scope: 'orders:read',
    state: 'st-jar2',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }
  const jwt = await oauth.issueRequestObject(as, signer, params, { key: signerKey.privateKey, kid: 'signer-1' })
  const url = `${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', request: jwt, redirect_uri: 'https://evil.example/cb', state: 'evil' })}`
  const callback = await authorizeAs(new Browser(), url)
  t.equal(`${callback.origin}${callback.pathname}`, SIGNER_CB)
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    signer,
    await oauth.authorizationCodeGrantRequest(
      as,
      signer,
      signerAuth,
      oauth.validateAuthResponse(as, signer, callback, 'st-jar2'),
      SIGNER_CB,
      verifier,
      insecure,
    ),
  )
  t.equal(tokens.scope, 'orders:read')
  await refusedOnPage(t, url, 'invalid_request_object')
})

t.test('a client that must sign gets nothing for plain parameters, at /par or /authorize', async (t) => {
  const params = { redirect_uri: SIGNER_CB, response_type: 'code', scope: 'orders:read', code_challenge: pkce().challenge, code_challenge_method: 'S256' }
  refusedAtPar(t, await reply(oauth.pushedAuthorizationRequest(as, signer, signerAuth, params, insecure)), 'invalid_request')
  await refusedOnPage(t, `${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', ...params })}`, 'invalid_request')
})

t.test("the attacker's request objects: each refused with invalid_request_object, its cause logged, nothing pushed", async (t) => {
  const now = Math.floor(clock.now() / 1000)
  const before = front.store.pushedRequests.size
  const refused = async (jwt: string, cause: string): Promise<void> => {
    const from = front.logs.length
    refusedAtPar(t, await pushObject(jwt), 'invalid_request_object')
    const line = front.logs.slice(from).find((l) => l.msg === 'request refused')
    t.equal(line?.code, 'ERR_INVALID_REQUEST_OBJECT', `${cause}: code logged`)
    t.equal(line?.cause, `request object: ${cause}`, 'cause logged')
  }
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${(await requestObject()).split('.')[1]}.`
  await refused(unsigned, 'alg not allowed')
  // HMAC with the client's public key as the secret: the classic key-confusion forgery.
  const hmacKey = new TextEncoder().encode(JSON.stringify(signerKey.publicJwk))
  await refused(await requestObject({ header: { alg: 'HS256' }, key: hmacKey }), 'alg not allowed')
  await refused(await requestObject({ claims: { aud: 'https://other-as.example.com' } }), 'aud is not this issuer')
  await refused(await requestObject({ claims: { aud: [front.issuer, 'https://other-as.example.com'] } }), 'aud is not this issuer')
  await refused(await requestObject({ claims: { iss: 'bank' } }), 'ERR_JWT_CLAIM_VALIDATION_FAILED (iss)')
  await refused(await requestObject({ claims: { iat: now - 900, nbf: now - 900, exp: now - 300 } }), 'expired')
  await refused(await requestObject({ claims: { exp: now + 3600 } }), 'exp too far after nbf')
  await refused(await requestObject({ claims: { exp: now + 3600 }, omit: ['iat', 'nbf'] }), 'exp too far ahead')
  await refused(await requestObject({ omit: ['exp'] }), 'ERR_JWT_CLAIM_VALIDATION_FAILED (exp)')
  await refused(await requestObject({ omit: ['jti'] }), 'ERR_JWT_CLAIM_VALIDATION_FAILED (jti)')
  await refused(await requestObject({ claims: { client_id: 'bank' } }), 'client_id differs from the outer client_id')
  await refused(await requestObject({ claims: { request_uri: 'https://evil.example/r' } }), 'request_uri inside a request object')
  await refused(await requestObject({ key: strangerKey.privateKey }), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED')
  // A client without keys could not have signed one: request_not_supported (OIDC Core 6.1).
  refusedAtPar(
    t,
    await reply(postForm(`${front.url}/par`, { client_id: 'spa', request: await requestObject({ claims: { iss: 'spa', client_id: 'spa' } }) })),
    'request_not_supported',
  )
  const once = await requestObject()
  t.equal((await pushObject(once)).status, 201, 'a good object is pushed')
  await refused(once, 'jti replayed')
  t.equal(front.store.pushedRequests.size, before + 1, 'only the good one was kept')
})

t.test('a request object naming another client at /authorize is our page, never a redirect to its redirect_uri', async (t) => {
  const jwt = await requestObject({ claims: { redirect_uri: 'https://evil.example/cb', client_id: 'web' } })
  await refusedOnPage(t, `${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', request: jwt })}`, 'invalid_request_object')
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${jwt.split('.')[1]}.`
  await refusedOnPage(t, `${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', request: unsigned })}`, 'invalid_request_object')
})

t.test('a request object seen in the browser cannot authenticate its client at /par (cross-JWT confusion)', async (t) => {
  // A client that signs its request objects like assertions (sub = its id, typ JWT): the browser, and whoever reads its history, sees them.
  const seen = await requestObject({ claims: { sub: 'signer' }, header: { typ: 'JWT' } })
  const pushes = front.store.pushedRequests.size
  const r = await reply(postForm(`${front.url}/par`, { client_assertion_type: ASSERTION_TYPE, client_assertion: seen, request: await requestObject() }))
  refusedAtPar(t, r, 'invalid_client', 401)
  t.equal(front.store.pushedRequests.size, pushes, 'nothing pushed in its name')
  await refusedOnPage(t, `${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', request: seen })}`, 'invalid_request_object')
})

t.test('parameters sent beside a request object at /par are not read (RFC 9126 3)', async (t) => {
  const r = await pushObject(await requestObject(), { scope: 'admin', redirect_uri: 'https://evil.example/cb', response_type: 'token' })
  t.equal(r.status, 201, 'neither the bad scope nor the other redirect_uri was read')
})

t.test('one code per pushed request: a second consent for the same authorization (another tab) gets none', async (t) => {
  const { requestUri } = await push({ prompt: 'consent' })
  const browser = new Browser()
  const url = authorizeWith('bank', requestUri)
  const login = formWith(await (await browser.get(url)).text(), url, 'password')
  const afterLogin = await browser.submit(login, { username: 'alice', password: ALICE_PASSWORD })
  const { res: consentPage, url: at } = await browser.follow(afterLogin, login.action, new URL(front.url).origin)
  const consent = formWith(await consentPage.text(), at, 'decision')
  const before = codes.count
  // Both at once: each finds the authorization under way, only one takes it.
  const answers = await Promise.all([browser.submit(consent, { decision: 'allow' }), browser.submit(consent, { decision: 'allow' })])
  const withCode = answers.filter((r) => new URL(r.headers.get('location') ?? 'x:/').searchParams.get('code') !== null)
  t.equal(withCode.length, 1, 'one gets a code')
  const other = answers.find((r) => !withCode.includes(r))
  const said = other === undefined ? '' : `${other.headers.get('location') ?? ''} ${await other.text()}`
  t.match(said, /invalid_request_uri/, 'the other is told the request is used')
  const again = await browser.submit(consent, { decision: 'allow' })
  t.equal(again.status, 400, 'a third, later, is our page')
  t.equal(again.headers.get('location'), null)
  t.match(await again.text(), /Error code: <code>invalid_request_uri<\/code>/)
  t.equal(codes.count, before + 1, 'one code stored')
})

t.test('a DPoP proof at /par binds the code to its key (RFC 9449 10.1)', async (t) => {
  const key = await oauth.generateKeyPair('ES256')
  const DPoP = oauth.DPoP(bank, key)
  const { verifier, challenge } = pkce()
  const params = {
    redirect_uri: BANK_CB,
    response_type: 'code',
    scope: 'orders:read',
    state: 'st-dpop',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }
  const pushed = await oauth.processPushedAuthorizationResponse(
    as,
    bank,
    await oauth.pushedAuthorizationRequest(as, bank, bankAuth, params, { ...insecure, DPoP }),
  )
  const callback = oauth.validateAuthResponse(as, bank, await authorizeAs(new Browser(), authorizeWith('bank', pushed.request_uri)), 'st-dpop')
  const withoutProof = await reply(oauth.authorizationCodeGrantRequest(as, bank, bankAuth, callback, BANK_CB, verifier, insecure))
  t.equal(withoutProof.json?.error, 'invalid_grant', 'the code needs a proof by the key pushed with')
  const pushed2 = await oauth.processPushedAuthorizationResponse(
    as,
    bank,
    await oauth.pushedAuthorizationRequest(as, bank, bankAuth, params, { ...insecure, DPoP }),
  )
  const callback2 = oauth.validateAuthResponse(as, bank, await authorizeAs(new Browser(), authorizeWith('bank', pushed2.request_uri)), 'st-dpop')
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    bank,
    await oauth.authorizationCodeGrantRequest(as, bank, bankAuth, callback2, BANK_CB, verifier, { ...insecure, DPoP }),
  )
  t.equal(tokens.token_type.toLowerCase(), 'dpop')
  const other = await calculateJwkThumbprint(await exportJWK((await oauth.generateKeyPair('ES256')).publicKey))
  const mismatch = await reply(oauth.pushedAuthorizationRequest(as, bank, bankAuth, { ...params, dpop_jkt: other }, { ...insecure, DPoP }))
  refusedAtPar(t, mismatch, 'invalid_request')
})

t.test('par.required: every client must push; the metadata says so', async (t) => {
  const strict = await startFront(await frontYaml({ asExtra: '  par: { required: true, request_uri_ttl: 30s }' }))
  t.teardown(() => strict.close())
  const meta = (await reply(fetch(`${strict.url}/.well-known/oauth-authorization-server`))).json ?? {}
  t.equal(meta.require_pushed_authorization_requests, true)
  const res = await get(
    `${strict.url}/authorize?${new URLSearchParams({ client_id: 'web', redirect_uri: 'https://app.example.com/callback', response_type: 'code', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`,
  )
  t.equal(res.status, 400)
  t.equal(res.headers.get('location'), null, 'never redirected')
  t.match(res.text, /must push its authorization requests/)
  const pushed = await reply(
    postForm(`${strict.url}/par`, {
      client_id: 'spa',
      response_type: 'code',
      redirect_uri: 'https://spa.example.com/cb',
      scope: 'orders:read',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    }),
  )
  t.equal(pushed.status, 201, 'a public client pushes with its client_id alone')
  t.equal(pushed.json?.expires_in, 30)
})

t.test('a registered client may hold itself to pushed and signed requests (RFC 7591 metadata)', async (t) => {
  const register = async (body: Record<string, unknown>): Promise<Reply> =>
    reply(fetch(`${front.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
  const base = { redirect_uris: ['https://tool.example.com/cb'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], scope: 'orders:read' }
  const made = await register({ ...base, require_pushed_authorization_requests: true })
  t.equal(made.status, 201)
  t.equal(made.json?.require_pushed_authorization_requests, true, 'echoed as registered')
  const clientId = String(made.json?.client_id)
  const params = {
    client_id: clientId,
    response_type: 'code',
    redirect_uri: 'https://tool.example.com/cb',
    scope: 'orders:read',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  }
  await refusedOnPage(t, `${front.url}/authorize?${new URLSearchParams(params)}`, 'invalid_request')
  const pushed = await reply(postForm(`${front.url}/par`, params))
  t.equal(pushed.status, 201, 'it pushes with its client_id')
  const callback = await authorizeAs(new Browser(), authorizeWith(clientId, String(pushed.json?.request_uri)))
  t.type(callback.searchParams.get('code'), 'string')

  const unsigned = await register({ ...base, require_signed_request_object: true })
  t.equal(unsigned.status, 400)
  t.equal(unsigned.json?.error, 'invalid_client_metadata', 'a client without keys cannot sign request objects')
  const notBoolean = await register({ ...base, require_pushed_authorization_requests: 'yes' })
  t.equal(notBoolean.json?.error, 'invalid_client_metadata')
})

t.test('a store outage while resolving a request_uri is a 503 page, not a JSON answer to the browser', async (t) => {
  const down = await startFront()
  t.teardown(() => down.close())
  await down.store.close()
  const res = await get(`${down.url}/authorize?${new URLSearchParams({ client_id: 'web', request_uri: 'urn:ietf:params:oauth:request_uri:abc' })}`)
  t.equal(res.status, 503)
  t.equal(res.headers.get('location'), null)
  t.match(res.headers.get('content-type'), /^text\/html/)
  t.match(res.text, /Temporarily unavailable/)
})

t.test('a pushed request_uri posted straight to the login form skips nothing: refused, and not spent', async (t) => {
  const first = await push()
  const other = await push()
  const browser = new Browser()
  const url = authorizeWith('bank', first.requestUri)
  const login = formWith(await (await browser.get(url)).text(), url, 'password')
  const forged = { ...login, fields: { ...login.fields, request: new URLSearchParams({ client_id: 'bank', request_uri: other.requestUri }).toString() } }
  const res = await browser.submit(forged, { username: 'alice', password: ALICE_PASSWORD })
  t.equal(res.status, 400)
  t.equal(res.headers.get('location'), null, 'never redirected')
  t.match(await res.text(), /Error code: <code>invalid_request_uri<\/code>/)
  const callback = await authorizeAs(new Browser(), authorizeWith('bank', other.requestUri))
  t.type(callback.searchParams.get('code'), 'string', 'the pushed request is still there for /authorize')
})
