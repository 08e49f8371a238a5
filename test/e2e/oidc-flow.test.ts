import t from 'tap'
import * as oauth from 'oauth4webapi'
import { startBin, tempConfig } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import { asConfigYaml, DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import { freePort } from '../helpers/http.js'

/**
 * The whole authorization-code flow against the real binary, driven by a
 * client library nobody on the team wrote (oauth4webapi): discovery,
 * authorization URL, login, consent, callback check including iss, code
 * exchange, id_token validation, refresh, userinfo, and the gateway.
 */
t.test('authorization code + PKCE + OIDC with oauth4webapi', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const cfg = await tempConfig(await asConfigYaml({ port, upstream: up.url }))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const insecure = { [oauth.allowInsecureRequests]: true }
  const issuer = new URL(bin.url.replace(/\/$/, ''))

  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }))
  t.equal(as.issuer, issuer.href.replace(/\/$/, ''))
  t.ok(as.code_challenge_methods_supported?.includes('S256'), 'S256 advertised')
  t.equal(as.authorization_response_iss_parameter_supported, true)

  // No id_token_signed_response_alg: the library's default (RS256) must just work.
  const client: oauth.Client = { client_id: 'web' }
  const auth = oauth.ClientSecretBasic(DEMO_SECRET)
  const redirectUri = 'http://127.0.0.1:5555/callback'
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const nonce = oauth.generateRandomNonce()
  const url = new URL(as.authorization_endpoint!)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    scope: 'openid profile email orders:read',
    state,
    nonce,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString()

  const browser = new Browser()
  const callback = await authorizeAsPerson(browser, url.href, { username: 'alice', password: DEMO_PASSWORD })
  t.equal(callback.origin + callback.pathname, redirectUri, 'redirected to the registered callback')
  t.equal(callback.searchParams.get('iss'), as.issuer, 'RFC 9207 iss')
  t.equal(callback.searchParams.get('state'), state, 'state unchanged')

  const params = oauth.validateAuthResponse(as, client, callback, state)
  const tokenRes = await oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri, verifier, insecure)
  t.equal(tokenRes.headers.get('cache-control'), 'no-store')
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenRes, { expectedNonce: nonce, requireIdToken: true })
  t.equal(tokens.token_type.toLowerCase(), 'bearer')
  t.type(tokens.refresh_token, 'string')
  const claims = oauth.getValidatedIdTokenClaims(tokens)!
  t.equal(claims.sub, 'alice')
  t.equal(claims.aud, 'web')
  t.equal(claims.nonce, nonce)

  const [header] = tokens.access_token.split('.')
  t.equal(JSON.parse(Buffer.from(header!, 'base64url').toString()).typ, 'at+jwt', 'RFC 9068 access token')

  const viaGateway = await fetch(`${bin.url}/orders/42`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  t.equal(viaGateway.status, 200, 'the access token opens the protected route')
  t.equal(up.seen.at(-1)?.headers['x-auth-subject'], 'alice', 'the upstream learns who called')
  const write = await fetch(`${bin.url}/orders/42`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } })
  t.equal(write.status, 403, 'orders:write was not granted')
  t.match(write.headers.get('www-authenticate'), /error="insufficient_scope"/)

  const ui = await oauth.processUserInfoResponse(as, client, 'alice', await oauth.userInfoRequest(as, client, tokens.access_token, insecure))
  t.equal(ui.sub, 'alice')
  t.equal(ui.email, 'alice@example.com')
  t.equal(ui.name, 'Alice Example')

  const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure))
  t.not(refreshed.refresh_token, tokens.refresh_token, 'the refresh token rotated')
  t.equal((await fetch(`${bin.url}/orders/1`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })).status, 200)

  // Presenting the replaced refresh token again is theft: the whole family dies.
  const reuse = await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure)
  t.equal(reuse.status, 400)
  t.match(await reuse.json(), { error: 'invalid_grant' })
  const newest = await oauth.refreshTokenGrantRequest(as, client, auth, refreshed.refresh_token!, insecure)
  t.equal(newest.status, 400, 'the newest refresh token of the family is revoked too')
  const afterTheft = await fetch(`${bin.url}/orders/1`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })
  t.equal(afterTheft.status, 401, 'access tokens of the family no longer pass the gateway')
  t.match(afterTheft.headers.get('www-authenticate'), /error="invalid_token"/)
})
