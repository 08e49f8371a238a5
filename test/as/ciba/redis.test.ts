/**
 * CIBA against a real Redis (its own redis-server on a free port): the approval's atomic steps,
 * the pacing keys and the parked ping job are Lua scripts and TTLs there, not a synchronous block.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { ManualClock } from '../../../src/clock.js'
import { RedisStore } from '../../../src/store/redis.js'
import { keyOf } from '../../../src/store/redis/keys.js'
import { PING_QUEUE } from '../../../src/as/ciba/ping.js'
import { startAs } from '../../helpers/as-back.js'
import { approvalIdOf, bcAuthorize, cibaClients, decide, poll, startReceiver } from '../../helpers/ciba.js'
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
    top: 'admin_api: { enabled: true }',
    asExtra: [
      '  ciba: { ttl: 120s, interval: 5s }',
      '  identity_providers:',
      '    - { id: corp, name: Corp SSO, issuer: "https://corp.example.com", client_id: bearward }',
    ].join('\n'),
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

  t.test('login_hint by email: a person created, or signed in, on another instance is found at once', async (t) => {
    const peer = new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock: h.clock })
    t.teardown(() => peer.close())
    const at = Math.floor(h.clock.now() / 1000)
    const created = await peer.people.create({
      username: 'erin',
      sub: 'user-erin',
      claims: { email: 'Erin@Corp.example' },
      passwordHash: null,
      disabled: false,
      createdAt: at,
      updatedAt: at,
      version: 1,
    })
    t.equal(created, 'created')
    const byAdminEmail = await bcAuthorize(h, { scope: 'openid', login_hint: 'erin@CORP.example' })
    t.equal(byAdminEmail.status, 200, byAdminEmail.text)
    t.equal((await h.as.approvals.get(approvalIdOf(String(byAdminEmail.json?.auth_req_id))))?.sub, 'user-erin')
    await peer.upstream.putPerson('corp:u-7', { provider: 'corp', upstreamSub: 'u-7', claims: { email: 'gus@corp.example' }, updatedAt: at }, 3600)
    const byFederatedEmail = await bcAuthorize(h, { scope: 'openid', login_hint: 'Gus@corp.example' })
    t.equal(byFederatedEmail.status, 200, byFederatedEmail.text)
    t.equal((await h.as.approvals.get(approvalIdOf(String(byFederatedEmail.json?.auth_req_id))))?.sub, 'corp:u-7')
    await peer.upstream.putPerson('corp:u-8', { provider: 'corp', upstreamSub: 'u-8', claims: { email: 'erin@corp.example' }, updatedAt: at }, 3600)
    const shared = await bcAuthorize(h, { scope: 'openid', login_hint: 'erin@corp.example' })
    t.equal(shared.json?.error, 'unknown_user_id', 'an email an admin-created and a federated person share names nobody')
  })

  t.test('a ping Redis refuses to queue: 503, and no approval is left that alice could still approve', async (t) => {
    const admin = new Redis(redis.url)
    t.teardown(() => admin.quit())
    // The queue's key holding a string: every write of the queue fails with Redis's WRONGTYPE error.
    const queueKey = keyOf(redis.prefix, 'dq', PING_QUEUE)
    const aside = `${queueKey}-aside`
    const existed = (await admin.exists(queueKey)) === 1
    if (existed) await admin.rename(queueKey, aside)
    await admin.set(queueKey, 'not a queue')
    const pendingBefore = (await h.as.approvals.listForPerson('alice')).filter((a) => a.status === 'pending').map((a) => a.id)
    const refused = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'never-queued' }, 'pinger')
    t.equal(refused.status, 503, refused.text)
    t.equal(refused.json?.auth_req_id, undefined, 'no auth_req_id was given out')
    const pendingAfter = (await h.as.approvals.listForPerson('alice')).filter((a) => a.status === 'pending').map((a) => a.id)
    t.same(pendingAfter, pendingBefore, 'no new pending approval: nothing on the account page to approve')
    await admin.del(queueKey)
    if (existed) await admin.rename(aside, queueKey)
    const again = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'queued' }, 'pinger')
    t.equal(again.status, 200, 'once Redis takes writes again the request goes through')
    t.equal((await h.as.approvals.get(approvalIdOf(String(again.json?.auth_req_id))))?.status, 'pending')
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
