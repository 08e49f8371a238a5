/**
 * A connection ioredis ends for good is connected again (src/store/redis/link.ts).
 *
 * ioredis stops reconnecting when its connector fails outright; with Sentinel
 * a failover notice that arrives during a reconnect does it (link.ts says
 * how), and the store stayed unreachable until a restart. Here the client is
 * ended the way that path ends it (status `end`, no reconnect scheduled by
 * ioredis), against a real redis-server.
 */
import { once } from 'node:events'
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { createClient } from '../../src/store/redis/client.js'
import { Link, REVIVE_DELAY_MS } from '../../src/store/redis/link.js'
import { eventually } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'

function captureLog(): { msgs: string[]; log: { info(o: object, m: string): void; warn(o: object, m: string): void; error(o: object, m: string): void } } {
  const msgs: string[] = []
  return { msgs, log: { info: (_o, m) => msgs.push(m), warn: (_o, m) => msgs.push(m), error: (_o, m) => msgs.push(m) } }
}

t.test('a connection ioredis gave up on is connected again, and answers', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const { msgs, log } = captureLog()
  const link = new Link(createClient({ url: redis.url, clock: new ManualClock() }, 1000), 'main', 1000, log)
  t.teardown(() => link.close())
  await link.ready()
  t.equal(await link.client.ping(), 'PONG')

  // What ioredis does when it gives up: the client ends, and nothing in ioredis reconnects it.
  const ended = once(link.client, 'end')
  link.client.disconnect()
  await ended
  const endedAt = performance.now()
  t.equal(link.client.status, 'end', 'ioredis ended the client')
  t.notOk(link.up, 'down')
  t.ok(await eventually(() => link.up, 5000, 10), 'up again by itself')
  const backMs = performance.now() - endedAt
  t.ok(backMs >= REVIVE_DELAY_MS - 5, `after the pause (${backMs.toFixed(0)} ms)`)
  t.equal(await link.client.ping(), 'PONG', 'and commands are answered')
  t.same(msgs, ['store connected', 'store unreachable', 'store connection ended; connecting again', 'store connected'], 'each step logged once')
})

t.test('ended, then the server goes down: the revival fails, and ioredis reconnects once it is back', async (t) => {
  const redis = await startRedis({ own: true })
  t.teardown(() => redis.stop())
  const { msgs, log } = captureLog()
  const link = new Link(createClient({ url: redis.url, clock: new ManualClock(), maxReconnectDelayMs: 20 }, 1000), 'main', 1000, log)
  t.teardown(() => link.close())
  await link.ready()
  const ended = once(link.client, 'end')
  link.client.disconnect()
  await ended
  await redis.kill()
  t.ok(await eventually(() => msgs.includes('store connection ended; connecting again'), 5000, 10), 'connected again after the pause')
  t.notOk(link.up, 'not up while the server is gone')
  await redis.restart()
  t.ok(await eventually(() => link.up, 10_000, 10), 'up once the server is back')
  t.equal(await link.client.ping(), 'PONG')
})

t.test('close() cancels a pending revival', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const { msgs, log } = captureLog()
  const link = new Link(createClient({ url: redis.url, clock: new ManualClock() }, 1000), 'main', 1000, log)
  await link.ready()
  const ended = once(link.client, 'end')
  link.client.disconnect()
  await ended
  await link.close()
  const logged = [...msgs]
  // Nothing can be awaited for something that must not happen: give the revival three times its pause.
  await new Promise((res) => setTimeout(res, REVIVE_DELAY_MS * 3))
  t.equal(link.client.status, 'end', 'the client stays ended')
  t.same(msgs, logged, 'no revival after close()')
})
