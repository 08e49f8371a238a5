import t from 'tap'
import { decodeJwt } from 'jose'
import { hashToken } from '../../src/store/hash.js'
import { basic, introspect, send, settle, startAs, token, tokensFor, type Harness } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

function revoke(h: Harness, clientId: string, params: Record<string, string>) {
  const confidential = h.as.clients.get(clientId)?.type === 'confidential'
  return reply(postForm(`${h.url}/revoke`, confidential ? params : { ...params, client_id: clientId }, confidential ? { authorization: basic(clientId) } : {}))
}

for (const format of ['jwt', 'opaque'] as const) {
  t.test(`POST /revoke (${format} access tokens)`, async (t) => {
    const h = await startAs({ format })
    t.teardown(() => h.close())

    t.test('revoking a refresh token revokes the family and its access tokens', async (t) => {
      const body = await tokensFor(h)
      const rt = String(body.refresh_token)
      const r = await revoke(h, 'web', { token: rt, token_type_hint: 'refresh_token' })
      t.equal(r.status, 200)
      t.equal(r.text, '')
      t.equal(r.headers.get('cache-control'), 'no-store')
      await settle()
      t.same(await introspect(h, rt), { active: false })
      t.same(await introspect(h, String(body.access_token)), { active: false })
      const refresh = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: rt })
      t.equal(refresh.json?.error, 'invalid_grant')
    })

    t.test('revoking an access token: introspection then says inactive; the refresh token lives on', async (t) => {
      const body = await tokensFor(h)
      const at = String(body.access_token)
      t.equal((await revoke(h, 'web', { token: at, token_type_hint: 'access_token' })).status, 200)
      await settle()
      t.same(await introspect(h, at), { active: false })
      t.equal((await introspect(h, String(body.refresh_token))).active, true)
      if (format === 'opaque') t.equal(await h.store.opaqueTokens.get(hashToken(at)), null, 'the opaque token is deleted')
      else {
        const jti = String(decodeJwt(at).jti)
        t.ok(
          (await h.store.revocations.list()).some((e) => e.kind === 'jti' && e.id === jti),
          'its jti is listed',
        )
      }
    })

    t.test("another client's token: 200, and it stays valid", async (t) => {
      const body = await tokensFor(h)
      for (const [value, hint] of [
        [String(body.access_token), 'access_token'],
        [String(body.refresh_token), 'refresh_token'],
      ] as const) {
        const r = await revoke(h, 'other', { token: value, token_type_hint: hint })
        t.equal(r.status, 200)
        t.equal(r.text, '')
        const spa = await revoke(h, 'spa', { token: value })
        t.equal(spa.status, 200)
      }
      await settle()
      t.equal((await introspect(h, String(body.access_token))).active, true)
      t.equal((await introspect(h, String(body.refresh_token))).active, true)
      const at = String(body.access_token)
      const jti = format === 'jwt' ? String(decodeJwt(at).jti) : (await h.store.opaqueTokens.get(hashToken(at)))?.jti
      const grantId = (await h.store.grants.findRefresh(hashToken(String(body.refresh_token))))?.grant.grantId
      t.ok(jti !== undefined && grantId !== undefined, 'the tokens are still in the store')
      const listed = (await h.store.revocations.list()).map((e) => e.id)
      t.notOk(listed.includes(String(jti)) || listed.includes(String(grantId)), 'nothing of theirs is on the revocation list')
    })

    t.test('unknown, garbage, and already revoked tokens: 200', async (t) => {
      for (const value of ['x'.repeat(43), 'a.b.c', 'nonsense']) {
        const r = await revoke(h, 'web', { token: value })
        t.equal(r.status, 200, value)
      }
      const body = await tokensFor(h)
      t.equal((await revoke(h, 'web', { token: String(body.refresh_token) })).status, 200)
      t.equal((await revoke(h, 'web', { token: String(body.refresh_token) })).status, 200, 'twice')
    })

    t.test('an unknown hint is ignored: every type is searched', async (t) => {
      const body = await tokensFor(h)
      t.equal((await revoke(h, 'web', { token: String(body.refresh_token), token_type_hint: 'banana' })).status, 200)
      t.same(await introspect(h, String(body.refresh_token)), { active: false })
      const body2 = await tokensFor(h)
      t.equal((await revoke(h, 'web', { token: String(body2.access_token), token_type_hint: 'refresh_token' })).status, 200, 'a wrong hint')
      await settle()
      t.same(await introspect(h, String(body2.access_token)), { active: false })
    })

    t.test('a public client revokes its own token with client_id', async (t) => {
      const body = await tokensFor(h, { clientId: 'spa', scope: 'orders:read' })
      t.equal((await revoke(h, 'spa', { token: String(body.refresh_token) })).status, 200)
      t.same(await introspect(h, String(body.refresh_token)), { active: false })
    })

    t.test('a missing token is invalid_request; failed client auth is 401', async (t) => {
      const r = await revoke(h, 'web', {})
      t.equal(r.status, 400)
      t.same(r.json, { error: 'invalid_request', error_description: 'Parameter token is required' })
      const bad = await reply(postForm(`${h.url}/revoke`, { token: 'x' }, { authorization: basic('web', 'wrong') }))
      t.equal(bad.status, 401)
      t.equal(bad.headers.get('www-authenticate'), 'Basic realm="bearward"')
      t.equal((await send(`${h.url}/revoke`)).status, 405)
    })
  })
}
