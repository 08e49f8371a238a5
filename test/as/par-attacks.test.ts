/**
 * The adversarial pass over POST /par and request objects (issue 40): what
 * test/as/par.test.ts does not already send. Every request is made by hand
 * (jose, node:crypto), on the server's ManualClock, so the seconds at the
 * edges of a request object's life can be hit exactly. Each refusal is
 * checked as the client or the browser sees it, and for what it left behind:
 * nothing pushed, no code stored.
 */
import { KeyObject, sign as signWith } from 'node:crypto'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose'
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { Browser, countCodes, frontYaml, get, pkce, startFront } from '../helpers/as-front.js'
import { postForm, reply, type Reply } from '../helpers/http.js'
import { ASSERTION_TYPE, clientKeyPair as keyPair, keyedClientLines } from '../helpers/keyed-clients.js'
import { h2Request, openSession } from '../helpers/http2.js'

const SIGNER_CB = 'https://signer.example.com/cb'
const SKEW_SEC = 30

const signerKey = await keyPair('signer-1')
const bankKey = await keyPair('bank-1')
const strangerKey = await keyPair('stranger-1')

// 900 ms into a second: a record made now, kept for whole seconds, ends 900 ms into a later second.
const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000 + 900)
const front = await startFront(
  await frontYaml({
    clientsExtra: [
      ...keyedClientLines({
        clientId: 'signer',
        name: 'Signer',
        jwk: signerKey.publicJwk,
        redirectUri: SIGNER_CB,
        grantTypes: ['authorization_code'],
        scopes: ['orders:read'],
      }),
      ...keyedClientLines({
        clientId: 'bank',
        name: 'Bank',
        jwk: bankKey.publicJwk,
        redirectUri: 'https://bank.example.com/cb',
        grantTypes: ['authorization_code'],
        scopes: ['orders:read'],
      }),
    ].join('\n'),
  }),
  { clock },
)
t.teardown(() => front.close())
const codes = countCodes(front.store)

const nowSec = (): number => Math.floor(clock.now() / 1000)

/** A client assertion of `signer` for /par, dated by the server's clock. */
function assertion(o: { iat?: number; exp?: number; jti?: string } = {}): Promise<string> {
  const now = nowSec()
  return new SignJWT({ iss: 'signer', sub: 'signer', aud: front.issuer, iat: o.iat ?? now, exp: o.exp ?? now + 60, jti: o.jti ?? crypto.randomUUID() })
    .setProtectedHeader({ alg: 'ES256', kid: 'signer-1' })
    .sign(signerKey.privateKey)
}

/** The claims of a good request object of `signer`, with the test's changes. */
function claimsOf(over: Record<string, unknown> = {}, omit: string[] = []): Record<string, unknown> {
  const now = nowSec()
  const claims: Record<string, unknown> = {
    iss: 'signer',
    aud: front.issuer,
    iat: now,
    exp: now + 60,
    jti: crypto.randomUUID(),
    client_id: 'signer',
    response_type: 'code',
    redirect_uri: SIGNER_CB,
    scope: 'orders:read',
    state: 'st-attack',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    ...over,
  }
  for (const name of omit) delete claims[name]
  return claims
}

const b64 = (value: unknown): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')

/** A compact ES256 JWS signed by hand: any header jose would refuse to make (crit, b64), any payload segment. */
function signRaw(header: Record<string, unknown>, payloadSegment: string, key: CryptoKey = signerKey.privateKey): string {
  const input = `${b64(header)}.${payloadSegment}`
  const signature = signWith('sha256', Buffer.from(input), { key: KeyObject.from(key), dsaEncoding: 'ieee-p1363' })
  return `${input}.${signature.toString('base64url')}`
}

/** A request object of `signer`, signed properly unless the test says otherwise. */
function requestObject(o: { claims?: Record<string, unknown>; omit?: string[]; header?: Record<string, unknown>; key?: CryptoKey } = {}): string {
  return signRaw({ alg: 'ES256', kid: 'signer-1', typ: 'oauth-authz-req+jwt', ...o.header }, b64(claimsOf(o.claims, o.omit)), o.key)
}

/** POST /par as `signer` (authenticated by its assertion) with these parameters. */
async function pushAs(params: Array<[string, string]>, headers: Record<string, string> = {}): Promise<Reply> {
  const auth: Array<[string, string]> = [
    ['client_assertion_type', ASSERTION_TYPE],
    ['client_assertion', await assertion()],
  ]
  return reply(postForm(`${front.url}/par`, [...params, ...auth], headers))
}

const pushObject = (jwt: string): Promise<Reply> => pushAs([['request', jwt]])

/** The JSON refusal at /par (RFC 9126 2.3), with nothing pushed. */
function refusedAtPar(t: Test, r: Reply, error: string, before: number, status = 400): void {
  t.equal(r.status, status, `${error}: status`)
  t.equal(r.json?.error, error, `${error}: the error`)
  t.equal(r.headers.get('location'), null, 'never a redirect')
  t.equal(r.headers.get('cache-control'), 'no-store', `${error}: no-store`)
  t.equal(front.store.pushedRequests.size, before, 'nothing pushed')
}

/** The cause the last refusal logged. */
function lastCause(from: number): unknown {
  return front.logs.slice(from).find((l) => l.msg === 'request refused')?.cause
}

/** Our own error page at /authorize: 400, no Location, the error code shown, no code stored. */
async function refusedOnPage(t: Test, url: string, error: string): Promise<void> {
  const before = codes.count
  const res = await get(url)
  t.equal(res.status, 400, `${error}: 400`)
  t.equal(res.headers.get('location'), null, `${error}: never redirected`)
  t.match(res.text, new RegExp(`Error code: <code>${error}</code>`), `${error}: shown`)
  t.equal(codes.count, before, 'no code stored')
}

t.test('a request object replayed in the last second it is accepted is refused: its jti is remembered to the end of that second', async (t) => {
  // The longest life there is: accepted until exp plus the skew, the jti remembered as long.
  const iat = nowSec()
  const jwt = requestObject({ claims: { iat, exp: iat + 600 } })
  t.equal((await pushObject(jwt)).status, 201, 'pushed once')
  const before = front.store.pushedRequests.size
  // The last second in which it is not yet expired, later in that second than the first push was.
  clock.set((iat + 600 + SKEW_SEC - 1) * 1000 + 950)
  const from = front.logs.length
  refusedAtPar(t, await pushObject(jwt), 'invalid_request_object', before)
  t.equal(lastCause(from), 'request object: jti replayed')
  // One second on, it is too old whatever the store remembers.
  clock.advance(1000)
  refusedAtPar(t, await pushObject(jwt), 'invalid_request_object', before)
  clock.set(Math.floor(Date.now() / 1000) * 1000 + 900)
})

t.test('a request object whose exp is more than 10 minutes after its iat is refused, as one without iat or with nbf is', async (t) => {
  const before = front.store.pushedRequests.size
  const iat = nowSec()
  const from = front.logs.length
  refusedAtPar(t, await pushObject(requestObject({ claims: { iat, exp: iat + 3600 } })), 'invalid_request_object', before)
  t.equal(lastCause(from), 'request object: exp too far after iat')
  refusedAtPar(t, await pushObject(requestObject({ claims: { iat, exp: iat + 601 } })), 'invalid_request_object', before)
  const res = await get(`${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', request: requestObject({ claims: { iat, exp: iat + 3600 } }) })}`)
  t.equal(res.status, 400, 'at /authorize: our page')
  t.equal(res.headers.get('location'), null)
  t.match(res.text, /Error code: <code>invalid_request_object<\/code>/)
  t.equal((await pushObject(requestObject({ claims: { iat, exp: iat + 600 } }))).status, 201, 'ten minutes is fine')
})

t.test('a client assertion replayed at /par in the last second it is accepted is refused: its jti is remembered to the end of that second', async (t) => {
  const iat = nowSec()
  const used = await assertion({ iat, exp: iat + 3600 })
  const push = (): Promise<Reply> =>
    reply(
      postForm(`${front.url}/par`, [
        ['request', requestObject()],
        ['client_assertion_type', ASSERTION_TYPE],
        ['client_assertion', used],
      ]),
    )
  t.equal((await push()).status, 201, 'authenticated once')
  const before = front.store.pushedRequests.size
  clock.set((iat + 300 + SKEW_SEC) * 1000 + 950)
  refusedAtPar(t, await push(), 'invalid_client', before, 401)
  clock.set(Math.floor(Date.now() / 1000) * 1000 + 900)
})

t.test(
  'request objects with a crit, b64, key-location or nested header, JWE-shaped, oversized, or not yet valid: each invalid_request_object, nothing pushed',
  async (t) => {
    const before = front.store.pushedRequests.size
    const now = nowSec()
    const header = { alg: 'ES256', kid: 'signer-1', typ: 'oauth-authz-req+jwt' }
    const refused = async (name: string, jwt: string, cause: string): Promise<void> => {
      const from = front.logs.length
      refusedAtPar(t, await pushObject(jwt), 'invalid_request_object', before)
      t.equal(lastCause(from), `request object: ${cause}`, `${name}: ${cause}`)
    }
    await refused('crit naming an extension', signRaw({ ...header, crit: ['exp'], exp: now + 60 }, b64(claimsOf())), 'ERR_JOSE_NOT_SUPPORTED')
    // RFC 7797: with b64 false the signed "payload" is the raw text; it must not be read as base64url claims.
    await refused('b64 false', signRaw({ ...header, b64: false, crit: ['b64'] }, b64(claimsOf())), 'ERR_JWT_INVALID')
    const attackerJwk = { ...(await exportJWK(await generateKeyPair('ES256').then((p) => p.publicKey))) }
    await refused('jwk header with the attacker key', requestObject({ header: { jwk: attackerJwk }, key: strangerKey.privateKey }), 'header jwk present')
    await refused('jku header', requestObject({ header: { jku: 'https://evil.example/jwks' } }), 'header jku present')
    await refused('x5u header', requestObject({ header: { x5u: 'https://evil.example/cert.pem' } }), 'header x5u present')
    await refused('kid of another client', requestObject({ header: { kid: 'bank-1' }, key: bankKey.privateKey }), 'no key of the client for kid and alg')
    await refused('JWE shape', `${b64({ alg: 'RSA-OAEP', enc: 'A256GCM' })}.a.b.c.d`, 'not a compact JWS')
    await refused('over 16 KiB', requestObject({ claims: { state: 'x'.repeat(17 * 1024) } }), 'too large')
    await refused('nbf ahead', requestObject({ claims: { nbf: now + 120 } }), 'ERR_JWT_CLAIM_VALIDATION_FAILED (nbf)')
    await refused('iat ahead', requestObject({ claims: { iat: now + 120 } }), 'iat in the future')
    await refused('aud with a trailing slash', requestObject({ claims: { aud: `${front.issuer}/` } }), 'aud is not this issuer')
    await refused('aud of the token endpoint', requestObject({ claims: { aud: `${front.issuer}/token` } }), 'aud is not this issuer')
    await refused('a number for a string parameter', requestObject({ claims: { state: 42 } }), 'claim state is not a parameter value')
  },
)

t.test("/authorize's rules run on a request object's claims: response_mode, PKCE, plain, prompt=none, max_age, acr_values", async (t) => {
  const before = front.store.pushedRequests.size
  const json = async (claims: Record<string, unknown>, omit: string[] = []): Promise<Reply> => pushObject(requestObject({ claims, omit }))
  refusedAtPar(t, await json({ response_mode: 'fragment' }), 'invalid_request', before)
  refusedAtPar(t, await json({ response_mode: 'form_post' }), 'invalid_request', before)
  refusedAtPar(t, await json({}, ['code_challenge', 'code_challenge_method']), 'invalid_request', before)
  refusedAtPar(t, await json({ code_challenge_method: 'plain', code_challenge: 'a'.repeat(43) }), 'invalid_request', before)
  refusedAtPar(t, await json({ code_challenge_method: 'S512' }), 'invalid_request', before)
  refusedAtPar(t, await json({ max_age: -1 }), 'invalid_request_object', before)
  refusedAtPar(t, await json({ max_age: 'soon' }), 'invalid_request', before)
  refusedAtPar(t, await json({ prompt: 'none login' }), 'invalid_request', before)
  refusedAtPar(t, await json({ acr_values: Array.from({ length: 11 }, (_, i) => `a${i}`).join(' ') }), 'invalid_request', before)
  refusedAtPar(t, await json({ response_type: 'code token' }), 'unsupported_response_type', before)
  refusedAtPar(t, await json({ redirect_uri: 'https://signer.example.com/cb/' }), 'invalid_request', before)
  refusedAtPar(t, await json({ resource: ['https://api.example.com', 'https://other.example.com'] }), 'invalid_target', before)

  // At /authorize: prompt=none in the object, nobody signed in: login_required at the object's redirect_uri, no code.
  const now = codes.count
  const res = await get(
    `${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', request: requestObject({ claims: { prompt: 'none' } }), prompt: 'login' })}`,
  )
  t.equal(res.status, 302)
  const location = new URL(res.headers.get('location') ?? 'x:/')
  t.equal(`${location.origin}${location.pathname}`, SIGNER_CB)
  t.equal(location.searchParams.get('error'), 'login_required', "the object's prompt=none, not the query's prompt=login")
  t.equal(location.searchParams.get('state'), 'st-attack')
  t.equal(codes.count, now, 'no code')
})

t.test('parameter pollution at /par: request with request_uri, repeated request or parameters, another media type, too large a body', async (t) => {
  const before = front.store.pushedRequests.size
  refusedAtPar(
    t,
    await pushAs([
      ['request', requestObject()],
      ['request_uri', 'urn:ietf:params:oauth:request_uri:x'],
    ]),
    'invalid_request',
    before,
  )
  refusedAtPar(
    t,
    await pushAs([
      ['request', requestObject()],
      ['request', requestObject()],
    ]),
    'invalid_request',
    before,
  )
  refusedAtPar(
    t,
    await pushAs([
      ['request', requestObject()],
      ['request', ''],
    ]),
    'invalid_request',
    before,
  )
  refusedAtPar(t, await pushAs([['request_uri', '']]), 'invalid_request', before)
  const plain: Array<[string, string]> = [
    ['response_type', 'code'],
    ['redirect_uri', SIGNER_CB],
    ['code_challenge', pkce().challenge],
    ['code_challenge_method', 'S256'],
  ]
  refusedAtPar(t, await pushAs([...plain, ['scope', 'orders:read'], ['scope', 'orders:read']]), 'invalid_request', before)
  refusedAtPar(t, await pushAs([...plain, ['redirect_uri', 'https://evil.example/cb']]), 'invalid_request', before)
  refusedAtPar(t, await pushAs([...plain, ['state', 'a'], ['state', 'b']]), 'invalid_request', before)
  // Authenticated as signer by its assertion, naming bank in the form: refused, not pushed for either.
  refusedAtPar(t, await pushAs([...plain, ['client_id', 'bank']]), 'invalid_client', before, 401)
  const asJson = await reply(
    fetch(`${front.url}/par`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request: requestObject(), client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion() }),
    }),
  )
  refusedAtPar(t, asJson, 'invalid_request', before)
  refusedAtPar(t, await pushAs([...plain, ['filler', 'x'.repeat(70 * 1024)]]), 'payload_too_large', before, 413)
  const withCharset = await pushAs([...plain, ['scope', 'orders:read']], { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' })
  t.equal(withCharset.status, 201, 'a charset parameter is fine')
})

t.test('a request_uri spelled another way, or sent with a request, at /authorize: our page, and the pushed request is not spent', async (t) => {
  const pushed = await pushObject(requestObject())
  t.equal(pushed.status, 201)
  const uri = String(pushed.json?.request_uri)
  const at = (params: Record<string, string>): string => `${front.url}/authorize?${new URLSearchParams({ client_id: 'signer', ...params })}`
  await refusedOnPage(t, at({ request_uri: uri.toUpperCase() }), 'request_uri_not_supported')
  await refusedOnPage(t, at({ request_uri: uri.replace('urn:', 'URN:') }), 'request_uri_not_supported')
  await refusedOnPage(t, at({ request_uri: encodeURIComponent(uri) }), 'request_uri_not_supported')
  await refusedOnPage(t, at({ request_uri: ` ${uri}` }), 'request_uri_not_supported')
  await refusedOnPage(t, at({ request_uri: `${uri} ` }), 'invalid_request_uri')
  await refusedOnPage(t, at({ request_uri: uri, request: requestObject() }), 'invalid_request')
  await refusedOnPage(
    t,
    `${front.url}/authorize?client_id=signer&request_uri=${encodeURIComponent(uri)}&request_uri=${encodeURIComponent(uri)}`,
    'invalid_request',
  )
  await refusedOnPage(t, `${front.url}/authorize?client_id=signer&client_id=bank&request_uri=${encodeURIComponent(uri)}`, 'invalid_request')
  const page = await new Browser().get(at({ request_uri: uri }))
  t.equal(page.status, 200, 'the real request_uri still starts the authorization')
  await page.text()
})

t.test('the store down during a push: 503 JSON to the client, no request_uri handed out', async (t) => {
  const down = await startFront(
    await frontYaml({
      clientsExtra: [
        '    - client_id: signer',
        '      type: confidential',
        '      token_endpoint_auth_method: private_key_jwt',
        `      jwks: ${JSON.stringify({ keys: [signerKey.publicJwk] })}`,
        `      redirect_uris: [${SIGNER_CB}]`,
        '      grant_types: [authorization_code]',
        '      scopes: [orders:read]',
      ].join('\n'),
    }),
  )
  t.teardown(() => down.close())
  await down.store.close()
  const now = Math.floor(down.clock.now() / 1000)
  const assertionThere = await new SignJWT({ iss: 'signer', sub: 'signer', aud: down.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: 'ES256', kid: 'signer-1' })
    .sign(signerKey.privateKey)
  const r = await reply(
    postForm(`${down.url}/par`, {
      response_type: 'code',
      redirect_uri: SIGNER_CB,
      scope: 'orders:read',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: assertionThere,
    }),
  )
  t.equal(r.status, 503)
  t.equal(r.json?.error, 'temporarily_unavailable')
  t.equal(r.headers.get('cache-control'), 'no-store')
  t.equal(r.headers.get('location'), null)
  t.equal(r.json?.request_uri, undefined, 'no request_uri handed out')
})

t.test('/par over HTTP/2 (h2c): the same request object pushes once; a lowercase method, two DPoP headers or too large a body push nothing', async (t) => {
  const h2 = await startFront(
    await frontYaml({
      topExtra: 'http2: { cleartext: true }',
      clientsExtra: [
        '    - client_id: signer',
        '      type: confidential',
        '      token_endpoint_auth_method: private_key_jwt',
        `      jwks: ${JSON.stringify({ keys: [signerKey.publicJwk] })}`,
        `      redirect_uris: [${SIGNER_CB}]`,
        '      grant_types: [authorization_code]',
        '      scopes: [orders:read]',
      ].join('\n'),
    }),
    { clock },
  )
  t.teardown(() => h2.close())
  const session = await openSession(h2.url)
  t.teardown(() => session.close())
  const object = (): string => requestObject({ claims: { aud: h2.issuer } })
  // A fresh client assertion each time: what is replayed below is the request object only.
  const form = async (jwt = object()): Promise<string> => {
    const now = nowSec()
    const auth = await new SignJWT({ iss: 'signer', sub: 'signer', aud: h2.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'signer-1' })
      .sign(signerKey.privateKey)
    return new URLSearchParams({ request: jwt, client_assertion_type: ASSERTION_TYPE, client_assertion: auth }).toString()
  }
  const post = (body: string, headers: Record<string, string | string[]> = {}) =>
    h2Request(session, { ':method': 'POST', ':path': '/par', 'content-type': 'application/x-www-form-urlencoded', ...headers }, body)
  const before = h2.store.pushedRequests.size
  const jwt = object()
  const first = await post(await form(jwt))
  t.equal(first.status, 201, 'pushed over HTTP/2')
  const again = await post(await form(jwt))
  t.equal(again.status, 400, 'the same object again over HTTP/2: refused')
  t.equal(JSON.parse(again.body).error, 'invalid_request_object')
  const onH1 = await reply(fetch(`${h2.url}/par`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: await form(jwt) }))
  t.equal(onH1.status, 400, 'and over HTTP/1.1: one jti record for both protocols')
  t.equal(h2.store.pushedRequests.size, before + 1, 'one push kept')

  const lower = await post(await form(), { ':method': 'post' })
  t.not(lower.status, 201, `lowercase method: ${lower.status}, not pushed`)
  const key = await generateKeyPair('ES256', { extractable: true })
  const proof = async (): Promise<string> =>
    new SignJWT({ jti: crypto.randomUUID(), htm: 'POST', htu: `${h2.issuer}/par`, iat: nowSec() })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(key.publicKey) })
      .sign(key.privateKey)
  const twoProofs = await post(await form(), { dpop: [await proof(), await proof()] })
  t.equal(twoProofs.status, 400, 'two DPoP headers over HTTP/2')
  t.equal(JSON.parse(twoProofs.body).error, 'invalid_dpop_proof')
  const big = await post(`${await form()}&filler=${'x'.repeat(70 * 1024)}`)
  t.equal(big.status, 413, 'a body over the limit, without Content-Length')
  t.equal(h2.store.pushedRequests.size, before + 1, 'nothing more pushed')
})
