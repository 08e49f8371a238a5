/**
 * A refused client assertion counts as a failed client authentication, in
 * the same limit per (client_id, address) and per address as a wrong secret
 * (docs/throttling.md): past `client_auth_max_failures`, that address gets
 * the same 429 invalid_client with Retry-After, even for a good assertion,
 * until the window passes. Time is the harness's ManualClock: no sleeps.
 */
import t from 'tap'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import { epochSeconds } from '../../src/clock.js'
import { startAs, type Harness, type Reply } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
const K8S = 'https://kubernetes.default.svc'
const SERVICE_ACCOUNT = 'system:serviceaccount:billing:api'

async function keyPair(kid: string): Promise<{ privateKey: CryptoKey; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' } }
}

t.test('failed client assertions count in the client-authentication limit', async (t) => {
  const keyed = await keyPair('k1')
  const other = await keyPair('k2')
  const k8s = await keyPair('k8s-1')
  const stranger = await keyPair('k1')
  const h: Harness = await startAs({
    asExtra: [
      '  assertion_issuers:',
      `    - { issuer: "${K8S}", kind: workload, jwks: ${JSON.stringify({ keys: [k8s.publicJwk] })}, audience: bearward-test, subjects: { "${SERVICE_ACCOUNT}": billing } }`,
    ].join('\n'),
    clientsExtra: [
      `    - { client_id: keyed, type: confidential, token_endpoint_auth_method: private_key_jwt, jwks: ${JSON.stringify({ keys: [keyed.publicJwk] })}, grant_types: [client_credentials], scopes: [orders:read] }`,
      `    - { client_id: keyed-other, type: confidential, token_endpoint_auth_method: private_key_jwt, jwks: ${JSON.stringify({ keys: [other.publicJwk] })}, grant_types: [client_credentials], scopes: [orders:read] }`,
      '    - { client_id: billing, type: confidential, token_endpoint_auth_method: private_key_jwt, grant_types: [client_credentials], scopes: [orders:read] }',
    ].join('\n'),
  })
  t.teardown(() => h.close())
  const { clientAuthMaxFailures: max, windowSec } = h.as.as.rateLimit

  async function assertion(clientId: string, o: { key?: CryptoKey; kid?: string; aud?: string } = {}): Promise<string> {
    const now = epochSeconds(h.clock)
    const claims = { iss: clientId, sub: clientId, aud: o.aud ?? h.issuer, iat: now, exp: now + 60, jti: crypto.randomUUID() }
    const own = clientId === 'keyed' ? keyed : other
    return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: o.kid ?? own.publicJwk.kid ?? '' }).sign(o.key ?? own.privateKey)
  }

  const send = (value: string, address: string): Promise<Reply> =>
    reply(
      postForm(
        `${h.url}/token`,
        { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: value },
        { 'x-forwarded-for': address },
      ),
    )

  t.test('bad signature, wrong aud, replayed jti, unknown kid: then a good assertion is refused until the window passes', async (t) => {
    const address = '198.51.100.21'
    const good = await assertion('keyed')
    t.equal((await send(good, address)).status, 200, 'a good assertion first')
    const bad: Array<[string, string]> = [
      ['replayed jti', good],
      ['bad signature', await assertion('keyed', { key: stranger.privateKey })],
      ['wrong aud', await assertion('keyed', { aud: 'https://other-as.example.com' })],
      ['unknown kid', await assertion('keyed', { kid: 'nope' })],
    ]
    while (bad.length < max) bad.push(['bad signature', await assertion('keyed', { key: stranger.privateKey })])
    for (const [i, [what, value]] of bad.slice(0, max).entries()) {
      const r = await send(value, address)
      t.equal(r.status, 401, `failure ${i + 1} (${what}): 401`)
      t.equal(r.json?.error, 'invalid_client')
    }
    h.clock.advance(20_000)
    const locked = await send(await assertion('keyed'), address)
    t.equal(locked.status, 429, 'a good assertion from the failing address is refused')
    t.same(locked.json, { error: 'invalid_client', error_description: 'Too many failed client authentications from this address; try again later' })
    t.equal(locked.headers.get('retry-after'), String(windowSec - 20), 'Retry-After: the rest of the window, as for secrets')
    t.equal(locked.headers.get('cache-control'), 'no-store')

    t.equal((await send(await assertion('keyed-other'), address)).status, 200, "another client from that address is not locked out by this one's failures")
    t.equal((await send(await assertion('keyed'), '192.0.2.44')).status, 200, 'the client from its own address is not refused')

    h.clock.advance((windowSec - 20) * 1000)
    t.equal((await send(await assertion('keyed'), address)).status, 200, 'the window passes')
  })

  t.test('a locked address gets no verification: the refusal is the lock, not the assertion', async (t) => {
    const address = '198.51.100.22'
    for (let i = 0; i < max; i++) t.equal((await send(await assertion('keyed', { aud: 'https://elsewhere.example' }), address)).status, 401)
    const before = h.logs.length
    const r = await send(await assertion('keyed', { key: stranger.privateKey }), address)
    t.equal(r.status, 429)
    t.equal(h.logs.slice(before).find((l) => l.msg === 'request refused')?.code, 'ERR_CLIENT_AUTHENTICATION_LOCKED')
  })

  t.test('refused workload tokens count under the client their subject maps to', async (t) => {
    const address = '198.51.100.23'
    const saToken = async (by: CryptoKey): Promise<string> => {
      const now = epochSeconds(h.clock)
      return new SignJWT({ iss: K8S, sub: SERVICE_ACCOUNT, aud: ['bearward-test'], iat: now, exp: now + 3600 })
        .setProtectedHeader({ alg: 'ES256', kid: 'k8s-1' })
        .sign(by)
    }
    for (let i = 0; i < max; i++) t.equal((await send(await saToken(stranger.privateKey), address)).status, 401, `forged token ${i + 1}`)
    t.equal((await send(await saToken(k8s.privateKey), address)).status, 429, 'the real token from that address waits for the window')
    t.equal((await send(await saToken(k8s.privateKey), '192.0.2.45')).status, 200, 'and is accepted from another')
  })
})
