/**
 * A token the gateway mints for an upstream (`upstream_token: exchange`) is
 * good at that upstream only: it has a `typ` of its own, so bearward itself
 * (/introspect, /userinfo, token exchange as subject or actor, any of its
 * routes) never takes it for one of its access tokens. Before, the
 * authorization server accepted it for any audience, and exchanging it gave a
 * token for bearward's own audience without the person's grant, one that
 * outlived the revocation of that grant and could be exchanged again.
 */
import { createServer, type IncomingMessage } from 'node:http'
import t from 'tap'
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { hashSecret } from '../../src/crypto/secret.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { API_AUDIENCE, backYaml, basic, harnessOf, introspect, send, settle, tokensFor, type Reply } from '../helpers/as-back.js'
import { listen, postForm, reply } from '../helpers/http.js'
import { serveRuntime } from '../helpers/serve-runtime.js'

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token'
const SECRET = 'exchanger-secret-0123456789abcdefghijklmnop'

t.test('a minted upstream token is refused by bearward everywhere but at its upstream', async (t) => {
  // The upstream behind the `minting` route: it records the Authorization it was given.
  const received: string[] = []
  const upstream = createServer((req: IncomingMessage, res) => {
    received.push(req.headers.authorization ?? '')
    res.end('ok')
  })
  const up = await listen(upstream)
  t.teardown(() => new Promise<void>((resolve) => upstream.close(() => resolve())))

  const hash = await hashSecret(SECRET)
  const yaml = await backYaml({
    clientsExtra: `    - { client_id: exchanger, type: confidential, secret_hash: "${hash}", grant_types: [token-exchange], scopes: [openid, orders:read, orders:write], token_exchange: { audiences: ["${API_AUDIENCE}", "\${PUBLIC_URL}"] } }`,
  })
  const routes = `  - { name: minting, match: { path: /minting }, upstream: "${up.url}", audience: "\${PUBLIC_URL}", scopes: { "*": [orders:read] }, upstream_token: exchange }\n  - { name: exchanged, match: { path: /exchanged }, upstream: "${up.url}", audience: ${API_AUDIENCE}, token: any }\n`
  const served = await serveRuntime(`${yaml}${routes}`, { signingKey: () => generatePrivateJwk('ES256') })
  const h = harnessOf(served)
  t.teardown(() => h.close())
  const auth = `Basic ${Buffer.from(`exchanger:${SECRET}`).toString('base64')}`
  const exchange = (params: Record<string, string>): Promise<Reply> =>
    reply(postForm(`${h.url}/token`, { grant_type: EXCHANGE, subject_token_type: ACCESS_TOKEN, ...params }, { authorization: auth }))
  const get = (path: string, token: string): Promise<Reply> => send(`${h.url}${path}`, { headers: { authorization: `Bearer ${token}` } })

  /** A person's tokens, and the token the gateway minted for the upstream from their access token. */
  async function minted(): Promise<{ person: Record<string, unknown>; token: string }> {
    const person = await tokensFor(h)
    const before = received.length
    const r = await get('/minting', String(person.access_token))
    if (r.status !== 200) throw new Error(`minting route: ${r.status} ${r.text}`)
    const value = received[before] ?? ''
    if (!value.startsWith('Bearer ')) throw new Error('the upstream got no minted token')
    return { person, token: value.slice('Bearer '.length) }
  }

  t.test('its typ is its own, it verifies with the documented options, and it names the grant', async (t) => {
    const { person, token } = await minted()
    t.equal(decodeProtectedHeader(token).typ, 'bearward-upstream+jwt')
    const jwks = createLocalJWKSet((await send(`${h.url}/jwks.json`)).json as { keys: [] })
    const { payload } = await jwtVerify(token, jwks, { issuer: h.issuer, audience: up.url, typ: 'bearward-upstream+jwt', currentDate: new Date(h.clock.now()) })
    t.equal(payload.sub, 'alice')
    t.equal(payload.grant_id, decodeJwt(String(person.access_token)).grant_id, "the person's grant")
    await t.rejects(jwtVerify(token, jwks, { typ: 'at+jwt', currentDate: new Date(h.clock.now()) }), 'not an at+jwt')
  })

  t.test('refused at /introspect (inactive) and /userinfo (401)', async (t) => {
    const { token } = await minted()
    t.same(await introspect(h, token), { active: false })
    t.same(await introspect(h, token, 'access_token'), { active: false })
    const u = await get('/userinfo', token)
    t.equal(u.status, 401)
    t.match(u.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
  })

  t.test('refused as a subject token and as an actor token', async (t) => {
    const { person, token } = await minted()
    const asSubject = await exchange({ subject_token: token, resource: API_AUDIENCE })
    t.equal(asSubject.status, 400)
    t.equal(asSubject.json?.error, 'invalid_grant')
    t.notOk(asSubject.json?.access_token, 'no token for bearward’s audience')
    const asActor = await exchange({
      subject_token: String(person.access_token),
      actor_token: token,
      actor_token_type: ACCESS_TOKEN,
      resource: API_AUDIENCE,
    })
    t.equal(asActor.status, 400)
    t.equal(asActor.json?.error, 'invalid_grant')
  })

  t.test('refused at a gateway route other than its upstream, nothing forwarded', async (t) => {
    const { token } = await minted()
    for (const path of ['/orders', '/exchanged', '/minting']) {
      const before = received.length
      const r = await get(path, token)
      t.equal(r.status, 401, path)
      t.match(r.headers.get('www-authenticate') ?? '', /invalid_token/, path)
      t.equal(received.length, before, `${path}: nothing reached the upstream`)
    }
  })

  t.test('the attack: revoking the grant reaches every exchanged descendant, none escapes', async (t) => {
    const { person, token } = await minted()
    const personToken = String(person.access_token)
    // The minted token cannot be turned into a token for bearward's own audience.
    const laundered = await exchange({ subject_token: token, resource: h.issuer })
    t.equal(laundered.status, 400, 'minted token refused as the subject')
    t.equal(laundered.json?.error, 'invalid_grant')
    // The person's own token exchanged: it keeps the grant.
    const first = await exchange({ subject_token: personToken, resource: API_AUDIENCE })
    t.equal(first.status, 200, 'the person’s own token is exchanged')
    const exchanged = String(first.json?.access_token)
    t.equal(decodeJwt(exchanged).grant_id, decodeJwt(personToken).grant_id)
    t.equal((await get('/exchanged', exchanged)).status, 200, 'the exchanged token works before the revocation')

    const revoked = await reply(postForm(`${h.url}/revoke`, { token: String(person.refresh_token) }, { authorization: basic('web') }))
    t.equal(revoked.status, 200)
    await settle()
    t.equal((await get('/orders', personToken)).status, 401, "the person's token is revoked")
    t.equal((await get('/exchanged', exchanged)).status, 401, 'so is the token exchanged from it')
    t.equal((await get('/minting', personToken)).status, 401, 'no new minted token for a revoked one')
    const again = await exchange({ subject_token: exchanged, resource: API_AUDIENCE })
    t.equal(again.status, 400, 'an exchanged token of a revoked grant cannot be exchanged again')
    t.equal(again.json?.error, 'invalid_grant')
    const mintedAgain = await exchange({ subject_token: token, resource: API_AUDIENCE })
    t.equal(mintedAgain.status, 400)
  })

  t.test("an exchanged token never outlives its subject, so exchanging again cannot stretch a chain past the subject's revocation", async (t) => {
    // A client's own token (no grant): revoking it by jti cannot reach what was exchanged from it, so its life bounds theirs.
    const service = await reply(postForm(`${h.url}/token`, { grant_type: 'client_credentials', scope: 'orders:read' }, { authorization: basic('service') }))
    t.equal(service.status, 200)
    const subject = String(service.json?.access_token)
    const subjectExp = Number(decodeJwt(subject).exp)
    h.clock.advance(300_000)
    const first = await exchange({ subject_token: subject, resource: API_AUDIENCE })
    t.equal(first.status, 200, 'exchanged')
    const exchanged = String(first.json?.access_token)
    t.equal(decodeJwt(exchanged).exp, subjectExp, "capped at the subject token's exp")
    t.equal(first.json?.expires_in, 300, 'expires_in says so')
    h.clock.advance(200_000)
    const again = await exchange({ subject_token: exchanged, resource: API_AUDIENCE })
    t.equal(again.status, 200)
    t.equal(decodeJwt(String(again.json?.access_token)).exp, subjectExp, 'exchanging the exchanged token gains no time')
    // Past the subject's exp and the gateway's clock skew (30 s).
    h.clock.advance(140_000)
    t.equal((await get('/exchanged', String(again.json?.access_token))).status, 401, 'the whole chain ends with its subject')
  })
})
