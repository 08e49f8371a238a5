import t from 'tap'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import { hashToken } from '../../src/store/hash.js'
import { API_AUDIENCE, basic, startAs, token } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

t.test('client_credentials grant', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())

  t.test('a confidential client gets an access token for itself: no refresh token, no id_token', async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read' })
    t.equal(r.status, 200)
    t.equal(r.headers.get('cache-control'), 'no-store')
    t.same(Object.keys(r.json ?? {}).sort(), ['access_token', 'expires_in', 'scope', 'token_type'])
    t.equal(r.json?.scope, 'orders:read')
    const at = String(r.json?.access_token)
    t.equal(decodeProtectedHeader(at).typ, 'at+jwt')
    const claims = decodeJwt(at)
    t.equal(claims.sub, 'service')
    t.equal(claims.client_id, 'service')
    t.equal(claims.aud, h.issuer)
    t.notOk('grant_id' in claims)
    t.notOk('auth_time' in claims)
    t.equal(h.metrics.tokensIssued.get({ grant: 'client_credentials' }), 1)
  })

  t.test("no scope: the client's registered scopes", async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials' })
    t.equal(r.json?.scope, 'orders:read orders:write')
  })

  t.test('a scope beyond the registration is invalid_scope', async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read admin' })
    t.equal(r.status, 400)
    t.same(r.json, { error: 'invalid_scope', error_description: 'The requested scope `admin` exceeds what the client is registered for' })
  })

  t.test('openid is not available without a user', async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials', scope: 'openid' })
    t.equal(r.json?.error, 'invalid_scope')
  })

  t.test('a public client is unauthorized_client', async (t) => {
    const r = await reply(postForm(`${h.url}/token`, { grant_type: 'client_credentials', client_id: 'spa' }))
    t.equal(r.status, 400)
    t.same(r.json, { error: 'unauthorized_client', error_description: 'The client is not allowed to use this grant type' })
  })

  t.test('a client without the grant is unauthorized_client', async (t) => {
    const r = await token(h, 'web', { grant_type: 'client_credentials' })
    t.equal(r.json?.error, 'unauthorized_client')
  })

  t.test('resource narrows aud; unknown is invalid_target', async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials', resource: API_AUDIENCE })
    t.equal(decodeJwt(String(r.json?.access_token)).aud, API_AUDIENCE)
    const bad = await token(h, 'service', { grant_type: 'client_credentials', resource: 'https://evil.example.com' })
    t.equal(bad.status, 400)
    t.equal(bad.json?.error, 'invalid_target')
  })

  t.test('client_secret_post client', async (t) => {
    const r = await reply(
      postForm(`${h.url}/token`, { grant_type: 'client_credentials', client_id: 'poster', client_secret: 'poster-secret-0123456789abcdefghijklmnopqr' }),
    )
    t.equal(r.status, 200)
    const viaBasic = await reply(postForm(`${h.url}/token`, { grant_type: 'client_credentials' }, { authorization: basic('poster') }))
    t.equal(viaBasic.status, 200, 'Basic works for every confidential client')
  })
})

t.test('client_credentials with opaque tokens', async (t) => {
  const h = await startAs({ format: 'opaque' })
  t.teardown(() => h.close())
  const r = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:write' })
  const at = String(r.json?.access_token)
  t.match(at, /^[A-Za-z0-9_-]{43}$/)
  t.match(await h.store.opaqueTokens.get(hashToken(at)), { sub: 'service', clientId: 'service', scope: 'orders:write', grantId: null })
})
