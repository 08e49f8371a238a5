/**
 * RFC 7523 assertions from other issuers (`assertion_issuers`):
 * - the jwt-bearer grant with an ID-JAG (the person's enterprise IdP vouches
 *   for them to this client), driven by oauth4webapi's
 *   genericTokenEndpointRequest unmodified; the person found through the
 *   identity provider with the same issuer (the `sub` a browser sign-in
 *   there gives) or by the email rule;
 * - workload identity: a Kubernetes service account token authenticates the
 *   client its `sub` is mapped to.
 * Each refusal the issue lists (wrong typ, aud, expired, replayed jti,
 * unknown issuer, unmapped subject, client mismatch) is tested for its
 * answer, its stable code and its logged cause.
 */
import t, { type Test } from 'tap'
import * as oauth from 'oauth4webapi'
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { SECRETS, send, startAs, type Harness, type Reply } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
const insecure = { [oauth.allowInsecureRequests]: true } as const
/** The corp IdP is also an identity provider people sign in with (its discovery fails quietly: port 9 refuses). */
const CORP = 'http://127.0.0.1:9/corp'
const MAIL_IDP = 'https://mail-idp.example.com'
const K8S = 'https://kubernetes.default.svc'
const K8S_AUDIENCE = 'bearward-test'
const SERVICE_ACCOUNT = 'system:serviceaccount:billing:api'

interface Signer {
  key: CryptoKey
  jwk: JWK
}

async function signer(kid: string): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  return { key: privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' } }
}

t.test('assertion issuers: ID-JAG grants and workload identity', async (t) => {
  const corp = await signer('corp-1')
  const mail = await signer('mail-1')
  const k8s = await signer('k8s-1')
  const stranger = await signer('corp-1')
  const clock = new ManualClock(Date.now())
  const jwks = (s: Signer): string => JSON.stringify({ keys: [s.jwk] })
  const h: Harness = await startAs({
    clock,
    // Every refusal below comes from this one address: the throttle over them is client-auth-assertions.test.ts's.
    rateLimit: { client_auth_max_failures: 1000, client_auth_address_max_failures: 1000 },
    asExtra: [
      '  identity_providers:',
      `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward, acr_values: { "urn:corp:loa:2": mfa } }`,
      '  assertion_issuers:',
      `    - { issuer: "${CORP}", kind: id-jag, jwks: ${jwks(corp)} }`,
      `    - { issuer: "${MAIL_IDP}", kind: id-jag, jwks: ${jwks(mail)}, person: { claim: email } }`,
      `    - { issuer: "${K8S}", kind: workload, jwks: ${jwks(k8s)}, audience: ${K8S_AUDIENCE}, subjects: { "${SERVICE_ACCOUNT}": billing } }`,
    ].join('\n'),
    clientsExtra: [
      `    - { client_id: agent, type: confidential, secret_hash: "${await hashFor('agent')}", grant_types: [jwt-bearer], scopes: [openid, orders:read, orders:write] }`,
      '    - { client_id: billing, type: confidential, token_endpoint_auth_method: private_key_jwt, grant_types: [client_credentials], scopes: [orders:read] }',
    ].join('\n'),
  })
  t.teardown(() => h.close())
  const tokenUrl = `${h.url}/token`
  const agentAuth = `Basic ${Buffer.from(`agent:${AGENT_SECRET}`).toString('base64')}`

  /** An ID-JAG as an enterprise IdP issues it for `agent`, with the test's changes. */
  async function idJag(o: { by?: Signer; iss?: string; claims?: Record<string, unknown>; omit?: string[]; typ?: string | null } = {}): Promise<string> {
    const now = Math.floor(clock.now() / 1000)
    const claims: Record<string, unknown> = {
      iss: o.iss ?? CORP,
      sub: 'user-123',
      aud: h.issuer,
      client_id: 'agent',
      jti: crypto.randomUUID(),
      iat: now,
      exp: now + 300,
      scope: 'orders:read',
      ...o.claims,
    }
    for (const name of o.omit ?? []) delete claims[name]
    const by = o.by ?? corp
    const header: Record<string, unknown> = { alg: 'ES256', kid: by.jwk.kid }
    if (o.typ !== null) header.typ = o.typ ?? 'oauth-id-jag+jwt'
    return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(by.key)
  }

  /** A Kubernetes projected service account token (no typ, aud a list, an hour long). */
  async function saToken(o: { claims?: Record<string, unknown>; typ?: string; by?: Signer } = {}): Promise<string> {
    const now = Math.floor(clock.now() / 1000)
    const claims = { iss: K8S, sub: SERVICE_ACCOUNT, aud: [K8S_AUDIENCE], iat: now, nbf: now, exp: now + 3600, ...o.claims }
    const header: Record<string, unknown> = { alg: 'ES256', kid: 'k8s-1' }
    if (o.typ !== undefined) header.typ = o.typ
    return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign((o.by ?? k8s).key)
  }

  const grant = (assertion: string, extra: Record<string, string> = {}): Promise<Reply> =>
    reply(postForm(tokenUrl, { grant_type: JWT_BEARER, assertion, ...extra }, { authorization: agentAuth }))

  async function grantRefused(t: Test, assertion: string, cause: string, extra: Record<string, string> = {}): Promise<void> {
    const before = h.logs.length
    const r = await grant(assertion, extra)
    t.equal(r.status, 400, `${cause}: status`)
    t.same(r.json, { error: 'invalid_grant', error_description: 'The assertion is invalid, expired, replayed, or was issued for another client' }, cause)
    const line = h.logs.slice(before).find((l) => l.msg === 'request refused')
    t.equal(line?.code, 'ERR_INVALID_ASSERTION_GRANT', `${cause}: code logged`)
    t.equal(line?.cause, `id-jag: ${cause}`, `${cause}: cause logged`)
  }

  const withSa = (assertion: string, extra: Record<string, string> = {}): Promise<Reply> =>
    reply(postForm(tokenUrl, { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: assertion, ...extra }))

  async function saRefused(t: Test, assertion: string, cause: string, extra: Record<string, string> = {}): Promise<void> {
    const before = h.logs.length
    const r = await withSa(assertion, extra)
    t.equal(r.status, 401, `${cause}: status`)
    t.same(r.json, { error: 'invalid_client', error_description: 'The client assertion is invalid' }, cause)
    const line = h.logs.slice(before).find((l) => l.msg === 'request refused')
    t.equal(line?.code, 'ERR_INVALID_CLIENT_ASSERTION', `${cause}: code logged`)
    t.equal(line?.cause, `workload token: ${cause}`, `${cause}: cause logged`)
  }

  t.test('AS metadata lists the jwt-bearer grant', async (t) => {
    const m = (await send(`${h.url}/.well-known/oauth-authorization-server`)).json ?? {}
    t.ok((m.grant_types_supported as string[]).includes(JWT_BEARER))
  })

  t.test('oauth4webapi genericTokenEndpointRequest, unmodified: an ID-JAG for the person the identity provider knows', async (t) => {
    const as = await oauth.processDiscoveryResponse(new URL(h.issuer), await oauth.discoveryRequest(new URL(h.issuer), { algorithm: 'oauth2', ...insecure }))
    const client: oauth.Client = { client_id: 'agent' }
    const res = await oauth.genericTokenEndpointRequest(as, client, oauth.ClientSecretBasic(AGENT_SECRET), JWT_BEARER, { assertion: await idJag() }, insecure)
    const body = await oauth.processGenericTokenEndpointResponse(as, client, res)
    const claims = decodeJwt(body.access_token)
    t.equal(claims.sub, 'corp:user-123', 'the sub a browser sign-in at the corp provider gives')
    t.equal(claims.client_id, 'agent')
    t.equal(claims.scope, 'orders:read', "the assertion's scope")
    t.equal(claims.aud, h.issuer)
    t.type(claims.grant_id, 'string', 'a grant, withdrawable like a code flow one')
    t.equal(body.refresh_token, undefined, 'no refresh token: the client has no refresh_token grant')
    t.same(await h.store.allowances.list('corp:user-123').then((a) => a.map((x) => x.clientId)), ['agent'], "on the person's account page")
  })

  t.test('RFC 9396: authorization_details with an ID-JAG is refused with invalid_request, and the assertion is not spent', async (t) => {
    const assertion = await idJag()
    const refused = await grant(assertion, {
      authorization_details: JSON.stringify([{ type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '500.00' } }]),
    })
    t.equal(refused.status, 400)
    t.equal(refused.json?.error, 'invalid_request')
    t.match(refused.json?.error_description, /authorization_details is not supported with grant_type urn:ietf:params:oauth:grant-type:jwt-bearer/)
    t.notOk('access_token' in (refused.json ?? {}))
    t.equal((await grant(assertion)).status, 200, 'the same assertion without details: tokens (its jti was not used)')
  })

  t.test('the email rule finds a local user; the request may narrow the scope, never widen it', async (t) => {
    const r = await grant(
      await idJag({ by: mail, iss: MAIL_IDP, claims: { sub: 'opaque-42', email: 'alice@example.com', scope: 'orders:read orders:write' } }),
      {
        scope: 'orders:read',
      },
    )
    t.equal(r.status, 200, r.text)
    t.equal(decodeJwt(String(r.json?.access_token)).sub, 'alice')
    t.equal(r.json?.scope, 'orders:read')
    const wider = await grant(await idJag({ claims: { scope: 'orders:read' } }), { scope: 'orders:read orders:write' })
    t.equal(wider.status, 400)
    t.equal(wider.json?.error, 'invalid_scope')
    t.equal(wider.json?.error_description, 'The requested scope `orders:write` exceeds what the assertion grants', 'names the scope at fault')
    const nothing = await grant(await idJag({ claims: { scope: 'profile' } }))
    t.equal(nothing.status, 400, 'a scope the client may use none of grants nothing')
    t.equal(nothing.json?.error, 'invalid_scope')
  })

  t.test("an ID-JAG's acr is ours only through its identity provider's acr_values; an unmapped mfa is left out", async (t) => {
    const acrOf = async (assertion: string): Promise<unknown> => {
      const r = await grant(assertion)
      t.equal(r.status, 200, r.text)
      return decodeJwt(String(r.json?.access_token)).acr
    }
    t.equal(await acrOf(await idJag({ claims: { acr: 'urn:corp:loa:2' } })), 'mfa', "mapped by the corp provider's acr_values")
    t.equal(await acrOf(await idJag({ claims: { acr: 'mfa' } })), undefined, 'the literal mfa, unmapped: left out')
    t.equal(await acrOf(await idJag({ claims: { acr: 'urn:corp:other' } })), 'urn:corp:other', 'another value keeps its spelling')
    const viaMail = (acr: string): Promise<string> => idJag({ by: mail, iss: MAIL_IDP, claims: { sub: 'opaque-42', email: 'alice@example.com', acr } })
    t.equal(await acrOf(await viaMail('phr')), undefined, 'an issuer with no identity provider maps nothing: its phr is left out')
    t.equal(await acrOf(await viaMail('urn:mail:gold')), 'urn:mail:gold')
  })

  t.test('each refusal of an ID-JAG: invalid_grant, ERR_INVALID_ASSERTION_GRANT, its cause logged', async (t) => {
    const now = Math.floor(clock.now() / 1000)
    await grantRefused(t, await idJag({ typ: 'JWT' }), 'wrong typ')
    await grantRefused(t, await idJag({ typ: null }), 'wrong typ')
    await grantRefused(t, await idJag({ claims: { aud: 'https://other-as.example.com' } }), 'wrong aud')
    await grantRefused(t, await idJag({ claims: { iat: now - 900, exp: now - 300 } }), 'expired')
    await grantRefused(t, await idJag({ iss: 'https://unknown-idp.example.com' }), 'unknown issuer')
    await grantRefused(t, await saToken(), 'unknown issuer')
    await grantRefused(t, await idJag({ claims: { client_id: 'web' } }), 'client mismatch: client_id claim is not the authenticated client')
    await grantRefused(t, await idJag({ by: mail, iss: MAIL_IDP, claims: { email: 'nobody@example.com' } }), 'unmapped subject: no user with this email')
    await grantRefused(
      t,
      await idJag({ by: mail, iss: MAIL_IDP, claims: { email: 'alice@example.com', email_verified: false } }),
      'unmapped subject: email not verified',
    )
    await grantRefused(t, await idJag({ by: stranger }), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED')
    await grantRefused(t, await idJag({ omit: ['jti'] }), 'jti missing or too long')
    const once = await idJag()
    t.equal((await grant(once)).status, 200)
    await grantRefused(t, once, 'jti replayed')
  })

  t.test('a client without the jwt-bearer grant is unauthorized_client', async (t) => {
    const r = await reply(
      postForm(
        tokenUrl,
        { grant_type: JWT_BEARER, assertion: await idJag() },
        { authorization: `Basic ${Buffer.from(`service:${encodeURIComponent(SECRETS.service ?? '')}`).toString('base64')}` },
      ),
    )
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'unauthorized_client')
  })

  t.test('a Kubernetes service account token authenticates the client its subject maps to, for its whole life', async (t) => {
    const sa = await saToken()
    const r = await withSa(sa, { scope: 'orders:read' })
    t.equal(r.status, 200, r.text)
    t.equal(decodeJwt(String(r.json?.access_token)).sub, 'billing')
    t.equal((await withSa(sa)).status, 200, 'the platform reuses its token: no jti rule here')
    t.equal((await withSa(sa, { client_id: 'billing' })).status, 200, 'client_id beside it may name the mapped client')
  })

  t.test('each refusal of a workload token: invalid_client, ERR_INVALID_CLIENT_ASSERTION, its cause logged', async (t) => {
    const now = Math.floor(clock.now() / 1000)
    await saRefused(t, await saToken({ claims: { sub: 'system:serviceaccount:other:sa' } }), 'unmapped subject')
    await saRefused(t, await saToken({ claims: { aud: ['https://kubernetes.default.svc'] } }), 'wrong aud')
    await saRefused(t, await saToken({ claims: { iat: now - 7200, nbf: now - 7200, exp: now - 3600 } }), 'expired')
    await saRefused(t, await saToken({ typ: 'oauth-id-jag+jwt' }), 'wrong typ')
    await saRefused(t, await saToken({ by: stranger }), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED')
    await saRefused(t, await saToken(), 'client mismatch: client_id is not the mapped client', { client_id: 'service' })
  })
})

const AGENT_SECRET = 'agent-secret-0123456789abcdefghijklmnopqrst'
async function hashFor(_id: string): Promise<string> {
  const { hashSecret } = await import('../../src/crypto/secret.js')
  return hashSecret(AGENT_SECRET)
}
