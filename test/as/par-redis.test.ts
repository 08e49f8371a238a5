/**
 * Pushed requests across instances: two servers on one real Redis (its own
 * redis-server) with the same issuer, as behind a load balancer. A request
 * pushed at A is taken at B's /authorize, the authorization goes on at B,
 * and the same request_uri at A afterwards is refused: single use holds for
 * every instance sharing the store.
 */
import { exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { RedisStore } from '../../src/store/redis.js'
import { Browser, authorizeAs, frontYaml, get, pkce } from '../helpers/as-front.js'
import { startRedis } from '../helpers/redis.js'
import { serveRuntime } from '../helpers/serve-runtime.js'

const insecure = { [oauth.allowInsecureRequests]: true } as const
const BANK_CB = 'https://bank.example.com/cb'

t.test('a request pushed at one instance is taken once, at another', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }
  const yaml = await frontYaml({
    clientsExtra: [
      '    - client_id: bank',
      '      type: confidential',
      '      token_endpoint_auth_method: private_key_jwt',
      `      jwks: ${JSON.stringify({ keys: [jwk] })}`,
      `      redirect_uris: [${BANK_CB}]`,
      '      grant_types: [authorization_code]',
      '      scopes: [orders:read]',
      '      skip_consent: true',
      '      require_pushed_authorization_requests: true',
    ].join('\n'),
  })
  // Redis judges TTLs by its own clock, and oauth4webapi dates its assertions with Date.now(): both clocks follow real time.
  const serve = (publicUrl?: string) =>
    serveRuntime(yaml, {
      clock: new ManualClock(Date.now()),
      store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
      ...(publicUrl === undefined ? {} : { env: { PUBLIC_URL: publicUrl } }),
    })
  const a = await serve()
  t.teardown(() => a.close())
  const b = await serve(a.publicUrl)
  t.teardown(() => b.close())

  const as = await oauth.processDiscoveryResponse(
    new URL(a.publicUrl),
    await oauth.discoveryRequest(new URL(a.publicUrl), { algorithm: 'oauth2', ...insecure }),
  )
  const client = { client_id: 'bank' }
  const auth = oauth.PrivateKeyJwt({ key: privateKey, kid: 'k1' })
  const { verifier, challenge } = pkce()
  const params = { redirect_uri: BANK_CB, response_type: 'code', scope: 'orders:read', state: 's-1', code_challenge: challenge, code_challenge_method: 'S256' }
  const pushed = await oauth.processPushedAuthorizationResponse(as, client, await oauth.pushedAuthorizationRequest(as, client, auth, params, insecure))
  const query = new URLSearchParams({ client_id: 'bank', request_uri: pushed.request_uri }).toString()

  const browser = new Browser()
  // B serves A's issuer: its forms are judged by that origin, as behind the balancer.
  browser.origin = new URL(a.publicUrl).origin
  const callback = await authorizeAs(browser, `${b.url}/authorize?${query}`)
  t.equal(`${callback.origin}${callback.pathname}`, BANK_CB, 'B continued the request A was pushed')
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, auth, oauth.validateAuthResponse(as, client, callback, 's-1'), BANK_CB, verifier, insecure),
  )
  t.equal(tokens.scope, 'orders:read')

  const again = await get(`${a.url}/authorize?${query}`)
  t.equal(again.status, 400, 'A refuses it afterwards')
  t.equal(again.headers.get('location'), null)
  t.match(again.text, /Error code: <code>invalid_request_uri<\/code>/)
})
