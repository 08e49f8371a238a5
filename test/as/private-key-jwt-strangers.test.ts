/**
 * private_key_jwt for clients that described themselves: registered ones
 * (RFC 7591 `jwks` / `jwks_uri`) and Client ID Metadata Document clients.
 * Their `jwks_uri` was chosen by a stranger, so it is fetched like a
 * metadata document: https only, public addresses only (allow_hosts aside),
 * and this test checks nothing reached a loopback key server that was not
 * allowed. A real https server on localhost (a test CA) serves the document
 * and the keys.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import { basic, mintCode, startAs, type Harness } from '../helpers/as-back.js'
import { closeServer, listen, postForm, reply } from '../helpers/http.js'
import { selfSignedCert } from '../helpers/tls.js'

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
const REDIRECT = 'http://127.0.0.1:7777/cb'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

t.test('private_key_jwt for registered and metadata document clients', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bw-pkjwt-'))
  const cert = selfSignedCert(dir, 'keys')
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }
  const hits: string[] = []
  let handler: Handler = (_req, res) => res.end('{}')
  const https = createServer({ cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) }, (req, res) => {
    hits.push(req.url ?? '')
    handler(req, res)
  })
  const { port: httpsPort } = await listen(https)
  const base = `https://localhost:${httpsPort}`
  // A key server on loopback that no stranger may make us call.
  const loopbackHits: string[] = []
  const loopback = createHttpServer((req, res) => {
    loopbackHits.push(req.url ?? '')
    res.end(JSON.stringify({ keys: [publicJwk] }))
  })
  const { port: loopbackPort } = await listen(loopback)
  t.teardown(async () => {
    await closeServer(https)
    await new Promise<void>((resolve) => loopback.close(() => resolve()))
    await rm(dir, { recursive: true, force: true })
  })

  const docUrl = `${base}/client.json`
  handler = (req, res) => {
    res.setHeader('content-type', 'application/json')
    if (req.url === '/jwks') return res.end(JSON.stringify({ keys: [publicJwk] }))
    res.end(
      JSON.stringify({
        client_id: docUrl,
        client_name: 'Keyed Doc Client',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: `${base}/jwks`,
      }),
    )
  }

  const h: Harness = await startAs({
    asExtra: [
      '  registration: { enabled: true, scopes: [orders:read], rate_limit: { per_address: 1000, window: 1h } }',
      `  client_id_metadata_documents: { enabled: true, allow_hosts: [localhost], ca_file: ${cert.certFile}, scopes: [orders:read] }`,
    ].join('\n'),
  })
  t.teardown(() => h.close())

  async function assertion(clientId: string, key: CryptoKey = privateKey): Promise<string> {
    const now = Math.floor(h.clock.now() / 1000)
    return new SignJWT({ iss: clientId, sub: clientId, aud: h.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .sign(key)
  }

  async function register(metadata: Record<string, unknown>): Promise<{ status: number; json: Record<string, unknown> | null }> {
    const r = await reply(
      fetch(`${h.url}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt', ...metadata }),
      }),
    )
    return { status: r.status, json: r.json }
  }

  /** Redeem a code for `clientId` authenticated by `clientAssertion`. */
  async function redeem(clientId: string, clientAssertion: string): Promise<{ status: number; json: Record<string, unknown> | null }> {
    const m = await mintCode(h, { clientId, redirectUri: REDIRECT, effectiveRedirectUri: REDIRECT, scope: 'orders:read', nonce: null })
    const r = await reply(
      postForm(`${h.url}/token`, {
        grant_type: 'authorization_code',
        code: m.code,
        code_verifier: m.verifier,
        redirect_uri: REDIRECT,
        client_assertion_type: ASSERTION_TYPE,
        client_assertion: clientAssertion,
      }),
    )
    return { status: r.status, json: r.json }
  }

  t.test('a client registered with private_key_jwt and inline jwks gets no secret and authenticates with its key', async (t) => {
    const r = await register({ jwks: { keys: [publicJwk] } })
    t.equal(r.status, 201, JSON.stringify(r.json))
    t.notOk('client_secret' in (r.json ?? {}), 'no secret is issued')
    t.equal(r.json?.token_endpoint_auth_method, 'private_key_jwt')
    t.same(r.json?.jwks, { keys: [publicJwk] })
    const id = String(r.json?.client_id)
    const ok = await redeem(id, await assertion(id))
    t.equal(ok.status, 200, JSON.stringify(ok.json))
    const { privateKey: other } = await generateKeyPair('ES256')
    const forged = await redeem(id, await assertion(id, other))
    t.equal(forged.status, 401)
    t.equal(forged.json?.error, 'invalid_client')
    const byBasic = await reply(postForm(`${h.url}/token`, { grant_type: 'authorization_code', code: 'x' }, { authorization: basic(id, 'guess') }))
    t.equal(byBasic.status, 401, 'no secret to guess')
  })

  t.test('registration refuses keys it cannot use', async (t) => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /needs jwks or jwks_uri/],
      [{ jwks: { keys: [publicJwk] }, jwks_uri: `${base}/jwks` }, /must not both be present/],
      [{ jwks: { keys: [{ ...publicJwk, d: 'private-part' }] } }, /public keys only/],
      [{ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, /public keys only/],
      [{ jwks_uri: `http://127.0.0.1:${loopbackPort}/jwks` }, /https URL/],
      [{ jwks_uri: 'https://user:pw@keys.example.com/jwks' }, /without credentials/],
    ]
    for (const [metadata, message] of cases) {
      const r = await register(metadata)
      t.equal(r.status, 400, JSON.stringify(metadata))
      t.equal(r.json?.error, 'invalid_client_metadata')
      t.match(r.json?.error_description, message)
    }
  })

  t.test("a registered client's jwks_uri on a loopback address is never fetched", async (t) => {
    const r = await register({ jwks_uri: `https://127.0.0.1:${loopbackPort}/jwks` })
    t.equal(r.status, 201, 'https is accepted at registration; the address is judged at the connection')
    const id = String(r.json?.client_id)
    const before = h.logs.length
    const refused = await redeem(id, await assertion(id))
    t.equal(refused.status, 401)
    t.same(refused.json, { error: 'invalid_client', error_description: 'The client assertion is invalid' })
    t.equal(h.logs.slice(before).find((l) => l.msg === 'request refused')?.cause, 'client assertion: jwks_uri could not be fetched')
    t.same(loopbackHits, [], 'nothing reached the loopback key server')
  })

  t.test('a metadata document client with private_key_jwt and jwks_uri', async (t) => {
    const ok = await redeem(docUrl, await assertion(docUrl))
    t.equal(ok.status, 200, JSON.stringify(ok.json))
    t.ok(hits.includes('/client.json') && hits.includes('/jwks'), 'the document and its keys were fetched')
    const replay = await assertion(docUrl)
    t.equal((await redeem(docUrl, replay)).status, 200)
    const again = await redeem(docUrl, replay)
    t.equal(again.status, 401, 'its jti is single use too')
    const noAuth = await reply(postForm(`${h.url}/token`, { grant_type: 'authorization_code', code: 'x', client_id: docUrl }))
    t.equal(noAuth.status, 401, 'a private_key_jwt document client cannot act as a public one')
  })
})
