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
import { hashSecret } from '../../src/crypto/secret.js'
import { RedisStore } from '../../src/store/redis.js'
import { Browser, authorizeAs, frontYaml, get, pkce } from '../helpers/as-front.js'
import { eventually, postForm, reply } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { serveRuntime } from '../helpers/serve-runtime.js'

const insecure = { [oauth.allowInsecureRequests]: true } as const
const BANK_CB = 'https://bank.example.com/cb'
const PUSHER_SECRET = 'pusher-secret-0123456789abcdefghijklmnop'

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

t.test('Redis killed with a request pushed: /par and /authorize fail closed (503), and after a restart nothing half-pushed is usable', async (t) => {
  const redis = await startRedis({ own: true })
  t.teardown(() => redis.stop())
  const yaml = await frontYaml({
    clientsExtra: [
      '    - client_id: pusher',
      '      type: confidential',
      `      secret_hash: "${await hashSecret(PUSHER_SECRET)}"`,
      `      redirect_uris: [${BANK_CB}]`,
      '      grant_types: [authorization_code]',
      '      scopes: [orders:read]',
    ].join('\n'),
  })
  const served = await serveRuntime(yaml, {
    clock: new ManualClock(Date.now()),
    store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
  })
  t.teardown(() => served.close())
  const push = () =>
    reply(
      postForm(
        `${served.url}/par`,
        { response_type: 'code', redirect_uri: BANK_CB, scope: 'orders:read', code_challenge: pkce().challenge, code_challenge_method: 'S256' },
        { authorization: `Basic ${Buffer.from(`pusher:${PUSHER_SECRET}`).toString('base64')}` },
      ),
    )
  const authorize = (uri: string) => get(`${served.url}/authorize?${new URLSearchParams({ client_id: 'pusher', request_uri: uri })}`)
  const before = await push()
  t.equal(before.status, 201, 'pushed while Redis answers')
  const pushedUri = String(before.json?.request_uri)

  await redis.kill()
  const during = await push()
  t.equal(during.status, 503, '/par while Redis is down')
  t.equal(during.json?.error, 'temporarily_unavailable')
  t.equal(during.json?.request_uri, undefined, 'no request_uri handed out')
  t.equal(during.headers.get('cache-control'), 'no-store')
  const page = await authorize(pushedUri)
  t.equal(page.status, 503, '/authorize while Redis is down: a 503 page')
  t.equal(page.headers.get('location'), null, 'never redirected')
  t.match(page.headers.get('content-type'), /^text\/html/)

  await redis.restart()
  let after = during
  t.ok(await eventually(async () => (after = await push()).status === 201, 10_000), 'pushing works again once the store reconnects')
  // Redis came back empty (no persistence): the request pushed before is gone, refused on our page, never half-usable.
  const lost = await authorize(pushedUri)
  t.equal(lost.status, 400)
  t.match(lost.text, /Error code: <code>invalid_request_uri<\/code>/)
  const login = await authorize(String(after.json?.request_uri))
  t.equal(login.status, 200, 'and the new request_uri starts the authorization')
})
