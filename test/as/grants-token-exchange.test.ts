/**
 * RFC 8693 token exchange at /token, driven by oauth4webapi's
 * genericTokenEndpointRequest unmodified: a client with a `token_exchange`
 * policy turns a person's access token into one for a narrower audience and
 * scope, `act` naming who acts (nested when the subject token already had
 * one), `may_act` honoured, no refresh token, and revoking the subject's
 * grant revokes what was exchanged from it.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import * as oauth from 'oauth4webapi'
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose'
import { epochSeconds } from '../../src/clock.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { signJwt } from '../../src/keys/sign.js'
import { API_AUDIENCE, backYaml, basic, introspect, send, token, tokensFor, type Harness, type Reply } from '../helpers/as-back.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { postForm, reply } from '../helpers/http.js'

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token'
const SECRET = 'exchanger-secret-0123456789abcdefghijklmnop'
const insecure = { [oauth.allowInsecureRequests]: true } as const

t.test('token exchange', async (t) => {
  const hash = await hashSecret(SECRET)
  // A trusted issuer (issuers[]) that is also the identity provider people sign in with: its keys served here.
  const corpKeys = await generateKeyPair('ES256')
  const corpJwk = { ...(await exportJWK(corpKeys.publicKey)), kid: 'c1', alg: 'ES256' }
  const keyServer = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ keys: [corpJwk] }))
  })
  await new Promise<void>((resolve) => keyServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => keyServer.close(() => resolve())))
  const corp = `http://127.0.0.1:${(keyServer.address() as AddressInfo).port}`
  const other = 'http://127.0.0.1:9/other'
  const yaml = await backYaml({
    asExtra: ['  identity_providers:', `    - { id: corp, name: Corp SSO, issuer: "${corp}", client_id: bearward }`].join('\n'),
    clientsExtra: `    - { client_id: exchanger, type: confidential, secret_hash: "${hash}", grant_types: [token-exchange], token_exchange: { audiences: ["${API_AUDIENCE}"] } }`,
  })
  const served = await serveRuntime(
    `${yaml}issuers:\n  - { id: corp, issuer: "${corp}", jwks_uri: "${corp}/jwks", algorithms: [ES256] }\n  - { id: other, issuer: "${other}", jwks_uri: "${corp}/jwks", algorithms: [ES256] }\n`,
    { signingKey: () => generatePrivateJwk('ES256') },
  )
  const h: Harness = { ...served, url: served.publicUrl, issuer: served.publicUrl }
  t.teardown(() => h.close())
  const exchangerAuth = `Basic ${Buffer.from(`exchanger:${SECRET}`).toString('base64')}`
  const exchange = (params: Record<string, string>, auth = exchangerAuth): Promise<Reply> =>
    reply(postForm(`${h.url}/token`, { grant_type: EXCHANGE, subject_token_type: ACCESS_TOKEN, ...params }, { authorization: auth }))

  t.test('metadata lists the grant', async (t) => {
    const m = (await send(`${h.url}/.well-known/oauth-authorization-server`)).json ?? {}
    t.ok((m.grant_types_supported as string[]).includes(EXCHANGE))
  })

  t.test("oauth4webapi: a person's token becomes one for the API, same subject, act naming the client, no refresh token", async (t) => {
    const person = await tokensFor(h)
    const subjectToken = String(person.access_token)
    const as = await oauth.processDiscoveryResponse(new URL(h.issuer), await oauth.discoveryRequest(new URL(h.issuer), { algorithm: 'oauth2', ...insecure }))
    const client: oauth.Client = { client_id: 'exchanger' }
    const res = await oauth.genericTokenEndpointRequest(
      as,
      client,
      oauth.ClientSecretBasic(SECRET),
      EXCHANGE,
      { subject_token: subjectToken, subject_token_type: ACCESS_TOKEN, resource: API_AUDIENCE, scope: 'orders:read' },
      insecure,
    )
    const body = await oauth.processGenericTokenEndpointResponse(as, client, res)
    t.equal(body.issued_token_type, ACCESS_TOKEN)
    t.equal(body.token_type, 'bearer')
    t.equal(body.refresh_token, undefined, 'no refresh token')
    const claims = decodeJwt(body.access_token)
    const original = decodeJwt(subjectToken)
    t.equal(claims.sub, 'alice')
    t.equal(claims.aud, API_AUDIENCE)
    t.equal(claims.scope, 'orders:read')
    t.equal(claims.client_id, 'exchanger')
    t.same(claims.act, { sub: 'exchanger' })
    t.equal(claims.grant_id, original.grant_id, "the subject's grant")
    t.same((await introspect(h, body.access_token)).act, { sub: 'exchanger' }, 'introspection says who acts')

    // Revoking the subject's grant (its refresh token) revokes what was exchanged from it.
    const revoked = await reply(
      postForm(`${h.url}/revoke`, { token: String(person.refresh_token), token_type_hint: 'refresh_token' }, { authorization: basic('web') }),
    )
    t.equal(revoked.status, 200)
    t.same(await introspect(h, body.access_token), { active: false }, 'the exchanged token is revoked with the grant')
  })

  t.test('an actor token: act names the actor, and an earlier act nests inside', async (t) => {
    const subjectToken = String((await tokensFor(h)).access_token)
    const actor = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read' })
    const first = await exchange({ subject_token: subjectToken, actor_token: String(actor.json?.access_token), actor_token_type: ACCESS_TOKEN })
    t.equal(first.status, 200, first.text)
    t.same(decodeJwt(String(first.json?.access_token)).act, { sub: 'service', client_id: 'service' })
    // The exchanged token is exchanged again: the new actor outermost, the earlier one inside.
    const second = await exchange({ subject_token: String(first.json?.access_token) })
    t.equal(second.status, 200, second.text)
    t.same(decodeJwt(String(second.json?.access_token)).act, { sub: 'exchanger', act: { sub: 'service', client_id: 'service' } })
  })

  t.test('may_act is honoured', async (t) => {
    const now = epochSeconds(h.clock)
    const subjectToken = await signJwt(h.as.keys.signing, 'at+jwt', {
      iss: h.issuer,
      sub: 'alice',
      aud: h.issuer,
      client_id: 'web',
      scope: 'orders:read',
      iat: now,
      exp: now + 300,
      jti: 'may-act-1',
      may_act: { sub: 'service' },
    })
    const before = h.logs.length
    const notHim = await exchange({ subject_token: subjectToken })
    t.equal(notHim.status, 400)
    t.equal(notHim.json?.error, 'invalid_grant')
    t.equal(h.logs.slice(before).find((l) => l.msg === 'request refused')?.cause, 'token exchange: the actor is not the one may_act names')
    const actor = await token(h, 'service', { grant_type: 'client_credentials' })
    const him = await exchange({ subject_token: subjectToken, actor_token: String(actor.json?.access_token), actor_token_type: ACCESS_TOKEN })
    t.equal(him.status, 200, him.text)
  })

  t.test('only narrowing: scope and audience within the subject token and the policy', async (t) => {
    const subjectToken = String((await tokensFor(h, { scope: 'orders:read' })).access_token)
    const wider = await exchange({ subject_token: subjectToken, scope: 'orders:read orders:write' })
    t.equal(wider.status, 400)
    t.equal(wider.json?.error, 'invalid_scope')
    const elsewhere = await exchange({ subject_token: subjectToken, audience: h.issuer })
    t.equal(elsewhere.status, 400)
    t.equal(elsewhere.json?.error, 'invalid_target', 'an audience outside the policy')
    const two = await exchange({ subject_token: subjectToken, audience: API_AUDIENCE, resource: API_AUDIENCE })
    t.equal(two.json?.error, 'invalid_target', 'one target only')
    const byDefault = await exchange({ subject_token: subjectToken })
    t.equal(decodeJwt(String(byDefault.json?.access_token)).aud, API_AUDIENCE, "the policy's only audience by default")
  })

  t.test('refusals: bad subject token, token types, clients without a policy', async (t) => {
    const garbage = await exchange({ subject_token: 'not-a-token' })
    t.equal(garbage.status, 400)
    t.equal(garbage.json?.error, 'invalid_grant')
    const subjectToken = String((await tokensFor(h)).access_token)
    const jwtType = await exchange({ subject_token: subjectToken, subject_token_type: 'urn:ietf:params:oauth:token-type:jwt' })
    t.equal(jwtType.json?.error, 'invalid_request')
    const refreshType = await exchange({ subject_token: subjectToken, requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' })
    t.equal(refreshType.json?.error, 'invalid_request')
    const noType = await reply(postForm(`${h.url}/token`, { grant_type: EXCHANGE, subject_token: subjectToken }, { authorization: exchangerAuth }))
    t.equal(noType.json?.error, 'invalid_request')
    const web = await exchange({ subject_token: subjectToken }, basic('web'))
    t.equal(web.json?.error, 'unauthorized_client', 'a client without the grant')
  })

  t.test("a trusted issuer's access token: the person its identity provider maps, act naming the client", async (t) => {
    const now = epochSeconds(h.clock)
    const foreign = (iss: string, claims: Record<string, unknown> = {}): Promise<string> =>
      new SignJWT({
        iss,
        sub: 'u-77',
        aud: 'https://corp-api.example.com',
        client_id: 'corp-app',
        scope: 'orders:read',
        iat: now,
        exp: now + 300,
        jti: crypto.randomUUID(),
        ...claims,
      })
        .setProtectedHeader({ alg: 'ES256', kid: 'c1', typ: 'at+jwt' })
        .sign(corpKeys.privateKey)
    const r = await exchange({ subject_token: await foreign(corp) })
    t.equal(r.status, 200, r.text)
    const claims = decodeJwt(String(r.json?.access_token))
    t.equal(claims.iss, h.issuer)
    t.equal(claims.sub, 'corp:u-77', 'the sub a browser sign-in at corp gives')
    t.equal(claims.scope, 'orders:read')
    t.same(claims.act, { sub: 'exchanger' })
    t.equal(claims.grant_id, undefined, 'no grant of ours')
    const jwtType = await exchange({ subject_token: await foreign(corp), subject_token_type: 'urn:ietf:params:oauth:token-type:jwt' })
    t.equal(jwtType.status, 200, 'the generic jwt type names it too')

    const before = h.logs.length
    const unmapped = await exchange({ subject_token: await foreign(other) })
    t.equal(unmapped.json?.error, 'invalid_grant')
    t.equal(
      h.logs.slice(before).find((l) => l.msg === 'request refused')?.cause,
      'token exchange: unmapped subject: no identity provider has the trusted issuer of the subject token',
    )
    const expired = await exchange({ subject_token: await foreign(corp, { iat: now - 900, exp: now - 300 }) })
    t.equal(expired.json?.error, 'invalid_grant')
    const wider = await exchange({ subject_token: await foreign(corp), scope: 'orders:read orders:write' })
    t.equal(wider.json?.error, 'invalid_scope')
    const forged = await exchange({ subject_token: `${(await foreign(corp)).slice(0, -4)}AAAA` })
    t.equal(forged.json?.error, 'invalid_grant')
  })
})
