import t from 'tap'
import * as client from 'openid-client'
import { DEMO_SECRET } from '../helpers/as-config.js'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import {
  ALICE,
  POST_CLIENT_ID,
  WEB_REDIRECT_URI,
  expectedAtHash,
  jwsHeader,
  personDecidesDevice,
  startConformanceServer,
  startLoopbackReceiver,
} from '../helpers/conformance.js'

/**
 * bearward driven by a second client library nobody on the team wrote,
 * openid-client v6, through its high-level API: discovery, authorization
 * URL, code grant with the library's own state / nonce / iss / PKCE checks
 * and ID token validation, refresh, userinfo, protected resources, client
 * credentials, introspection, revocation and the device grant. Whatever
 * the library refuses is a defect of the server.
 */
t.test('openid-client v6', async (t) => {
  const server = await startConformanceServer()
  t.teardown(server.close)
  const issuer = new URL(server.issuer)
  const insecure: client.DiscoveryRequestOptions = { execute: [client.allowInsecureRequests] }
  const ordersUrl = (path = '/orders/42'): URL => new URL(path, server.origin)

  const web = await client.discovery(issuer, 'web', DEMO_SECRET, client.ClientSecretBasic(DEMO_SECRET), insecure)
  const cli = await client.discovery(issuer, 'cli', undefined, client.None(), insecure)
  const service = await client.discovery(issuer, 'service', DEMO_SECRET, client.ClientSecretBasic(DEMO_SECRET), insecure)

  await t.test('discovery at /.well-known/openid-configuration and RFC 8414 /.well-known/oauth-authorization-server', async (t) => {
    const oidc = web.serverMetadata()
    const oauth2 = (
      await client.discovery(issuer, 'web', DEMO_SECRET, client.ClientSecretBasic(DEMO_SECRET), { ...insecure, algorithm: 'oauth2' })
    ).serverMetadata()
    t.equal(oidc.issuer, server.issuer, 'the library accepted the issuer of the OIDC document')
    t.equal(oauth2.issuer, server.issuer, 'the library accepted the issuer of the RFC 8414 document')
    for (const key of [
      'authorization_endpoint',
      'token_endpoint',
      'jwks_uri',
      'userinfo_endpoint',
      'revocation_endpoint',
      'introspection_endpoint',
      'device_authorization_endpoint',
    ] as const) {
      t.type(oidc[key], 'string', `${key} advertised`)
      t.equal(oauth2[key], oidc[key], `${key} is the same in both documents`)
    }
    t.ok(web.serverMetadata().supportsPKCE('S256'), 'S256 PKCE advertised')
  })

  await t.test('confidential client (web, client_secret_basic): code + PKCE + nonce, id_token, userinfo, gateway, refresh, revocation', async (t) => {
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const nonce = client.randomNonce()
    const authUrl = client.buildAuthorizationUrl(web, {
      redirect_uri: WEB_REDIRECT_URI,
      scope: 'openid profile email orders:read',
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    t.equal(authUrl.origin + authUrl.pathname, web.serverMetadata().authorization_endpoint)
    t.notOk(authUrl.searchParams.has('client_secret'), 'no secret on the front channel')

    const browser = new Browser()
    const callback = await authorizeAsPerson(browser, authUrl.href, ALICE)
    t.equal(callback.origin + callback.pathname, WEB_REDIRECT_URI)
    t.same([...callback.searchParams.keys()].sort(), ['code', 'iss', 'state'], 'only code, state and iss travel back (RFC 9207)')

    // The library checks iss, state, the token response, and the ID token (signature via jwks_uri, iss, aud, exp, iat, nonce).
    const tokens = await client.authorizationCodeGrant(web, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })
    t.equal(tokens.token_type.toLowerCase(), 'bearer')
    t.ok((tokens.expiresIn() ?? 0) > 0, 'expires_in is given')
    t.type(tokens.refresh_token, 'string')
    t.same(tokens.scope?.split(' ').sort(), ['email', 'openid', 'orders:read', 'profile'])

    const claims = tokens.claims()
    if (claims === undefined) throw new Error('no id_token although scope had openid')
    t.equal(claims.iss, server.issuer)
    t.equal(claims.sub, 'alice')
    t.equal(claims.aud, 'web')
    t.equal(claims.nonce, nonce)
    const idHeader = jwsHeader(tokens.id_token!)
    t.ok(web.serverMetadata().id_token_signing_alg_values_supported?.includes(String(idHeader.alg)), 'id_token alg is advertised')
    t.equal(
      claims.at_hash,
      expectedAtHash(tokens.access_token, String(idHeader.alg)),
      'at_hash is the left half of the hash of the access token (OIDC Core 3.1.3.6)',
    )

    const userinfo = await client.fetchUserInfo(web, tokens.access_token, claims.sub)
    t.match(userinfo, { sub: 'alice', name: 'Alice Example', email: 'alice@example.com', email_verified: true })

    const read = await client.fetchProtectedResource(web, tokens.access_token, ordersUrl(), 'GET')
    t.equal(read.status, 200, 'the access token opens the route')
    t.match(await read.json(), { upstream: 'orders', method: 'GET', url: '/orders/42' })
    t.equal(server.upstream.seen.at(-1)?.headers['x-auth-subject'], 'alice')

    const write = await client.fetchProtectedResource(web, tokens.access_token, ordersUrl(), 'POST').then(
      () => null,
      (e: unknown) => e,
    )
    t.type(write, client.WWWAuthenticateChallengeError, 'the library reads a challenge from the 403')
    if (write instanceof client.WWWAuthenticateChallengeError) {
      t.equal(write.status, 403)
      t.match(write.cause[0], { scheme: 'bearer', parameters: { realm: 'bearward', error: 'insufficient_scope', scope: 'orders:write' } })
    }

    // A used code is refused even through a well-behaved library.
    const replay = await client.authorizationCodeGrant(web, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce }).then(
      () => null,
      (e: unknown) => e,
    )
    t.type(replay, client.ResponseBodyError)
    t.match(replay, { status: 400, error: 'invalid_grant' }, 'a replayed code is invalid_grant')

    // OIDC Core 3.1.2.1: with max_age the ID token MUST carry auth_time; the library checks it against maxAge.
    const maxAgeVerifier = client.randomPKCECodeVerifier()
    const maxAgeState = client.randomState()
    const maxAgeUrl = client.buildAuthorizationUrl(web, {
      redirect_uri: WEB_REDIRECT_URI,
      scope: 'openid orders:read',
      state: maxAgeState,
      max_age: '300',
      code_challenge: await client.calculatePKCECodeChallenge(maxAgeVerifier),
      code_challenge_method: 'S256',
    })
    const maxAgeCallback = await authorizeAsPerson(browser, maxAgeUrl.href, ALICE)
    const maxAgeTokens = await client.authorizationCodeGrant(web, maxAgeCallback, { pkceCodeVerifier: maxAgeVerifier, expectedState: maxAgeState, maxAge: 300 })
    t.type(maxAgeTokens.claims()?.auth_time, 'number', 'auth_time present when max_age was sent')

    // The replay revoked the grant (SPEC: tokens issued from a replayed code should be revoked); start again for refresh.
    const second = await runWebFlow(web, browser)
    const refreshed = await client.refreshTokenGrant(web, second.refresh_token!)
    t.type(refreshed.refresh_token, 'string')
    t.not(refreshed.refresh_token, second.refresh_token, 'the refresh token rotated')
    const refreshedClaims = refreshed.claims()
    if (refreshedClaims !== undefined) t.equal(refreshedClaims.sub, 'alice', 'an id_token from a refresh names the same user (OIDC Core 12.2)')
    t.equal((await client.fetchProtectedResource(web, refreshed.access_token, ordersUrl(), 'GET')).status, 200)

    const live = await client.tokenIntrospection(service, refreshed.access_token)
    t.match(live, { active: true, sub: 'alice', client_id: 'web' })
    t.match(live.scope, /orders:read/)

    await client.tokenRevocation(web, refreshed.access_token)
    t.match(await client.tokenIntrospection(service, refreshed.access_token), { active: false }, 'revoked: introspection says inactive')
    const afterRevoke = await client.fetchProtectedResource(web, refreshed.access_token, ordersUrl(), 'GET').then(
      () => null,
      (e: unknown) => e,
    )
    t.type(afterRevoke, client.WWWAuthenticateChallengeError)
    if (afterRevoke instanceof client.WWWAuthenticateChallengeError) {
      t.equal(afterRevoke.status, 401)
      t.equal(afterRevoke.cause[0]?.parameters.error, 'invalid_token')
    }

    // Presenting the replaced refresh token again is theft: the family dies.
    const theft = await client.refreshTokenGrant(web, second.refresh_token!).then(
      () => null,
      (e: unknown) => e,
    )
    t.match(theft, { status: 400, error: 'invalid_grant' })
    const newest = await client.refreshTokenGrant(web, refreshed.refresh_token!).then(
      () => null,
      (e: unknown) => e,
    )
    t.match(newest, { status: 400, error: 'invalid_grant' }, 'the newest refresh token of the family is revoked too')
  })

  await t.test('public client (cli, none): loopback redirect on a random port, PKCE, refresh rotation, revocation', async (t) => {
    const receiver = await startLoopbackReceiver()
    t.teardown(receiver.close)
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const authUrl = client.buildAuthorizationUrl(cli, {
      redirect_uri: receiver.redirectUri,
      scope: 'openid orders:read',
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })
    const browser = new Browser()
    const callback = await authorizeAsPerson(browser, authUrl.href, ALICE)
    t.equal(callback.origin + callback.pathname, receiver.redirectUri, 'the registered loopback URI with our port (RFC 8252 7.3)')
    // The browser follows the redirect to the app's listener.
    await (await fetch(callback)).text()
    const request = await receiver.received

    const tokens = await client.authorizationCodeGrant(cli, request, { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: true })
    t.equal(tokens.claims()?.sub, 'alice')
    t.equal(tokens.claims()?.aud, 'cli')
    t.type(tokens.refresh_token, 'string')
    t.equal((await client.fetchProtectedResource(cli, tokens.access_token, ordersUrl(), 'GET')).status, 200)

    // RFC 6749 6: a refresh may narrow the scope, never widen it.
    const rotated = await client.refreshTokenGrant(cli, tokens.refresh_token!, { scope: 'orders:read' })
    t.not(rotated.refresh_token, tokens.refresh_token, 'a public client always rotates')
    t.equal(rotated.scope, 'orders:read', 'the narrowed scope is granted')
    const wider = await client.refreshTokenGrant(cli, rotated.refresh_token!, { scope: 'openid orders:read orders:write' }).then(
      () => null,
      (e: unknown) => e,
    )
    t.match(wider, { status: 400, error: 'invalid_scope' }, 'a wider scope is invalid_scope')
    const rotatedAgain = await client.refreshTokenGrant(cli, rotated.refresh_token!)
    t.type(rotatedAgain.refresh_token, 'string', 'the refused widening did not consume the refresh token')
    const reuse = await client.refreshTokenGrant(cli, tokens.refresh_token!).then(
      () => null,
      (e: unknown) => e,
    )
    t.match(reuse, { status: 400, error: 'invalid_grant' }, 'reuse of a rotated token is refused')

    // A second login (session and consent remembered): a wrong verifier must not redeem the code.
    const verifier2 = client.randomPKCECodeVerifier()
    const state2 = client.randomState()
    const again = client.buildAuthorizationUrl(cli, {
      redirect_uri: receiver.redirectUri,
      scope: 'openid orders:read',
      state: state2,
      code_challenge: await client.calculatePKCECodeChallenge(verifier2),
      code_challenge_method: 'S256',
    })
    const callback2 = await authorizeAsPerson(browser, again.href, ALICE)
    const wrongVerifier = await client
      .authorizationCodeGrant(cli, callback2, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: state2 })
      .then(
        () => null,
        (e: unknown) => e,
      )
    t.match(wrongVerifier, { status: 400, error: 'invalid_grant' }, 'PKCE: a different verifier is invalid_grant')
    const good = await client.authorizationCodeGrant(cli, callback2, { pkceCodeVerifier: verifier2, expectedState: state2 })
    t.type(good.refresh_token, 'string', 'a failed check leaves the code usable (SPEC: Issued, unchanged)')

    await client.tokenRevocation(cli, good.refresh_token!)
    const afterRevoke = await client.refreshTokenGrant(cli, good.refresh_token!).then(
      () => null,
      (e: unknown) => e,
    )
    t.match(afterRevoke, { status: 400, error: 'invalid_grant' }, 'a revoked refresh token is invalid_grant')
  })

  await t.test('authorization error responses carry state and iss (RFC 6749 4.1.2.1, RFC 9207 2)', async (t) => {
    const state = client.randomState()
    const url = client.buildAuthorizationUrl(web, {
      redirect_uri: WEB_REDIRECT_URI,
      scope: 'openid',
      state,
      prompt: 'none',
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    })
    // A browser without a session: prompt=none cannot show the login page.
    const callback = await authorizeAsPerson(new Browser(), url.href, ALICE)
    t.equal(callback.origin + callback.pathname, WEB_REDIRECT_URI, 'the error goes back to the client')
    // The library insists on iss in error responses too when the server advertises it; a missing iss would be another error type.
    const outcome = await client.authorizationCodeGrant(web, callback, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: state }).then(
      () => null,
      (e: unknown) => e,
    )
    t.type(outcome, client.AuthorizationResponseError, `the library reads the error response (${String(outcome)})`)
    t.match(outcome, { error: 'login_required' })
  })

  await t.test('client credentials and introspection (client_secret_basic and client_secret_post)', async (t) => {
    const tokens = await client.clientCredentialsGrant(service, { scope: 'orders:read' })
    t.equal(tokens.token_type.toLowerCase(), 'bearer')
    t.equal(tokens.refresh_token, undefined, 'no refresh token for client credentials (RFC 6749 4.4.3)')
    t.equal(tokens.id_token, undefined)
    t.equal((await client.fetchProtectedResource(service, tokens.access_token, ordersUrl(), 'GET')).status, 200)
    t.equal(server.upstream.seen.at(-1)?.headers['x-auth-client-id'], 'service')

    const info = await client.tokenIntrospection(service, tokens.access_token)
    t.match(info, { active: true, client_id: 'service', scope: 'orders:read', iss: server.issuer })
    t.type(info.exp, 'number')

    const poster = await client.discovery(issuer, POST_CLIENT_ID, DEMO_SECRET, client.ClientSecretPost(DEMO_SECRET), insecure)
    const posted = await client.clientCredentialsGrant(poster, { scope: 'orders:read' })
    t.match(await client.tokenIntrospection(poster, posted.access_token), { active: true, client_id: POST_CLIENT_ID }, 'introspection with client_secret_post')
    await client.tokenRevocation(poster, posted.access_token)
    t.match(await client.tokenIntrospection(service, posted.access_token), { active: false }, 'revocation with client_secret_post')

    const unknown = await client.tokenIntrospection(service, 'not-a-token-we-issued')
    t.same(unknown, { active: false }, 'an unknown token is just inactive (RFC 7662 2.2)')
  })

  await t.test('device authorization grant: initiate, then poll while a person approves', async (t) => {
    const start = await client.initiateDeviceAuthorization(cli, { scope: 'openid orders:read' })
    t.equal(start.interval, 1, 'the configured interval')
    t.ok(start.verification_uri.startsWith(`${server.issuer}/`), 'verification_uri under the issuer')
    t.type(start.verification_uri_complete, 'string')
    const [tokens, page] = await Promise.all([
      client.pollDeviceAuthorizationGrant(cli, start, undefined, { signal: AbortSignal.timeout(20000) }),
      personDecidesDevice(start.verification_uri_complete!, 'allow'),
    ])
    t.match(page, /approved|connected|done|success|allowed/i, 'the person is told it worked')
    t.equal(tokens.token_type.toLowerCase(), 'bearer')
    const idClaims = tokens.claims()
    if (idClaims !== undefined) t.match(idClaims, { sub: 'alice', aud: 'cli' }, 'an id_token, when given, is valid and names the user')
    t.equal((await client.fetchProtectedResource(cli, tokens.access_token, ordersUrl(), 'GET')).status, 200)
    t.equal(server.upstream.seen.at(-1)?.headers['x-auth-subject'], 'alice')

    const denied = await client.initiateDeviceAuthorization(cli, { scope: 'orders:read' })
    const [outcome] = await Promise.all([
      client.pollDeviceAuthorizationGrant(cli, denied, undefined, { signal: AbortSignal.timeout(20000) }).then(
        () => null,
        (e: unknown) => e,
      ),
      personDecidesDevice(denied.verification_uri_complete!, 'deny'),
    ])
    t.type(outcome, client.ResponseBodyError)
    t.match(outcome, { status: 400, error: 'access_denied' }, 'a denial ends the polling with access_denied (RFC 8628 3.5)')
  })
})

/** One more login for the web client; session and consent are remembered by `browser`. */
async function runWebFlow(web: client.Configuration, browser: Browser): Promise<client.TokenEndpointResponse> {
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const url = client.buildAuthorizationUrl(web, {
    redirect_uri: WEB_REDIRECT_URI,
    scope: 'openid orders:read',
    state,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  })
  const callback = await authorizeAsPerson(browser, url.href, ALICE)
  return client.authorizationCodeGrant(web, callback, { pkceCodeVerifier: verifier, expectedState: state })
}
