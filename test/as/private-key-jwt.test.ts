/**
 * private_key_jwt (RFC 7523 2.2, OIDC Core 9) for configured clients: the
 * client signs a JWT with its own key instead of sending a secret, at every
 * door a client authenticates (/token, /revoke, /introspect,
 * /device_authorization). oauth4webapi's PrivateKeyJwt drives the good path
 * unmodified; the attacker's assertions are made by hand with jose, one for
 * each check, and each must be refused with 401 invalid_client, the stable
 * code ERR_INVALID_CLIENT_ASSERTION and its cause in the log.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import * as oauth from 'oauth4webapi'
import { decodeJwt, exportJWK, exportPKCS8, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { basic, DEVICE_GRANT, send, startAs, type Harness, type Reply } from '../helpers/as-back.js'
import { findAuthlibPython, runPython } from '../helpers/authlib.js'
import { postForm, reply, listen } from '../helpers/http.js'

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
const insecure = { [oauth.allowInsecureRequests]: true } as const

interface KeyPair {
  privateKey: CryptoKey
  publicJwk: JWK
}

async function keyPair(alg: 'ES256' | 'RS256' | 'EdDSA', kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } }
}

/** A JWK Set server that counts its fetches and serves whatever set the test puts in it. */
async function jwksServer(): Promise<{ url: string; set(keys: JWK[]): void; fetches(): number; close(): Promise<void> }> {
  let keys: JWK[] = []
  let fetches = 0
  const server: Server = createServer((_req, res) => {
    fetches++
    res.setHeader('content-type', 'application/json')
    res.setHeader('cache-control', 'max-age=3600')
    res.end(JSON.stringify({ keys }))
  })
  const { port } = await listen(server)
  return {
    url: `http://127.0.0.1:${port}/jwks`,
    set: (k) => {
      keys = k
    },
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

interface AssertionOver {
  header?: Record<string, unknown>
  claims?: Record<string, unknown>
  /** Claims to leave out. */
  omit?: string[]
  key?: CryptoKey | Uint8Array
  alg?: string
}

t.test('private_key_jwt for configured clients', async (t) => {
  const inline = await keyPair('ES256', 'inline-1')
  const remote1 = await keyPair('RS256', 'remote-1')
  const remote2 = await keyPair('EdDSA', 'remote-2')
  const stranger = await keyPair('ES256', 'inline-1')
  // authlib signs with RS256 and names no kid: the client's only RS256 key is used.
  const python = await keyPair('RS256', 'py')
  const { kid: _kid, ...pythonJwk } = python.publicJwk
  const keys = await jwksServer()
  keys.set([remote1.publicJwk])
  t.teardown(() => keys.close())

  // oauth4webapi dates its assertions with Date.now(): the server's clock starts there.
  const clock = new ManualClock(Date.now())
  const h: Harness = await startAs({
    clock,
    // Every check below is sent many times from this one address: the throttle over them is client-auth-assertions.test.ts's.
    rateLimit: { client_auth_max_failures: 1000, client_auth_address_max_failures: 1000 },
    clientsExtra: [
      '    - client_id: keyed',
      '      type: confidential',
      '      token_endpoint_auth_method: private_key_jwt',
      `      jwks: ${JSON.stringify({ keys: [inline.publicJwk] })}`,
      `      grant_types: [client_credentials, "${DEVICE_GRANT}"]`,
      '      scopes: [orders:read]',
      '      introspect: true',
      '    - client_id: keyed-python',
      '      type: confidential',
      '      token_endpoint_auth_method: private_key_jwt',
      `      jwks: ${JSON.stringify({ keys: [pythonJwk] })}`,
      '      grant_types: [client_credentials]',
      '      scopes: [orders:read]',
      '      introspect: true',
      '    - client_id: keyed-remote',
      '      type: confidential',
      '      token_endpoint_auth_method: private_key_jwt',
      `      jwks_uri: ${keys.url}`,
      '      grant_types: [client_credentials]',
      '      scopes: [orders:read]',
    ].join('\n'),
  })
  t.teardown(() => h.close())
  const tokenUrl = `${h.url}/token`

  const as: oauth.AuthorizationServer = await oauth.processDiscoveryResponse(
    new URL(h.issuer),
    await oauth.discoveryRequest(new URL(h.issuer), { algorithm: 'oauth2', ...insecure }),
  )

  /** A client assertion for `keyed` as a well-behaved client makes it, with the test's changes. */
  async function assertion(o: AssertionOver = {}, clientId = 'keyed'): Promise<string> {
    const now = Math.floor(clock.now() / 1000)
    const claims: Record<string, unknown> = { iss: clientId, sub: clientId, aud: h.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID(), ...o.claims }
    for (const name of o.omit ?? []) delete claims[name]
    return new SignJWT(claims).setProtectedHeader({ alg: o.alg ?? 'ES256', kid: 'inline-1', ...o.header }).sign(o.key ?? inline.privateKey)
  }

  function withAssertion(value: string, extra: Record<string, string> = {}): Promise<Reply> {
    return reply(postForm(tokenUrl, { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: value, ...extra }))
  }

  /** The refusal a client sees, and the stable code and cause in the log. */
  async function refused(t: Test, value: string, cause: string, extra: Record<string, string> = {}): Promise<void> {
    const before = h.logs.length
    const r = await withAssertion(value, extra)
    t.equal(r.status, 401, `${cause}: status`)
    t.same(r.json, { error: 'invalid_client', error_description: 'The client assertion is invalid' }, cause)
    t.equal(r.headers.get('www-authenticate'), 'Basic realm="bearward"')
    const line = h.logs.slice(before).find((l) => l.msg === 'request refused')
    t.equal(line?.code, 'ERR_INVALID_CLIENT_ASSERTION', `${cause}: code logged`)
    t.equal(line?.cause, `client assertion: ${cause}`, 'cause logged')
  }

  t.test('AS metadata advertises private_key_jwt and its algorithms (no none, no HMAC)', async (t) => {
    const m = (await send(`${h.url}/.well-known/oauth-authorization-server`)).json ?? {}
    for (const field of ['token_endpoint', 'revocation_endpoint', 'introspection_endpoint']) {
      t.ok((m[`${field}_auth_methods_supported`] as string[]).includes('private_key_jwt'), field)
      const algs = m[`${field}_auth_signing_alg_values_supported`] as string[]
      t.ok(algs.includes('ES256') && algs.includes('RS256') && algs.includes('EdDSA'), `${field} algs`)
      t.notOk(
        algs.some((a) => a === 'none' || a.startsWith('HS')),
        `${field}: no none, no HMAC`,
      )
    }
  })

  t.test('oauth4webapi PrivateKeyJwt, unmodified, at /token, /introspect, /revoke and /device_authorization', async (t) => {
    const client: oauth.Client = { client_id: 'keyed' }
    const auth = oauth.PrivateKeyJwt({ key: inline.privateKey, kid: 'inline-1' })
    const res = await oauth.clientCredentialsGrantRequest(as, client, auth, new URLSearchParams({ scope: 'orders:read' }), insecure)
    const tokens = await oauth.processClientCredentialsResponse(as, client, res)
    t.equal(decodeJwt(tokens.access_token).sub, 'keyed')
    t.equal(decodeJwt(tokens.access_token).client_id, 'keyed')

    const seen = await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, auth, tokens.access_token, insecure))
    t.equal(seen.active, true)
    t.equal(seen.client_id, 'keyed')
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, tokens.access_token, insecure))
    const after = await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, auth, tokens.access_token, insecure))
    t.equal(after.active, false, 'revoked with private_key_jwt')

    const device = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(as, client, auth, new URLSearchParams({ scope: 'orders:read' }), insecure),
    )
    t.type(device.device_code, 'string')
  })

  t.test('aud may be the issuer, the token endpoint or the endpoint called', async (t) => {
    t.equal((await withAssertion(await assertion({ claims: { aud: tokenUrl } }))).status, 200, 'token endpoint')
    t.equal((await withAssertion(await assertion({ claims: { aud: [h.issuer] } }))).status, 200, 'a list of one')
    const revoke = await reply(
      postForm(`${h.url}/revoke`, {
        token: 'x',
        client_assertion_type: ASSERTION_TYPE,
        client_assertion: await assertion({ claims: { aud: `${h.url}/revoke` } }),
      }),
    )
    t.equal(revoke.status, 200, 'the revocation endpoint at /revoke')
    t.equal((await withAssertion(await assertion({ claims: { aud: `${h.url}/revoke` } }))).status, 401, 'but not at /token')
  })

  t.test('a replayed assertion is refused: jti is single use', async (t) => {
    const once = await assertion()
    t.equal((await withAssertion(once)).status, 200)
    await refused(t, once, 'jti replayed')
  })

  t.test("the attacker's assertions: each refused with its own cause", async (t) => {
    const now = Math.floor(clock.now() / 1000)
    await refused(t, await assertion({ claims: { aud: 'https://other-as.example.com' } }), 'aud is not this server')
    await refused(t, await assertion({ claims: { aud: [h.issuer, 'https://other-as.example.com'] } }), 'aud is not a single value')
    await refused(t, await assertion({ claims: { exp: now + 3600 }, omit: ['iat'] }), 'exp too far ahead')
    await refused(t, await assertion({ claims: { iat: now - 400, exp: now + 3600 } }), 'iat too old')
    await refused(t, await assertion({ claims: { exp: now - 120, iat: now - 180 } }), 'expired')
    await refused(t, await assertion({ claims: { iat: now + 600 } }), 'iat in the future')
    await refused(t, await assertion({ omit: ['jti'] }), 'ERR_JWT_CLAIM_VALIDATION_FAILED (jti)')
    await refused(t, await assertion({ omit: ['exp'] }), 'ERR_JWT_CLAIM_VALIDATION_FAILED (exp)')
    await refused(t, await assertion({ claims: { jti: 'j'.repeat(300) } }), 'jti missing or too long')
    await refused(t, await assertion({ claims: { iss: 'web' } }), 'ERR_JWT_CLAIM_VALIDATION_FAILED (iss)')
    await refused(t, await assertion({ key: stranger.privateKey }), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED')
    await refused(t, await assertion({ header: { kid: 'nope' } }), 'no key of the client for kid and alg')
    await refused(t, await assertion({ header: { typ: 'at+jwt' } }), 'typ is not a client assertion type')
    await refused(t, await assertion({ header: { typ: 'oauth-id-jag+jwt' } }), 'typ is not a client assertion type')
    await refused(t, await assertion({ header: { jku: 'https://evil.example.com/jwks' } }), 'header jku present')
    await refused(t, await assertion({ header: { jwk: stranger.publicJwk }, key: stranger.privateKey }), 'header jwk present')
    // The client's public key used as an HMAC secret: the classic algorithm confusion.
    const publicAsSecret = new TextEncoder().encode(JSON.stringify(inline.publicJwk))
    await refused(t, await assertion({ alg: 'HS256', key: publicAsSecret }), 'alg not allowed')
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(
      JSON.stringify({ iss: 'keyed', sub: 'keyed', aud: h.issuer, exp: now + 60, jti: 'n1' }),
    ).toString('base64url')}.`
    await refused(t, unsigned, 'alg not allowed')
    await refused(t, 'a.b', 'not a compact JWS')
    await refused(t, `${'e'.repeat(17000)}.e.e`, 'too large')
    // Another client's id beside the assertion: the assertion speaks for `keyed`.
    await refused(t, await assertion(), 'sub differs from client_id', { client_id: 'service' })
  })

  t.test('a client not registered for private_key_jwt, or unknown, cannot use an assertion', async (t) => {
    await refused(t, await assertion({}, 'service'), 'the client is not registered for private_key_jwt')
    await refused(t, await assertion({}, 'ghost'), 'unknown client')
  })

  t.test('a private_key_jwt client cannot fall back to a secret or to none', async (t) => {
    const noAuth = await reply(postForm(tokenUrl, { grant_type: 'client_credentials', client_id: 'keyed' }))
    t.equal(noAuth.status, 401)
    t.equal(noAuth.json?.error, 'invalid_client')
    const secret = await reply(postForm(tokenUrl, { grant_type: 'client_credentials' }, { authorization: basic('keyed', 'anything') }))
    t.equal(secret.status, 401)
    t.equal(secret.json?.error, 'invalid_client')
  })

  t.test('an assertion and a secret at once is invalid_request; a foreign assertion type is invalid_client', async (t) => {
    const both = await reply(
      postForm(
        tokenUrl,
        { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion() },
        { authorization: basic('service') },
      ),
    )
    t.equal(both.status, 400)
    t.same(both.json, { error: 'invalid_request', error_description: 'Use only one client authentication method' })
    const saml = await withAssertion(await assertion(), { client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer' })
    t.equal(saml.status, 401)
    t.equal(saml.json?.error, 'invalid_client')
    const repeated = await reply(
      postForm(tokenUrl, [
        ['grant_type', 'client_credentials'],
        ['client_assertion_type', ASSERTION_TYPE],
        ['client_assertion', await assertion()],
        ['client_assertion', await assertion()],
      ]),
    )
    t.equal(repeated.status, 400)
    t.equal(repeated.json?.error, 'invalid_request', 'a repeated client_assertion is refused')
  })

  t.test("Python's authlib (OAuth2Session with PrivateKeyJWT), unmodified: a token, then its revocation", async (t) => {
    const py = findAuthlibPython()
    const dir = await mkdtemp(join(tmpdir(), 'bw-authlib-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const keyFile = join(dir, 'client.pem')
    await writeFile(keyFile, await exportPKCS8(python.privateKey))
    const script = resolve('test/fixtures/authlib/private_key_jwt.py')
    const out = JSON.parse(await runPython(py, [script, 'keyed-python', keyFile, tokenUrl, `${h.url}/revoke`])) as {
      token: { access_token: string; token_type: string; scope: string }
      revocation_status: number
    }
    t.equal(out.token.token_type, 'Bearer')
    t.equal(out.token.scope, 'orders:read')
    t.equal(decodeJwt(out.token.access_token).sub, 'keyed-python')
    t.equal(out.revocation_status, 200)
    const client: oauth.Client = { client_id: 'keyed-python' }
    const auth = oauth.PrivateKeyJwt({ key: python.privateKey })
    const seen = await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, auth, out.token.access_token, insecure))
    t.equal(seen.active, false, 'the revocation authlib sent took effect')
  })

  t.test('jwks_uri: fetched once, refetched for an unknown kid, at most once per cooldown', async (t) => {
    const remoteAssertion = (pair: KeyPair, alg: string, kid: string): Promise<string> =>
      assertion({ key: pair.privateKey, alg, header: { kid } }, 'keyed-remote')
    const first = await withAssertion(await remoteAssertion(remote1, 'RS256', 'remote-1'))
    t.equal(first.status, 200, first.text)
    t.equal(keys.fetches(), 1)
    t.equal((await withAssertion(await remoteAssertion(remote1, 'RS256', 'remote-1'))).status, 200)
    t.equal(keys.fetches(), 1, 'cached')

    // The client rotates its key: the new kid is unknown, so the set is fetched again.
    keys.set([remote1.publicJwk, remote2.publicJwk])
    const rotated = await withAssertion(await remoteAssertion(remote2, 'EdDSA', 'remote-2'))
    t.equal(rotated.status, 200, rotated.text)
    t.equal(keys.fetches(), 2)

    // Random kids within the cooldown: refused without a fetch each.
    for (let i = 0; i < 5; i++) {
      const r = await withAssertion(await remoteAssertion(remote2, 'EdDSA', `random-${i}`))
      t.equal(r.status, 401)
    }
    t.equal(keys.fetches(), 2, 'no fetch per unknown kid within the cooldown')
    clock.advance(31_000)
    t.equal((await withAssertion(await remoteAssertion(remote2, 'EdDSA', 'random-x'))).status, 401)
    t.equal(keys.fetches(), 3, 'one fetch once the cooldown has passed')
  })
})
