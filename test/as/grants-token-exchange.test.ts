/**
 * RFC 8693 token exchange at /token, driven by oauth4webapi's
 * genericTokenEndpointRequest unmodified: a client with a `token_exchange`
 * policy turns a person's access token into one for a narrower audience and
 * scope, `act` naming who acts (nested when the subject token already had
 * one; a workload's platform token may name the actor, with its issuer),
 * `may_act` honoured, no refresh token unless the policy says
 * `refresh_tokens: true`, and revoking the subject's grant revokes what was
 * exchanged from it, refresh family included.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import * as oauth from 'oauth4webapi'
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose'
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
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt'
const K8S = 'https://kubernetes.default.svc'
const PLANNER = 'system:serviceaccount:agents:planner'

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
  // A workload platform (a Kubernetes cluster) whose service account tokens may name the actor.
  const k8sKeys = await generateKeyPair('ES256')
  const k8sJwk = { ...(await exportJWK(k8sKeys.publicKey)), kid: 'k8s-1', alg: 'ES256' }
  const strangerKeys = await generateKeyPair('ES256')
  const yaml = await backYaml({
    asExtra: [
      '  identity_providers:',
      `    - { id: corp, name: Corp SSO, issuer: "${corp}", client_id: bearward }`,
      '  assertion_issuers:',
      `    - { issuer: "${K8S}", kind: workload, jwks: ${JSON.stringify({ keys: [k8sJwk] })}, subjects: { "${PLANNER}": planner } }`,
    ].join('\n'),
    clientsExtra: [
      `    - { client_id: exchanger, type: confidential, secret_hash: "${hash}", grant_types: [token-exchange], scopes: [openid, profile, email, orders:read, orders:write], token_exchange: { audiences: ["${API_AUDIENCE}"] } }`,
      `    - { client_id: refresher, type: confidential, secret_hash: "${hash}", grant_types: [token-exchange, refresh_token], scopes: [openid, profile, email, orders:read, orders:write], token_exchange: { audiences: ["${API_AUDIENCE}"], refresh_tokens: true } }`,
      `    - { client_id: reader, type: confidential, secret_hash: "${hash}", grant_types: [token-exchange], scopes: [orders:read], token_exchange: { audiences: ["${API_AUDIENCE}"] } }`,
      '    - { client_id: planner, type: confidential, token_endpoint_auth_method: private_key_jwt, grant_types: [client_credentials], scopes: [orders:read] }',
    ].join('\n'),
  })
  const served = await serveRuntime(
    `${yaml}issuers:\n  - { id: corp, issuer: "${corp}", jwks_uri: "${corp}/jwks", algorithms: [ES256] }\n  - { id: other, issuer: "${other}", jwks_uri: "${corp}/jwks", algorithms: [ES256] }\n`,
    { signingKey: () => generatePrivateJwk('ES256') },
  )
  const h: Harness = { ...served, url: served.publicUrl, issuer: served.publicUrl }
  t.teardown(() => h.close())
  const exchangerAuth = `Basic ${Buffer.from(`exchanger:${SECRET}`).toString('base64')}`
  const refresherAuth = `Basic ${Buffer.from(`refresher:${SECRET}`).toString('base64')}`
  const exchange = (params: Record<string, string>, auth = exchangerAuth): Promise<Reply> =>
    reply(postForm(`${h.url}/token`, { grant_type: EXCHANGE, subject_token_type: ACCESS_TOKEN, ...params }, { authorization: auth }))
  const refresh = (refreshToken: string, extra: Record<string, string> = {}): Promise<Reply> =>
    reply(postForm(`${h.url}/token`, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra }, { authorization: refresherAuth }))
  /** The cause the server logged for the last refusal since `before`. */
  const causeSince = (before: number): unknown => h.logs.slice(before).find((l) => l.msg === 'request refused')?.cause

  /** A Kubernetes service account token, as a pod's projected volume holds it (aud: this server). */
  async function saToken(o: { sub?: string; iss?: string; aud?: string; key?: CryptoKey; life?: [number, number] } = {}): Promise<string> {
    const now = epochSeconds(h.clock)
    const [from, to] = o.life ?? [0, 600]
    return new SignJWT({
      iss: o.iss ?? K8S,
      sub: o.sub ?? PLANNER,
      aud: [o.aud ?? h.issuer],
      iat: now + from,
      nbf: now + from,
      exp: now + to,
      jti: crypto.randomUUID(),
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'k8s-1' })
      .sign(o.key ?? k8sKeys.privateKey)
  }

  t.test('metadata lists the grant', async (t) => {
    const m = (await send(`${h.url}/.well-known/oauth-authorization-server`)).json ?? {}
    t.ok((m.grant_types_supported as string[]).includes(EXCHANGE))
  })

  t.test('RFC 9396: authorization_details on a token exchange is refused with invalid_request, nothing issued', async (t) => {
    const person = await tokensFor(h)
    const params = { subject_token: String(person.access_token), resource: API_AUDIENCE, scope: 'orders:read' }
    const refused = await exchange({
      ...params,
      authorization_details: JSON.stringify([{ type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '500.00' } }]),
    })
    t.equal(refused.status, 400)
    t.equal(refused.json?.error, 'invalid_request')
    t.match(refused.json?.error_description, /authorization_details is not supported with grant_type urn:ietf:params:oauth:grant-type:token-exchange/)
    t.notOk('access_token' in (refused.json ?? {}), 'no token without the details asked for')
    t.equal((await exchange(params)).status, 200, 'the same exchange without details goes through')
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

  t.test("the exchanging client's scopes cap what it gets, as for every grant", async (t) => {
    const readerAuth = `Basic ${Buffer.from(`reader:${SECRET}`).toString('base64')}`
    const subjectToken = String((await tokensFor(h, { scope: 'openid orders:read orders:write' })).access_token)
    const write = await exchange({ subject_token: subjectToken, scope: 'orders:write' }, readerAuth)
    t.equal(write.status, 400, 'a client allowed only orders:read cannot get orders:write')
    t.equal(write.json?.error, 'invalid_scope')
    t.notOk(write.json?.access_token)
    const byDefault = await exchange({ subject_token: subjectToken }, readerAuth)
    t.equal(byDefault.status, 200, byDefault.text)
    t.equal(byDefault.json?.scope, 'orders:read', "the subject token's scope within the client's")
    t.equal(decodeJwt(String(byDefault.json?.access_token)).scope, 'orders:read')
    const none = await exchange({ subject_token: String((await tokensFor(h, { scope: 'openid' })).access_token) }, readerAuth)
    t.equal(none.status, 400, 'nothing of the subject token is available to this client')
    t.equal(none.json?.error, 'invalid_scope')
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

    // Its acr is the other issuer's: spelt like ours and not in the provider's acr_values, it is left out.
    const acrOf = async (acr: string): Promise<unknown> =>
      decodeJwt(String((await exchange({ subject_token: await foreign(corp, { acr, amr: ['pwd'] }) })).json?.access_token)).acr
    t.equal(await acrOf('mfa'), undefined, "the issuer's mfa is not ours")
    t.equal(await acrOf('urn:corp:loa:3'), 'urn:corp:loa:3', 'another value keeps its spelling, met only by itself')
  })
  t.test('refresh_tokens: a family bound to the subject grant; refresh rotates and keeps act, audience and scope', async (t) => {
    const person = await tokensFor(h)
    const original = decodeJwt(String(person.access_token))
    const r = await exchange({ subject_token: String(person.access_token), scope: 'orders:read' }, refresherAuth)
    t.equal(r.status, 200, r.text)
    t.type(r.json?.refresh_token, 'string', 'the policy says refresh_tokens: true')
    const first = String(r.json?.refresh_token)

    const refreshed = await refresh(first)
    t.equal(refreshed.status, 200, refreshed.text)
    const second = String(refreshed.json?.refresh_token)
    t.type(refreshed.json?.refresh_token, 'string')
    t.not(second, first, 'rotated')
    t.equal(refreshed.json?.id_token, undefined, 'no ID token')
    t.equal(refreshed.json?.scope, 'orders:read')
    const claims = decodeJwt(String(refreshed.json?.access_token))
    t.equal(claims.sub, 'alice')
    t.equal(claims.aud, API_AUDIENCE, 'the exchanged audience')
    t.equal(claims.scope, 'orders:read', 'the narrowed scope')
    t.equal(claims.client_id, 'refresher')
    t.same(claims.act, { sub: 'refresher' }, 'act kept')
    t.equal(claims.grant_id, original.grant_id, "the subject's grant id, so its revocation reaches the token")
    t.same((await introspect(h, String(refreshed.json?.access_token))).act, { sub: 'refresher' })

    const wider = await refresh(second, { scope: 'orders:read orders:write' })
    t.equal(wider.json?.error, 'invalid_scope', 'never wider than the exchange')
    const elsewhere = await refresh(second, { resource: h.issuer })
    t.equal(elsewhere.json?.error, 'invalid_target', 'never another audience')
    const narrower = await refresh(second)
    t.equal(narrower.status, 200, 'the refused attempts left the token current')
  })

  t.test("revoking the subject's grant ends the exchanged family and its tokens", async (t) => {
    const person = await tokensFor(h)
    const r = await exchange({ subject_token: String(person.access_token) }, refresherAuth)
    const refreshed = await refresh(String(r.json?.refresh_token))
    t.equal(refreshed.status, 200, refreshed.text)
    const revoked = await reply(
      postForm(`${h.url}/revoke`, { token: String(person.refresh_token), token_type_hint: 'refresh_token' }, { authorization: basic('web') }),
    )
    t.equal(revoked.status, 200)
    t.same(await introspect(h, String(refreshed.json?.access_token)), { active: false }, 'the refreshed access token is revoked with the grant')
    const before = h.logs.length
    const after = await refresh(String(refreshed.json?.refresh_token))
    t.equal(after.status, 400)
    t.equal(after.json?.error, 'invalid_grant')
    t.equal(causeSince(before), "token exchange: the subject token's grant is revoked or ended")
    t.same(await introspect(h, String(refreshed.json?.refresh_token), 'refresh_token'), { active: false }, 'the family itself is gone')
  })

  t.test("a replayed refresh token of the family revokes the family, and the subject's grant its tokens carry", async (t) => {
    const person = await tokensFor(h)
    const r = await exchange({ subject_token: String(person.access_token) }, refresherAuth)
    const first = String(r.json?.refresh_token)
    const refreshed = await refresh(first)
    t.equal(refreshed.status, 200, refreshed.text)
    const before = h.logs.length
    const replay = await refresh(first)
    t.equal(replay.status, 400)
    t.equal(replay.json?.error, 'invalid_grant')
    t.equal(causeSince(before), 'replaced refresh token reused; family revoked')
    t.equal((await refresh(String(refreshed.json?.refresh_token))).json?.error, 'invalid_grant', 'the current token of the family too')
    t.same(await introspect(h, String(refreshed.json?.access_token)), { active: false }, "the family's access token")
    t.same(await introspect(h, String(r.json?.access_token)), { active: false }, 'the first exchanged one')
    const personRefresh = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: String(person.refresh_token) })
    t.equal(personRefresh.json?.error, 'invalid_grant', "the subject's grant is revoked with it")
  })

  t.test('no refresh token for a subject token without a grant, nor without the policy', async (t) => {
    const serviceToken = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read' })
    const r = await exchange({ subject_token: String(serviceToken.json?.access_token) }, refresherAuth)
    t.equal(r.status, 200, r.text)
    t.equal(r.json?.refresh_token, undefined, "a client's own token has no grant to bind a family to")
    const off = await exchange({ subject_token: String((await tokensFor(h)).access_token) })
    t.equal(off.status, 200, off.text)
    t.equal(off.json?.refresh_token, undefined, 'off by default')
  })

  t.test("a workload's platform token as the actor: act names it with its issuer, an earlier act nested inside", async (t) => {
    const subjectToken = String((await tokensFor(h)).access_token)
    const service = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read' })
    const delegated = await exchange({ subject_token: subjectToken, actor_token: String(service.json?.access_token), actor_token_type: ACCESS_TOKEN })
    t.equal(delegated.status, 200, delegated.text)

    const r = await exchange({ subject_token: String(delegated.json?.access_token), actor_token: await saToken(), actor_token_type: JWT_TYPE })
    t.equal(r.status, 200, r.text)
    const expected = { sub: PLANNER, iss: K8S, act: { sub: 'service', client_id: 'service' } }
    t.same(decodeJwt(String(r.json?.access_token)).act, expected, 'RFC 8693 4.1: the current actor outermost, with its iss')
    t.same((await introspect(h, String(r.json?.access_token))).act, expected, 'introspection says the same')
    const asAccessToken = await exchange({ subject_token: subjectToken, actor_token: await saToken(), actor_token_type: ACCESS_TOKEN })
    t.equal(asAccessToken.status, 200, 'named by the access_token type too')
  })

  t.test('actor tokens of other issuers: each refusal is invalid_grant with its cause logged', async (t) => {
    const subjectToken = String((await tokensFor(h)).access_token)
    const refused = async (actorToken: string, cause: string): Promise<void> => {
      const before = h.logs.length
      const r = await exchange({ subject_token: subjectToken, actor_token: actorToken, actor_token_type: JWT_TYPE })
      t.equal(r.status, 400, `${cause}: status`)
      t.equal(r.json?.error, 'invalid_grant', `${cause}: error`)
      t.equal(causeSince(before), `token exchange: actor token: ${cause}`)
    }
    await refused(await saToken({ iss: 'https://unknown-cluster.example', key: strangerKeys.privateKey }), 'unknown issuer')
    await refused(await saToken({ iss: corp, key: corpKeys.privateKey }), 'unknown issuer')
    await refused(await saToken({ key: strangerKeys.privateKey }), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED')
    await refused(await saToken({ life: [-900, -300] }), 'expired')
    await refused(await saToken({ aud: 'https://other-as.example.com' }), 'wrong aud')
    await refused(await saToken({ sub: 'system:serviceaccount:other:sa' }), 'unmapped subject')
    const once = await saToken()
    t.equal((await exchange({ subject_token: subjectToken, actor_token: once, actor_token_type: JWT_TYPE })).status, 200)
    await refused(once, 'jti replayed')
  })

  t.test("may_act names a workload by sub and iss; a refused exchange does not burn the actor's token", async (t) => {
    const now = epochSeconds(h.clock)
    const withMayAct = (mayAct: Record<string, unknown>): Promise<string> =>
      signJwt(h.as.keys.signing, 'at+jwt', {
        iss: h.issuer,
        sub: 'alice',
        aud: h.issuer,
        client_id: 'web',
        scope: 'orders:read',
        iat: now,
        exp: now + 300,
        jti: crypto.randomUUID(),
        may_act: mayAct,
      })
    const actorToken = await saToken()
    const before = h.logs.length
    const noIss = await exchange({ subject_token: await withMayAct({ sub: PLANNER }), actor_token: actorToken, actor_token_type: JWT_TYPE })
    t.equal(noIss.json?.error, 'invalid_grant', "a may_act without iss names one of ours, never the platform's sub")
    t.equal(causeSince(before), 'token exchange: the actor is not the one may_act names')
    const otherIss = await exchange({ subject_token: await withMayAct({ sub: PLANNER, iss: corp }), actor_token: actorToken, actor_token_type: JWT_TYPE })
    t.equal(otherIss.json?.error, 'invalid_grant', 'another issuer')
    const named = await exchange({ subject_token: await withMayAct({ sub: PLANNER, iss: K8S }), actor_token: actorToken, actor_token_type: JWT_TYPE })
    t.equal(named.status, 200, `the actor may_act names, with the token two refusals left unused: ${named.text}`)
    t.same(decodeJwt(String(named.json?.access_token)).act, { sub: PLANNER, iss: K8S })
  })
})
