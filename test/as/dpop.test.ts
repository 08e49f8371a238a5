/**
 * DPoP at the authorization server (RFC 9449 5, 6, 8, 10): the token
 * endpoint binds what every grant issues to the proof's key, keeps a public
 * client's refresh family bound, honours `dpop_jkt`, refuses a
 * `dpop_bound_access_tokens` client without a proof; introspection and
 * UserInfo know the binding. Proofs are made by hand here (the clock is a
 * ManualClock); oauth4webapi drives the same flows in test/e2e/dpop.test.ts.
 */
import { request as httpRequest } from 'node:http'
import t from 'tap'
import { decodeJwt } from 'jose'
import { makeProof, proofKeyPair, type ProofKeyPair } from '../helpers/dpop.js'
import { DEVICE_GRANT, basic, codeParams, introspect, mintCode, send, startAs, token, type Harness } from '../helpers/as-back.js'
import { hashToken } from '../../src/store/hash.js'
import { postForm, reply } from '../helpers/http.js'

function proofFor(h: Harness, key: ProofKeyPair, o: { path?: string; htm?: string; accessToken?: string; nonce?: string; jti?: string } = {}): string {
  return makeProof(key, {
    htm: o.htm ?? 'POST',
    htu: `${h.issuer}${o.path ?? '/token'}`,
    nowMs: h.clock.now(),
    accessToken: o.accessToken,
    nonce: o.nonce,
    jti: o.jti,
  })
}

t.test('DPoP at the token endpoint', async (t) => {
  const h = await startAs({
    clientsExtra: `    - { client_id: bound, type: public, redirect_uris: [https://bound.example.com/cb], grant_types: [authorization_code, refresh_token, "${DEVICE_GRANT}"], scopes: [openid, orders:read], dpop_bound_access_tokens: true }`,
  })
  t.teardown(() => h.close())
  const key = proofKeyPair('ES256')
  const other = proofKeyPair('EdDSA')

  t.test('metadata lists the proof algorithms', async (t) => {
    const r = await send(`${h.url}/.well-known/oauth-authorization-server`)
    t.same(r.json?.dpop_signing_alg_values_supported, ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'RS256', 'PS256'])
  })

  t.test('client_credentials with a proof: token_type DPoP and cnf.jkt; without: Bearer and no cnf', async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials' }, { dpop: proofFor(h, key) })
    t.equal(r.status, 200, r.text)
    t.equal(r.json?.token_type, 'DPoP')
    t.same(decodeJwt(String(r.json?.access_token)).cnf, { jkt: key.jkt })
    const plain = await token(h, 'service', { grant_type: 'client_credentials' })
    t.equal(plain.json?.token_type, 'Bearer')
    t.notOk('cnf' in decodeJwt(String(plain.json?.access_token)))
    const seen = await introspect(h, String(r.json?.access_token))
    t.equal(seen.token_type, 'DPoP')
    t.same(seen.cnf, { jkt: key.jkt }, 'introspection returns the binding (RFC 9449 6.2)')
  })

  t.test('authorization code of a public client: access token and refresh family bound; refresh needs the same key', async (t) => {
    const m = await mintCode(h, { clientId: 'spa', scope: 'openid orders:read' })
    const r = await token(h, 'spa', codeParams(m), { dpop: proofFor(h, key) })
    t.equal(r.status, 200, r.text)
    t.equal(r.json?.token_type, 'DPoP')
    t.same(decodeJwt(String(r.json?.access_token)).cnf, { jkt: key.jkt })
    const rt = String(r.json?.refresh_token)
    t.same((await introspect(h, rt, 'refresh_token')).cnf, { jkt: key.jkt }, 'the family records the key')

    const noProof = await token(h, 'spa', { grant_type: 'refresh_token', refresh_token: rt })
    t.equal(noProof.status, 400)
    t.equal(noProof.json?.error, 'invalid_dpop_proof')
    const wrongKey = await token(h, 'spa', { grant_type: 'refresh_token', refresh_token: rt }, { dpop: proofFor(h, other) })
    t.equal(wrongKey.status, 400)
    t.equal(wrongKey.json?.error, 'invalid_grant', 'a proof by another key is refused')
    t.equal((await h.store.grants.findRefresh(hashToken(rt)))?.current, true, 'the refusals did not rotate or revoke the family')

    const ok = await token(h, 'spa', { grant_type: 'refresh_token', refresh_token: rt }, { dpop: proofFor(h, key) })
    t.equal(ok.status, 200, ok.text)
    t.equal(ok.json?.token_type, 'DPoP')
    t.same(decodeJwt(String(ok.json?.access_token)).cnf, { jkt: key.jkt })
  })

  t.test("a confidential client's refresh token is not bound: another key may refresh (RFC 9449 5)", async (t) => {
    const m = await mintCode(h, { clientId: 'web', scope: 'openid orders:read' })
    const r = await token(h, 'web', codeParams(m), { dpop: proofFor(h, key) })
    t.equal(r.json?.token_type, 'DPoP')
    const ok = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: String(r.json?.refresh_token) }, { dpop: proofFor(h, other) })
    t.equal(ok.status, 200, ok.text)
    t.same(decodeJwt(String(ok.json?.access_token)).cnf, { jkt: other.jkt }, 'the new access token is bound to the new proof key')
  })

  t.test('dpop_jkt binds the code: only a proof by that key redeems it, and a refused try leaves it redeemable', async (t) => {
    const m = await mintCode(h, { clientId: 'spa', scope: 'orders:read', dpopJkt: key.jkt })
    const none = await token(h, 'spa', codeParams(m))
    t.equal(none.json?.error, 'invalid_grant', 'no proof')
    const wrong = await token(h, 'spa', codeParams(m), { dpop: proofFor(h, other) })
    t.equal(wrong.json?.error, 'invalid_grant', 'another key')
    const ok = await token(h, 'spa', codeParams(m), { dpop: proofFor(h, key) })
    t.equal(ok.status, 200, ok.text)
    t.same(decodeJwt(String(ok.json?.access_token)).cnf, { jkt: key.jkt })
  })

  t.test('device code: bound to the key of the polling proof', async (t) => {
    const da = await reply(postForm(`${h.url}/device_authorization`, { client_id: 'tv', scope: 'orders:read' }))
    const userCode = String(da.json?.user_code).replace('-', '')
    await h.store.devices.decide(userCode, { approved: true, sub: 'alice', authTime: Math.floor(h.clock.now() / 1000) })
    const r = await token(h, 'tv', { grant_type: DEVICE_GRANT, device_code: String(da.json?.device_code) }, { dpop: proofFor(h, key) })
    t.equal(r.status, 200, r.text)
    t.equal(r.json?.token_type, 'DPoP')
    t.same(decodeJwt(String(r.json?.access_token)).cnf, { jkt: key.jkt })
  })

  t.test('dpop_bound_access_tokens: no proof, no token (RFC 9449 5.2)', async (t) => {
    const m = await mintCode(h, { clientId: 'bound', scope: 'orders:read' })
    const r = await token(h, 'bound', codeParams(m))
    t.equal(r.status, 400)
    t.same(r.json, { error: 'invalid_dpop_proof', error_description: 'This client must send a DPoP proof' })
    const ok = await token(h, 'bound', codeParams(m), { dpop: proofFor(h, key) })
    t.equal(ok.status, 200, 'the code was not consumed by the refusal')
  })

  t.test('refusals: 400 invalid_dpop_proof, no token, nothing consumed', async (t) => {
    const replayed = proofFor(h, key, { jti: 'token-endpoint-replay' })
    t.equal((await token(h, 'service', { grant_type: 'client_credentials' }, { dpop: replayed })).status, 200)
    const again = await token(h, 'service', { grant_type: 'client_credentials' }, { dpop: replayed })
    t.equal(again.status, 400)
    t.same(again.json, { error: 'invalid_dpop_proof', error_description: 'The DPoP proof has been used before' })
    t.equal(again.headers.get('www-authenticate'), null, 'no challenge at the token endpoint')
    const wrongHtu = await token(h, 'service', { grant_type: 'client_credentials' }, { dpop: proofFor(h, key, { path: '/userinfo' }) })
    t.equal(wrongHtu.json?.error, 'invalid_dpop_proof')
    const wrongHtm = await token(h, 'service', { grant_type: 'client_credentials' }, { dpop: proofFor(h, key, { htm: 'GET' }) })
    t.equal(wrongHtm.json?.error, 'invalid_dpop_proof')
    // Two header lines (fetch would join them into one value): node:http with an array.
    const two = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${h.url}/token`, { method: 'POST' })
      req.setHeader('content-type', 'application/x-www-form-urlencoded')
      req.setHeader('authorization', basic('service'))
      req.setHeader('dpop', [proofFor(h, key), proofFor(h, key)])
      req.on('response', (res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      })
      req.on('error', reject)
      req.end('grant_type=client_credentials')
    })
    t.equal(two.status, 400)
    t.same(JSON.parse(two.body), { error: 'invalid_dpop_proof', error_description: 'Exactly one DPoP header is allowed' }, 'two DPoP headers')
    const m = await mintCode(h, { clientId: 'spa', scope: 'orders:read' })
    const bad = await token(h, 'spa', codeParams(m), { dpop: proofFor(h, key, { htm: 'PUT' }) })
    t.equal(bad.json?.error, 'invalid_dpop_proof')
    t.equal((await token(h, 'spa', codeParams(m), { dpop: proofFor(h, key) })).status, 200, 'the code survived the refused proof')
  })

  t.test(
    'htu with userinfo (or another URI the comparison cannot vouch for): 400 invalid_dpop_proof, no token, the code survives (RFC 9449 4.3)',
    async (t) => {
      const m = await mintCode(h, { clientId: 'spa', scope: 'orders:read' })
      const u = new URL(h.issuer)
      for (const htu of [
        `${u.protocol}//x@${u.host}${u.pathname.replace(/\/$/, '')}/token`,
        `${u.protocol}//${u.host}:@${u.host}${u.pathname.replace(/\/$/, '')}/token`,
        `${h.issuer}/to\tken`,
      ]) {
        const r = await token(h, 'spa', codeParams(m), { dpop: makeProof(key, { htm: 'POST', htu, nowMs: h.clock.now() }) })
        t.equal(r.status, 400, `${JSON.stringify(htu)}: 400`)
        t.same(r.json, { error: 'invalid_dpop_proof', error_description: 'The DPoP proof was made for another URI' }, `${JSON.stringify(htu)}: refused`)
      }
      const ok = await token(h, 'spa', codeParams(m), { dpop: proofFor(h, key) })
      t.equal(ok.status, 200, 'the code was not consumed by the refusals')
    },
  )

  t.test('an opaque DPoP-bound token keeps its thumbprint for introspection', async (t) => {
    const o = await startAs({ format: 'opaque' })
    t.teardown(() => o.close())
    const r = await token(o, 'service', { grant_type: 'client_credentials' }, { dpop: proofFor(o, key) })
    t.equal(r.json?.token_type, 'DPoP')
    const seen = await introspect(o, String(r.json?.access_token))
    t.equal(seen.active, true)
    t.same(seen.cnf, { jkt: key.jkt })
    t.equal(seen.token_type, 'DPoP')
  })
})

t.test('server nonces at the token endpoint (RFC 9449 8)', async (t) => {
  const h = await startAs({ dpop: `{ nonce: { secret: ${'n'.repeat(32)}, ttl: 300s } }` })
  t.teardown(() => h.close())
  const key = proofKeyPair()
  const first = await token(h, 'service', { grant_type: 'client_credentials' }, { dpop: proofFor(h, key) })
  t.equal(first.status, 400)
  t.equal(first.json?.error, 'use_dpop_nonce')
  const nonce = first.headers.get('dpop-nonce')
  t.equal(nonce?.length, 43, 'DPoP-Nonce carries the nonce')
  const ok = await token(h, 'service', { grant_type: 'client_credentials' }, { dpop: proofFor(h, key, { nonce: nonce ?? '' }) })
  t.equal(ok.status, 200, ok.text)
  t.equal(ok.headers.get('dpop-nonce'), nonce, 'a success carries the current nonce too')
})

t.test('UserInfo with a DPoP-bound token (RFC 9449 7)', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const key = proofKeyPair()
  const m = await mintCode(h, { clientId: 'web', scope: 'openid profile' })
  const r = await token(h, 'web', codeParams(m), { dpop: proofFor(h, key) })
  const at = String(r.json?.access_token)
  const userinfo = (headers: Record<string, string>): Promise<Awaited<ReturnType<typeof send>>> => send(`${h.url}/userinfo`, { headers })

  const ok = await userinfo({ authorization: `DPoP ${at}`, dpop: proofFor(h, key, { path: '/userinfo', htm: 'GET', accessToken: at }) })
  t.equal(ok.status, 200, ok.text)
  t.equal(ok.json?.sub, 'alice')

  const asBearer = await userinfo({ authorization: `Bearer ${at}` })
  t.equal(asBearer.status, 401)
  t.match(asBearer.headers.get('www-authenticate'), /^Bearer realm="bearward", error="invalid_token"/, 'a bound token as Bearer is refused')
  const noProof = await userinfo({ authorization: `DPoP ${at}` })
  t.equal(noProof.status, 401)
  t.match(noProof.headers.get('www-authenticate'), /^DPoP realm="bearward", error="invalid_dpop_proof"/)
  const wrongAth = await userinfo({ authorization: `DPoP ${at}`, dpop: proofFor(h, key, { path: '/userinfo', htm: 'GET', accessToken: 'x.y.z' }) })
  t.equal(wrongAth.status, 401)
  t.match(
    wrongAth.headers.get('www-authenticate'),
    /^DPoP realm="bearward", error="invalid_dpop_proof", error_description="[^"]+", algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"$/,
  )
  const otherKey = await userinfo({ authorization: `DPoP ${at}`, dpop: proofFor(h, proofKeyPair(), { path: '/userinfo', htm: 'GET', accessToken: at }) })
  t.equal(otherKey.json?.error, 'invalid_dpop_proof', 'a key other than cnf.jkt')

  const plain = String((await token(h, 'web', codeParams(await mintCode(h, { clientId: 'web', scope: 'openid' })))).json?.access_token)
  const unbound = await userinfo({ authorization: `DPoP ${plain}`, dpop: proofFor(h, key, { path: '/userinfo', htm: 'GET', accessToken: plain }) })
  t.equal(unbound.status, 401)
  t.equal(unbound.json?.error, 'invalid_token', 'DPoP scheme with a bearer token')
})
