/**
 * Both faces read our own opaque access tokens through one lookup
 * (src/tokens/own-opaque-token.ts) and agree on an expired one: from its
 * `exp` on, /introspect answers exactly `{"active":false}` (RFC 7662 2.2),
 * /userinfo and a gateway route answer 401 invalid_token, and nothing
 * reaches the upstream. Run on the memory store and on a real Redis.
 */
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { hashToken } from '../../src/store/hash.js'
import { RedisStore } from '../../src/store/redis.js'
import { ownOpaqueState } from '../../src/tokens/own-opaque-token.js'
import { backYaml, introspect, tokensFor, harnessOf, type Harness } from '../helpers/as-back.js'
import { reply } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { serveRuntime, type ServeOptions } from '../helpers/serve-runtime.js'
import { startUpstream } from '../helpers/upstream.js'

/** The access token lifetime backYaml configures. */
const TTL_MS = 600_000

interface BothFaces {
  h: Harness
  upstream: Awaited<ReturnType<typeof startUpstream>>
}

/** One server with both faces: the back-channel authorization server issuing opaque tokens, and a `/both` route (audience: itself) in front of a real upstream. */
async function startBothFaces(t: Test, o: Pick<ServeOptions, 'clock' | 'store'> = {}): Promise<BothFaces> {
  const upstream = await startUpstream('orders')
  t.teardown(() => upstream.close())
  // backYaml's routes list comes last: one more route, in front of the real upstream.
  const route = `  - { name: both-faces, match: { path: /both }, upstream: "${upstream.url}", audience: "\${PUBLIC_URL}", token: any }\n`
  const yaml = (await backYaml({ format: 'opaque' })) + route
  const served = await serveRuntime(yaml, o)
  t.teardown(() => served.close())
  const h = harnessOf(served)
  return { h, upstream }
}

/** What each face answers for `token`: the gateway route, UserInfo, and introspection. */
async function answers(h: Harness, token: string) {
  const headers = { authorization: `Bearer ${token}` }
  const route = await reply(fetch(`${h.url}/both/1`, { headers }))
  const userinfo = await reply(fetch(`${h.url}/userinfo`, { headers }))
  return { route, userinfo, introspection: await introspect(h, token) }
}

function agreeOnExpiry(name: string, o: () => Promise<Pick<ServeOptions, 'clock' | 'store'> & { stop?: () => Promise<void> }>): void {
  t.test(`${name}: both faces agree on an expired opaque token`, async (t) => {
    const options = await o()
    if (options.stop !== undefined) t.teardown(options.stop)
    const { h, upstream } = await startBothFaces(t, options)
    const body = await tokensFor(h, { scope: 'openid orders:read' })
    const token = String(body.access_token)
    t.notOk(token.includes('.'), 'the access token is opaque')
    const expMs = Number((await introspect(h, token)).exp) * 1000
    t.ok(expMs > h.clock.now() + TTL_MS - 1_000, 'it lives for the configured lifetime')

    h.clock.set(expMs - 1_000)
    const live = await answers(h, token)
    t.equal(live.route.status, 200, 'a second before exp the gateway forwards')
    t.equal(upstream.seen.length, 1, 'the upstream got the request')
    t.equal(live.userinfo.status, 200, 'UserInfo answers')
    t.equal(live.introspection.active, true, 'introspection says active')

    h.clock.set(expMs)
    const expired = await answers(h, token)
    t.equal(expired.route.status, 401, 'at exp the gateway refuses')
    t.match(expired.route.headers.get('www-authenticate'), /^Bearer .*error="invalid_token"/)
    t.equal(expired.route.json?.error, 'invalid_token')
    t.equal(upstream.seen.length, 1, 'nothing more reached the upstream')
    t.equal(expired.userinfo.status, 401, 'UserInfo refuses')
    t.match(expired.userinfo.headers.get('www-authenticate'), /^Bearer .*error="invalid_token"/)
    t.same(expired.introspection, { active: false }, 'introspection says exactly active: false')
  })
}

agreeOnExpiry('memory store', async () => ({}))

agreeOnExpiry('Redis', async () => {
  const redis = await startRedis()
  // Redis judges its own TTLs by real time: the manual clock starts at real time.
  return {
    clock: new ManualClock(Date.now()),
    store: (clock: ManualClock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
    stop: () => redis.stop(),
  }
})

t.test('a stored record is active until its exp, expired from it on, foreign under another issuer', async (t) => {
  const { h } = await startBothFaces(t)
  const token = String((await tokensFor(h)).access_token)
  const record = await h.store.opaqueTokens.get(hashToken(token))
  if (record === null) throw new Error('the opaque token was not stored')
  t.equal(ownOpaqueState(record, h.issuer, record.exp * 1000 - 1), 'active')
  t.equal(ownOpaqueState(record, h.issuer, record.exp * 1000), 'expired')
  t.equal(ownOpaqueState(record, h.issuer, record.exp * 1000 + 1), 'expired')
  t.equal(ownOpaqueState(record, 'https://other.example.com', record.exp * 1000 - 1), 'foreign')
})
