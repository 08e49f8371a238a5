import t from 'tap'
import { decodeJwt } from 'jose'
import { hashToken } from '../../src/store/hash.js'
import { API_AUDIENCE, introspect, settle, startAs, token, tokensFor, mintCode, codeParams, type Reply } from '../helpers/as-back.js'
import { ManualClock } from '../../src/clock.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { MemoryStore } from '../../src/store/memory.js'
import { postForm, reply } from '../helpers/http.js'

const NARROWED_SECRET = 'narrowed-secret-0123456789abcdefghijklmn'

const INVALID_GRANT = {
  error: 'invalid_grant',
  error_description: 'The provided grant is invalid, expired, revoked, or was issued to another client',
}

t.test('refresh_token grant', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())

  const refresh = (clientId: string, rt: string, extra: Record<string, string> = {}) =>
    token(h, clientId, { grant_type: 'refresh_token', refresh_token: rt, ...extra })

  t.test('rotation: a new refresh token each use, same grant, the old one replaced', async (t) => {
    const first = await tokensFor(h)
    const rt1 = String(first.refresh_token)
    const r = await refresh('web', rt1)
    t.equal(r.status, 200)
    t.equal(r.headers.get('cache-control'), 'no-store')
    const body = r.json ?? {}
    t.equal(body.scope, 'openid profile email orders:read')
    t.ok(body.id_token, 'openid grants get a fresh id_token')
    const rt2 = String(body.refresh_token)
    t.not(rt2, rt1)
    t.equal(decodeJwt(String(body.access_token)).grant_id, decodeJwt(String(first.access_token)).grant_id)
    t.equal(decodeJwt(String(body.id_token)).nonce, undefined, 'no nonce at refresh')
    const old = await h.store.grants.findRefresh(hashToken(rt1))
    t.equal(old?.current, false)
    t.equal((await h.store.grants.findRefresh(hashToken(rt2)))?.current, true)
    t.equal(h.metrics.tokensIssued.get({ grant: 'refresh_token' }) >= 1, true)
  })

  t.test('reuse of a replaced token revokes the family, newest token included', async (t) => {
    const first = await tokensFor(h)
    const rt1 = String(first.refresh_token)
    const second = (await refresh('web', rt1)).json ?? {}
    const rt2 = String(second.refresh_token)
    const at2 = String(second.access_token)
    t.equal((await introspect(h, at2)).active, true)

    const reuse = await refresh('web', rt1)
    t.equal(reuse.status, 400)
    t.same(reuse.json, INVALID_GRANT)
    await settle()

    const newest = await refresh('web', rt2)
    t.same(newest.json, INVALID_GRANT, 'the newest refresh token is dead too')
    t.same(await introspect(h, at2), { active: false }, 'access tokens of the family are revoked')
    t.same(await introspect(h, String(first.access_token)), { active: false })
    t.ok(h.revocations.isRevoked(null, String(decodeJwt(at2).grant_id)))
  })

  t.test('a wider scope is invalid_scope and changes nothing', async (t) => {
    const first = await tokensFor(h, { scope: 'openid orders:read' })
    const rt = String(first.refresh_token)
    const r = await refresh('web', rt, { scope: 'openid orders:read orders:write' })
    t.equal(r.status, 400)
    t.same(r.json, { error: 'invalid_scope', error_description: 'The requested scope `orders:write` exceeds the original grant' })
    t.equal((await h.store.grants.findRefresh(hashToken(rt)))?.current, true, 'not rotated')
    t.equal((await refresh('web', rt)).status, 200)
  })

  t.test('a narrower scope narrows the access token; the grant keeps its scope', async (t) => {
    const first = await tokensFor(h, { scope: 'openid orders:read' })
    const r = await refresh('web', String(first.refresh_token), { scope: 'orders:read' })
    t.equal(r.status, 200)
    t.equal(r.json?.scope, 'orders:read')
    t.equal(decodeJwt(String(r.json?.access_token)).scope, 'orders:read')
    t.notOk('id_token' in (r.json ?? {}))
    const again = await refresh('web', String(r.json?.refresh_token))
    t.equal(again.json?.scope, 'openid orders:read', 'omitted scope = the original grant')
  })

  t.test('another client presenting the token gets invalid_grant; the token stays valid', async (t) => {
    const first = await tokensFor(h)
    const rt = String(first.refresh_token)
    const r = await refresh('other', rt)
    t.same(r.json, INVALID_GRANT)
    const spa = await refresh('spa', rt)
    t.same(spa.json, INVALID_GRANT, 'a public client naming itself')
    t.equal((await h.store.grants.findRefresh(hashToken(rt)))?.current, true)
    t.equal((await refresh('web', rt)).status, 200)
  })

  t.test('an expired family is invalid_grant', async (t) => {
    const first = await tokensFor(h)
    h.clock.advance(30 * 86400 * 1000)
    t.same((await refresh('web', String(first.refresh_token))).json, INVALID_GRANT)
  })

  t.test('a confidential client with rotation off keeps its refresh token', async (t) => {
    const first = await tokensFor(h, { clientId: 'legacy', scope: 'orders:read' })
    const rt = String(first.refresh_token)
    const r = await refresh('legacy', rt)
    t.equal(r.status, 200)
    t.notOk('refresh_token' in (r.json ?? {}))
    t.equal((await refresh('legacy', rt)).status, 200, 'the same token works again')
  })

  t.test('public clients always rotate', async (t) => {
    const first = await tokensFor(h, { clientId: 'spa', scope: 'orders:read' })
    const r = await refresh('spa', String(first.refresh_token))
    t.equal(r.status, 200)
    t.ok(r.json?.refresh_token)
  })

  t.test('unknown refresh token, missing parameter', async (t) => {
    t.same((await refresh('web', 'x'.repeat(43))).json, INVALID_GRANT)
    const r = await token(h, 'web', { grant_type: 'refresh_token' })
    t.same(r.json, { error: 'invalid_request', error_description: 'Parameter refresh_token is required' })
  })

  t.test('resource: bound grants keep their audience; others may name a configured one', async (t) => {
    const bound = await tokensFor(h, { resource: API_AUDIENCE })
    const r = await refresh('web', String(bound.refresh_token), { resource: h.issuer })
    t.equal(r.json?.error, 'invalid_target')
    const ok = await refresh('web', String(bound.refresh_token))
    t.equal(decodeJwt(String(ok.json?.access_token)).aud, API_AUDIENCE)

    const free = await tokensFor(h)
    const narrowed = await refresh('web', String(free.refresh_token), { resource: API_AUDIENCE })
    t.equal(decodeJwt(String(narrowed.json?.access_token)).aud, API_AUDIENCE)
  })
})

t.test("a refresh never gives more than the client's scopes as configured now (narrowed since the grant)", async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const shared = new MemoryStore(clock, { sweepIntervalMs: 0 })
  const hash = await hashSecret(NARROWED_SECRET)
  const client = (scopes: string): string =>
    `    - { client_id: narrowed, type: confidential, secret_hash: "${hash}", redirect_uris: [https://narrowed.example.com/cb], grant_types: [authorization_code, refresh_token], scopes: ${scopes} }`
  // One store, two configs: before and after the operator took orders:write away from the client (a reload).
  const before = await startAs({ clock, store: () => shared, clientsExtra: client('[openid, orders:read, orders:write]') })
  const after = await startAs({ clock, store: () => shared, clientsExtra: client('[openid, orders:read]') })
  t.teardown(async () => {
    await after.close()
    await before.close()
  })
  const auth = { authorization: `Basic ${Buffer.from(`narrowed:${NARROWED_SECRET}`).toString('base64')}` }
  const code = await mintCode(before, { clientId: 'narrowed', scope: 'openid orders:read orders:write' })
  const issued = (await reply(postForm(`${before.url}/token`, codeParams(code), auth))).json ?? {}
  t.equal(issued.scope, 'openid orders:read orders:write')
  const refresh = (extra: Record<string, string> = {}): Promise<Reply> =>
    reply(postForm(`${after.url}/token`, { grant_type: 'refresh_token', refresh_token: String(issued.refresh_token), ...extra }, auth))
  const wider = await refresh({ scope: 'orders:write' })
  t.equal(wider.status, 400, 'orders:write asked for by name')
  t.equal(wider.json?.error, 'invalid_scope')
  const r = await refresh()
  t.equal(r.status, 200, r.text)
  t.equal(r.json?.scope, 'openid orders:read', 'what the grant had, within what the client may have now')
  t.equal(decodeJwt(String(r.json?.access_token)).scope, 'openid orders:read')
})
