import t from 'tap'
import { SignJWT, decodeJwt } from 'jose'
import { generatePrivateJwk, signingKeyFromJwk } from '../../src/keys/keyset.js'
import { basic, send, settle, startAs, token, tokensFor, type Harness } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

function userinfo(h: Harness, accessToken: string, init: RequestInit = {}) {
  return send(`${h.url}/userinfo`, { ...init, headers: { authorization: `Bearer ${accessToken}`, ...(init.headers as Record<string, string>) } })
}

t.test('/userinfo', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())

  t.test('returns sub and the claims the scopes release', async (t) => {
    const body = await tokensFor(h, { scope: 'openid profile' })
    const r = await userinfo(h, String(body.access_token))
    t.equal(r.status, 200)
    t.equal(r.headers.get('cache-control'), 'no-store')
    t.same(r.json, { sub: 'alice', name: 'Alice Example', given_name: 'Alice' })

    const withEmail = await tokensFor(h, { scope: 'openid email' })
    t.same((await userinfo(h, String(withEmail.access_token))).json, { sub: 'alice', email: 'alice@example.com', email_verified: true })

    const bare = await tokensFor(h, { scope: 'openid' })
    t.same((await userinfo(h, String(bare.access_token))).json, { sub: 'alice' })
  })

  t.test('a user with an explicit sub', async (t) => {
    const body = await tokensFor(h, { scope: 'openid profile email', sub: 'user-0002' })
    t.same((await userinfo(h, String(body.access_token))).json, { sub: 'user-0002', name: 'Bob', email: 'bob@example.com' })
  })

  t.test('POST with the token in the form body', async (t) => {
    const body = await tokensFor(h, { scope: 'openid profile' })
    const r = await reply(postForm(`${h.url}/userinfo`, { access_token: String(body.access_token) }))
    t.equal(r.status, 200)
    t.equal(r.json?.sub, 'alice')
    const both = await reply(
      postForm(`${h.url}/userinfo`, { access_token: String(body.access_token) }, { authorization: `Bearer ${String(body.access_token)}` }),
    )
    t.equal(both.status, 400)
    t.equal(both.json?.error, 'invalid_request')
    t.match(both.headers.get('www-authenticate'), /^Bearer realm="bearward", error="invalid_request"/)
  })

  t.test('no token: 401 with a bare Bearer challenge', async (t) => {
    const r = await send(`${h.url}/userinfo`)
    t.equal(r.status, 401)
    t.equal(r.headers.get('www-authenticate'), 'Bearer realm="bearward"')
    const basicAuth = await send(`${h.url}/userinfo`, { headers: { authorization: basic('web') } })
    t.equal(basicAuth.headers.get('www-authenticate'), 'Bearer realm="bearward"', 'another scheme is no bearer token')
  })

  t.test('a token without openid is 403 insufficient_scope', async (t) => {
    const body = await tokensFor(h, { scope: 'orders:read' })
    const r = await userinfo(h, String(body.access_token))
    t.equal(r.status, 403)
    t.equal(r.json?.error, 'insufficient_scope')
    t.match(r.headers.get('www-authenticate'), /error="insufficient_scope".*scope="openid"/)
  })

  t.test('invalid tokens are 401 invalid_token', async (t) => {
    const expect = async (value: string, why: string) => {
      const r = await userinfo(h, value)
      t.equal(r.status, 401, why)
      t.equal(r.json?.error, 'invalid_token', why)
      t.match(r.headers.get('www-authenticate'), /^Bearer realm="bearward", error="invalid_token"/, why)
    }
    await expect('not-a-token', 'unknown opaque')
    // A value outside the b64token grammar (`Bearer a b`) is 400 invalid_request, as at the gateway: test/http/authorization.test.ts.
    const body = await tokensFor(h, { scope: 'openid' })
    const at = String(body.access_token)
    await expect(String(body.id_token), 'an id_token is not an access token (typ JWT)')
    const [head, payload, sig] = at.split('.')
    await expect(`${head}.${payload}.${(sig ?? '').slice(0, -4)}AAAA`, 'bad signature')

    // Signed by a key we do not publish, with our kid.
    const stranger = await signingKeyFromJwk(await generatePrivateJwk('ES256'))
    const forged = await new SignJWT(decodeJwt(at)).setProtectedHeader({ alg: 'ES256', kid: h.as.keys.signing.kid, typ: 'at+jwt' }).sign(stranger.privateKey)
    await expect(forged, 'foreign key')
    const otherIss = await new SignJWT({ ...decodeJwt(at), iss: 'https://evil.example.com' })
      .setProtectedHeader({ alg: 'ES256', kid: h.as.keys.signing.kid, typ: 'at+jwt' })
      .sign(h.as.keys.signing.privateKey)
    await expect(otherIss, 'another issuer')

    h.clock.advance(600_000 + 31_000)
    await expect(at, 'expired beyond the skew')
  })

  t.test('a revoked token is invalid_token', async (t) => {
    const body = await tokensFor(h, { scope: 'openid' })
    const at = String(body.access_token)
    t.equal((await userinfo(h, at)).status, 200)
    await reply(postForm(`${h.url}/revoke`, { token: at }, { authorization: basic('web') }))
    await settle()
    t.equal((await userinfo(h, at)).status, 401)
  })

  t.test('PUT is 405', async (t) => {
    const r = await send(`${h.url}/userinfo`, { method: 'PUT' })
    t.equal(r.status, 405)
    t.equal(r.headers.get('allow'), 'GET, HEAD, POST')
  })
})

t.test('/userinfo with opaque tokens', async (t) => {
  const h = await startAs({ format: 'opaque' })
  t.teardown(() => h.close())
  const body = await tokensFor(h, { scope: 'openid email' })
  const r = await userinfo(h, String(body.access_token))
  t.same(r.json, { sub: 'alice', email: 'alice@example.com', email_verified: true })
  const cc = await token(h, 'service', { grant_type: 'client_credentials' })
  const noUser = await userinfo(h, String(cc.json?.access_token))
  t.equal(noUser.status, 403, 'a client_credentials token has no openid')
})
