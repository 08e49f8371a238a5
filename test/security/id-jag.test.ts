/**
 * Attacks on the jwt-bearer grant with an ID-JAG (#38): the person's
 * enterprise IdP vouches for them, so the grant is an authorization like a
 * browser sign-in at that provider, and the same two-factor rule holds. A
 * client with `require_mfa` (or a server with `mfa.required`) gets no grant
 * from an assertion that does not say the person used two factors: its
 * `acr` mapped to `mfa`/`phr` by the provider's `acr_values`, or an `amr`
 * with `mfa` (docs/people.md); an unmapped `mfa` spelt like ours says nothing.
 */
import t from 'tap'
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose'
import { hashSecret } from '../../src/crypto/secret.js'
import { startAs } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
const CORP = 'http://127.0.0.1:9/corp'
const SECRET = 'agent-secret-0123456789abcdefghijklmnopqrst'

t.test('an ID-JAG without two factors gets no grant for a client that requires them', async (t) => {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'corp-1', alg: 'ES256' }
  const hash = await hashSecret(SECRET)
  const h = await startAs({
    asExtra: [
      '  identity_providers:',
      `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward, acr_values: { "urn:corp:loa:2": mfa } }`,
      '  assertion_issuers:',
      `    - { issuer: "${CORP}", kind: id-jag, jwks: ${JSON.stringify({ keys: [jwk] })} }`,
    ].join('\n'),
    clientsExtra: [
      `    - { client_id: strict, type: confidential, secret_hash: "${hash}", grant_types: [jwt-bearer], scopes: [orders:read], require_mfa: true }`,
      `    - { client_id: relaxed, type: confidential, secret_hash: "${hash}", grant_types: [jwt-bearer], scopes: [orders:read] }`,
    ].join('\n'),
  })
  t.teardown(() => h.close())

  const grant = async (clientId: string, signIn: Record<string, unknown>) => {
    const now = Math.floor(h.clock.now() / 1000)
    const assertion = await new SignJWT({ sub: 'user-123', client_id: clientId, jti: crypto.randomUUID(), scope: 'orders:read', ...signIn })
      .setProtectedHeader({ alg: 'ES256', kid: 'corp-1', typ: 'oauth-id-jag+jwt' })
      .setIssuer(CORP)
      .setAudience(h.issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(privateKey)
    const auth = `Basic ${Buffer.from(`${clientId}:${SECRET}`).toString('base64')}`
    return reply(postForm(`${h.url}/token`, { grant_type: JWT_BEARER, assertion }, { authorization: auth }))
  }

  const oneFactor: ReadonlyArray<[string, Record<string, unknown>]> = [
    ['no acr or amr', {}],
    ['acr pwd', { acr: 'pwd', amr: ['pwd'] }],
    ['an unmapped acr spelt like ours (mfa)', { acr: 'mfa' }],
    ['an unmapped acr spelt like ours (phr)', { acr: 'phr' }],
    ['an unknown acr', { acr: 'urn:corp:loa:1' }],
  ]
  for (const [what, signIn] of oneFactor) {
    const r = await grant('strict', signIn)
    t.equal(r.status, 400, `${what}: refused for require_mfa (${r.text.slice(0, 120)})`)
    t.equal(r.json?.error, 'invalid_grant', what)
    const strictEntries = (await h.store.allowances.list('corp:user-123')).filter((a) => a.clientId === 'strict')
    t.same(strictEntries, [], `${what}: nothing on the account page for the refused client`)
    t.equal((await grant('relaxed', signIn)).status, 200, `${what}: a client without require_mfa gets its grant`)
  }

  const twoFactors: ReadonlyArray<[string, Record<string, unknown>]> = [
    ['the acr acr_values maps to mfa', { acr: 'urn:corp:loa:2' }],
    ['an amr with mfa', { amr: ['pwd', 'otp', 'mfa'] }],
  ]
  for (const [what, signIn] of twoFactors) {
    const r = await grant('strict', signIn)
    t.equal(r.status, 200, `${what}: granted (${r.text.slice(0, 120)})`)
    t.equal(decodeJwt(String(r.json?.access_token)).sub, 'corp:user-123', what)
  }
})
