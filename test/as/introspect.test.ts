import t from 'tap'
import { decodeJwt } from 'jose'
import { hashToken } from '../../src/store/hash.js'
import { SECRETS, basic, introspect, startAs, token, tokensFor } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

for (const format of ['jwt', 'opaque'] as const) {
  t.test(`POST /introspect (${format})`, async (t) => {
    const h = await startAs({ format })
    t.teardown(() => h.close())
    const url = `${h.url}/introspect`

    t.test('an active access token', async (t) => {
      const body = await tokensFor(h, { scope: 'openid orders:read' })
      const at = String(body.access_token)
      const r = await reply(postForm(url, { token: at }, { authorization: basic('looker') }))
      t.equal(r.status, 200)
      t.equal(r.headers.get('cache-control'), 'no-store')
      const now = Math.floor(h.clock.now() / 1000)
      const jti = format === 'jwt' ? decodeJwt(at).jti : (await h.store.opaqueTokens.get(hashToken(at)))?.jti
      t.same(r.json, {
        active: true,
        scope: 'openid orders:read',
        client_id: 'web',
        username: 'alice',
        token_type: 'Bearer',
        exp: now + 600,
        iat: now,
        // When the person signed in (mintCode: 5 s ago); the code says nothing of how.
        auth_time: now - 5,
        sub: 'alice',
        aud: h.issuer,
        iss: h.issuer,
        jti,
      })
    })

    t.test('a client_credentials token has no username', async (t) => {
      const cc = await token(h, 'service', { grant_type: 'client_credentials' })
      const r = await introspect(h, String(cc.json?.access_token))
      t.equal(r.active, true)
      t.equal(r.sub, 'service')
      t.notOk('username' in r)
    })

    t.test('the current refresh token is active; a replaced one is not', async (t) => {
      const body = await tokensFor(h)
      const rt1 = String(body.refresh_token)
      const r = await introspect(h, rt1, 'refresh_token')
      const now = Math.floor(h.clock.now() / 1000)
      t.same(r, {
        active: true,
        scope: 'openid profile email orders:read',
        client_id: 'web',
        username: 'alice',
        token_type: 'refresh_token',
        exp: now + 30 * 86400,
        iat: now,
        auth_time: now - 5,
        sub: 'alice',
        iss: h.issuer,
      })
      const rotated = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: rt1 })
      t.same(await introspect(h, rt1), { active: false }, 'replaced')
      t.equal((await introspect(h, String(rotated.json?.refresh_token))).active, true)
    })

    t.test('unknown, malformed, expired tokens are exactly {"active":false}', async (t) => {
      for (const value of ['x'.repeat(43), 'a.b.c', '%%%', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']) {
        const r = await reply(postForm(url, { token: value }, { authorization: basic('looker') }))
        t.equal(r.status, 200)
        t.equal(r.text, '{"active":false}', value)
      }
      const body = await tokensFor(h)
      h.clock.advance(600_000 + 60_000)
      t.same(await introspect(h, String(body.access_token)), { active: false }, 'expired')
    })

    t.test('only clients allowed to introspect; failures are 401 invalid_client', async (t) => {
      const body = await tokensFor(h)
      const at = String(body.access_token)
      const notAllowed = await reply(postForm(url, { token: at }, { authorization: basic('web') }))
      t.equal(notAllowed.status, 401)
      t.same(notAllowed.json, { error: 'invalid_client', error_description: 'This client may not use introspection' })
      t.equal(notAllowed.headers.get('www-authenticate'), 'Basic realm="bearward"')
      const wrong = await reply(postForm(url, { token: at }, { authorization: basic('looker', 'wrong') }))
      t.equal(wrong.status, 401)
      const publicClaim = await reply(postForm(url, { token: at, client_id: 'nosy-public' }))
      t.equal(publicClaim.status, 401, 'a public client cannot prove who it is')
      const none = await reply(postForm(url, { token: at }))
      t.equal(none.status, 401)
      const viaPost = await reply(postForm(url, { token: at, client_id: 'looker', client_secret: SECRETS.looker ?? '' }))
      t.equal(viaPost.status, 401, 'looker is not registered for client_secret_post')
    })

    t.test('a missing token is invalid_request', async (t) => {
      const r = await reply(postForm(url, {}, { authorization: basic('looker') }))
      t.equal(r.status, 400)
      t.same(r.json, { error: 'invalid_request', error_description: 'Parameter token is required' })
    })
  })
}
