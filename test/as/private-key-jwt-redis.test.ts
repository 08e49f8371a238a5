/**
 * private_key_jwt's `jti` is single use across instances: two servers on one
 * real Redis (its own redis-server), both with the same issuer as a load
 * balancer would show them; an assertion accepted by A and replayed at B (and
 * the other way round) is refused, and a fresh one is accepted by both.
 */
import t from 'tap'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { RedisStore } from '../../src/store/redis.js'
import { backYaml } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'
import { askRedis, startRedis } from '../helpers/redis.js'
import { serveRuntime } from '../helpers/serve-runtime.js'

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'

t.test('a client assertion replayed at the other instance is refused', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }
  const yaml = await backYaml({
    clientsExtra: [
      '    - client_id: keyed',
      '      type: confidential',
      '      token_endpoint_auth_method: private_key_jwt',
      `      jwks: ${JSON.stringify({ keys: [jwk] })}`,
      '      grant_types: [client_credentials]',
      '      scopes: [orders:read]',
    ].join('\n'),
  })
  // Redis judges TTLs by its own clock: both servers' clocks follow real time.
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
  const issuer = a.publicUrl

  async function assertion(): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({ iss: 'keyed', sub: 'keyed', aud: issuer, iat: now, exp: now + 60, jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .sign(privateKey)
  }
  const tokenAt = (url: string, value: string) =>
    reply(postForm(`${url}/token`, { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: value }))

  const first = await assertion()
  t.equal((await tokenAt(a.url, first)).status, 200, 'A accepts it')
  const replayB = await tokenAt(b.url, first)
  t.equal(replayB.status, 401, 'B refuses the replay')
  t.same(replayB.json, { error: 'invalid_client', error_description: 'The client assertion is invalid' })
  t.equal(b.logs.find((l) => l.msg === 'request refused')?.cause, 'client assertion: jti replayed')

  const second = await assertion()
  t.equal((await tokenAt(b.url, second)).status, 200, 'B accepts a fresh one')
  t.equal((await tokenAt(a.url, second)).status, 401, 'A refuses its replay')

  const stored = await askRedis(redis.port, (c) => c.keys(`${redis.prefix}once:*`))
  t.ok(stored.length >= 2, 'the used jtis are records in Redis, with a TTL')
  const ttl = await askRedis(redis.port, (c) => c.pttl(stored[0] as string))
  t.ok(ttl > 0 && ttl <= 95_000, `expires with the assertion (${ttl} ms)`)
})
