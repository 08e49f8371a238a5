/**
 * The grants against a real Redis (its own redis-server on a free port): the
 * atomic steps (take a code once, rotate or detect reuse, consume a device
 * approval once) are Lua scripts there, not a synchronous block.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { RedisStore } from '../../src/store/redis.js'
import { hashToken } from '../../src/store/hash.js'
import { startRedis } from '../helpers/redis.js'
import { DEVICE_GRANT, codeParams, introspect, mintCode, startAs, token, tokensFor } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

t.test('grants on Redis', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  // Redis judges TTLs by its own clock: start the manual clock at real time and move it only forward by little.
  const h = await startAs({
    clock: new ManualClock(Date.now()),
    store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
  })
  t.teardown(() => h.close())

  t.test('50 concurrent exchanges of one code: exactly one 200, and its tokens revoked by the replays', async (t) => {
    const m = await mintCode(h)
    const replies = await Promise.all(Array.from({ length: 50 }, () => token(h, 'web', codeParams(m))))
    const ok = replies.filter((r) => r.status === 200)
    t.equal(ok.length, 1)
    t.equal(replies.filter((r) => r.json?.error === 'invalid_grant').length, 49)
    t.same(await introspect(h, String(ok[0]?.json?.access_token)), { active: false })
    t.same(await introspect(h, String(ok[0]?.json?.refresh_token)), { active: false })
  })

  t.test('a failing check leaves the code redeemable', async (t) => {
    const m = await mintCode(h)
    const bad = await token(h, 'web', { ...codeParams(m), code_verifier: 'w'.repeat(43) })
    t.equal(bad.json?.error, 'invalid_grant')
    t.equal((await token(h, 'web', codeParams(m))).status, 200)
  })

  t.test('refresh reuse revokes the family, newest token included', async (t) => {
    const first = await tokensFor(h)
    const rt1 = String(first.refresh_token)
    const second = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: rt1 })
    const rt2 = String(second.json?.refresh_token)
    t.equal((await token(h, 'web', { grant_type: 'refresh_token', refresh_token: rt1 })).json?.error, 'invalid_grant')
    t.equal((await token(h, 'web', { grant_type: 'refresh_token', refresh_token: rt2 })).json?.error, 'invalid_grant')
    t.same(await introspect(h, String(second.json?.access_token)), { active: false })
    const grantId = String(decodeJwt(String(second.json?.access_token)).grant_id)
    t.ok((await h.store.revocations.list()).some((e) => e.kind === 'grant' && e.id === grantId))
    t.equal(await h.store.grants.findRefresh(hashToken(rt2)), null)
  })

  t.test("device approval is consumed once; another client's poll changes nothing", async (t) => {
    const auth = await reply(postForm(`${h.url}/device_authorization`, { client_id: 'tv' }))
    const deviceCode = String(auth.json?.device_code)
    const userCode = String(auth.json?.user_code).replace('-', '')
    await h.store.devices.decide(userCode, { approved: true, sub: 'alice', authTime: Math.floor(Date.now() / 1000) })
    const stranger = await token(h, 'spa', { grant_type: DEVICE_GRANT, device_code: deviceCode })
    t.equal(stranger.json?.error, 'invalid_grant')
    const polls = await Promise.all(Array.from({ length: 10 }, () => token(h, 'tv', { grant_type: DEVICE_GRANT, device_code: deviceCode })))
    t.equal(polls.filter((r) => r.status === 200).length, 1)
  })
})
