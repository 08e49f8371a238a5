/**
 * CIBA against a real Redis (its own redis-server on a free port): the approval's atomic steps,
 * the pacing keys and the parked ping job are Lua scripts and TTLs there, not a synchronous block.
 */
import t from 'tap'
import { ManualClock } from '../../../src/clock.js'
import { RedisStore } from '../../../src/store/redis.js'
import { startAs } from '../../helpers/as-back.js'
import { bcAuthorize, cibaClients, decide, poll, startReceiver } from '../../helpers/ciba.js'
import { startRedis } from '../../helpers/redis.js'

t.test('CIBA on Redis', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const receiver = await startReceiver()
  t.teardown(receiver.close)
  // Redis judges TTLs by its own clock: start the manual clock at real time and move it only forward by little.
  const h = await startAs({
    clock: new ManualClock(Date.now()),
    store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
    clientsExtra: await cibaClients(receiver.url),
    asExtra: '  ciba: { ttl: 120s, interval: 5s }',
  })
  t.teardown(() => h.close())

  t.test('20 concurrent polls of an approved request: tokens exactly once, the rest slow_down', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid orders:read', login_hint: 'alice' })
    t.equal(started.status, 200, started.text)
    const authReqId = String(started.json?.auth_req_id)
    t.equal((await poll(h, authReqId)).json?.error, 'authorization_pending')
    h.clock.advance(5000)
    await decide(h, authReqId, 'approved')
    const replies = await Promise.all(Array.from({ length: 20 }, () => poll(h, authReqId)))
    t.equal(replies.filter((r) => r.status === 200).length, 1)
    t.equal(replies.filter((r) => r.json?.error === 'slow_down').length, 19)
  })

  t.test('ping: the parked job is made due by the decision and delivered once', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'redis-ping' }, 'pinger')
    const authReqId = String(started.json?.auth_req_id)
    await h.as.ciba.pings.runOnce()
    t.equal(receiver.pings.length, 0, 'nothing is sent before the decision')
    const arriving = receiver.next()
    await decide(h, authReqId, 'denied')
    const ping = await arriving
    t.equal(ping.authorization, 'Bearer redis-ping')
    t.same(ping.body, { auth_req_id: authReqId })
    await h.as.ciba.pings.runOnce()
    t.equal(receiver.pings.length, 1, 'once')
    t.equal((await poll(h, authReqId, 'pinger')).json?.error, 'access_denied')
  })
})
