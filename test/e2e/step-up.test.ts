/**
 * Step-up (RFC 9470) through `bin/bearward`: a route that demands an `acr`
 * and a recent sign-in, JWTs from a trusted issuer whose JWKS the test
 * serves. A token short of either gets 401 insufficient_user_authentication
 * with acr_values and max_age and reaches nothing; a fresh, strong one is
 * forwarded.
 */
import t from 'tap'
import { createServer } from 'node:http'
import { randomUUID } from 'node:crypto'
import { SignJWT } from 'jose'
import { startBinOrCleanUp, tempConfig } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { newKey } from '../gateway/fixture.js'
import { closeServer, listen } from '../helpers/http.js'

t.setTimeout(120_000)

const ISSUER = 'https://idp.example.com'
const AUDIENCE = 'https://api.example.com'

t.test('a route demanding acr and max_age, with a remote issuer', async (t) => {
  const key = await newKey('ES256', 'idp-1')
  const jwks = createServer((_req, res) => {
    res.setHeader('content-type', 'application/jwk-set+json')
    res.end(JSON.stringify({ keys: [key.publicJwk] }))
  })
  const jwksAt = await listen(jwks)
  const up = await startUpstream('pay')
  const cfg = await tempConfig(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://127.0.0.1:8080
store: memory
log: { level: info }
issuers:
  - id: idp
    issuer: ${ISSUER}
    jwks_uri: ${jwksAt.url}/jwks.json
    algorithms: [ES256]
routes:
  - name: pay
    match: { path: /pay }
    upstream: ${up.url}
    audience: ${AUDIENCE}
    issuers: [idp]
    scopes: { "*": [pay] }
    authentication: { acr: [urn:example:mfa], max_age: 5m }
`)
  const cleanup = async (): Promise<void> => {
    await up.close()
    await closeServer(jwks)
    await cfg.cleanup()
  }
  const bin = await startBinOrCleanUp(cfg.file, cleanup)
  t.teardown(async () => {
    await bin.stop()
    await cleanup()
  })

  const now = Math.floor(Date.now() / 1000)
  const token = (claims: Record<string, unknown>): Promise<string> =>
    new SignJWT({ sub: 'alice', client_id: 'app', scope: 'pay', jti: randomUUID(), ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(key.privateKey)
  const call = async (tok: string): Promise<Response> => {
    const res = await fetch(`${bin.url}/pay/1`, { headers: { authorization: `Bearer ${tok}` }, signal: AbortSignal.timeout(10_000) })
    await res.arrayBuffer()
    return res
  }
  const challenge = (description: string): string =>
    `Bearer realm="bearward", error="insufficient_user_authentication", error_description="${description}", acr_values="urn:example:mfa", max_age="300", scope="pay", resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/pay", DPoP algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"`

  const weak = await call(await token({ acr: 'urn:example:pwd', auth_time: now }))
  t.equal(weak.status, 401)
  t.equal(weak.headers.get('www-authenticate'), challenge('A different authentication level is required'))
  const old = await call(await token({ acr: 'urn:example:mfa', auth_time: now - 3600 }))
  t.equal(old.status, 401)
  t.equal(old.headers.get('www-authenticate'), challenge('More recent authentication is required'))
  t.equal(up.seen.length, 0, 'nothing reached the upstream')

  const fresh = await call(await token({ acr: 'urn:example:mfa', auth_time: now - 10 }))
  t.equal(fresh.status, 200)
  t.equal(up.seen.length, 1)
  t.equal(up.seen[0]?.headers['x-auth-subject'], 'alice')

  const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
  t.match(metrics, /bearward_token_validations_total\{result="insufficient_user_authentication"\} 2/)
})
