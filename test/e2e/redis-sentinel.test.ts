/**
 * Two bearward processes on Redis Sentinel (a master, one replica, three
 * sentinels): the revocation feed works through the master the sentinels
 * name; the master is SIGKILLed, the sentinels promote the replica, both
 * instances serve again by themselves, every revocation answered 200 before
 * the kill is still refused (and in the new master), and new revocations
 * propagate again. Figures are printed as comments (docs/redis-topologies.md).
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { eventually } from '../helpers/http.js'
import { MASTER_NAME, startRedisSentinel } from '../helpers/redis-sentinel.js'
import { callOrders, jwtClaims, revoke, serviceToken, startStorePair } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

t.setTimeout(180_000)

const redis = await startRedisSentinel({ downAfterMs: 1000, failoverTimeoutMs: 2000 })
const up = await startUpstream('orders')
const { a, b, stop } = await startStorePair({
  store: { sentinels: [...redis.sentinels], name: MASTER_NAME, key_prefix: redis.prefix, replica_wait: { replicas: 1, timeout: '500ms' } },
  upstream: up.url,
  cleanup: async () => {
    await up.close()
    await redis.stop()
  },
})
t.teardown(stop)

async function stored(port: number, id: string): Promise<string | null> {
  return (async () => {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 })
    try {
      await c.connect()
      return await c.zscore(`${redis.prefix}revoked:{jti}`, id)
    } finally {
      c.disconnect()
    }
  })()
}

t.test('a token revoked through A is refused by B within 1 s, through the master the sentinels name', async (t) => {
  const token = await serviceToken(a)
  t.equal((await callOrders(b, token)).status, 200, 'B accepts the token first')
  const started = performance.now()
  t.equal((await revoke(a, token)).status, 200)
  t.ok(await eventually(async () => (await callOrders(b, token)).status === 401, 1000, 5), 'refused by B within 1 s')
  t.comment(`revocation A -> B through Sentinel: ${(performance.now() - started).toFixed(1)} ms`)
  t.ok(await stored(redis.replicaPort, jwtClaims(token).jti), 'the replica holds it (replica_wait)')
})

t.test('the replica frozen: the revocation is answered 503 after replica_wait.timeout, yet in force; sent again: 200', async (t) => {
  const token = await serviceToken(a)
  redis.pause(redis.replicaPort)
  let res: Response
  const started = performance.now()
  try {
    res = await revoke(a, token)
  } finally {
    redis.resume(redis.replicaPort)
  }
  const waited = performance.now() - started
  t.equal(res.status, 503)
  t.match(await res.json(), { error: 'temporarily_unavailable' })
  t.ok(waited >= 450, `it waited for the replica (${waited.toFixed(0)} ms)`)
  t.ok(await eventually(async () => (await callOrders(b, token)).status === 401, 1000, 5), 'B refuses the token: the write is on the master and was published')
  t.ok(await eventually(async () => (await revoke(a, token)).status === 200, 10_000, 100), 'sent again with the replica answering: 200')
})

t.test('SIGKILL of the master: the sentinels promote the replica, service returns, no revocation lost', async (t) => {
  const revoked: string[] = []
  for (let i = 0; i < 10; i++) {
    const token = await serviceToken(a)
    t.equal((await revoke(a, token)).status, 200)
    revoked.push(token)
  }
  const live = await serviceToken(a)
  const killedAt = performance.now()
  await redis.kill(redis.masterPort)

  let errors = 0
  // Normally about 2-3 s. A sentinel whose timer was held up for over 2 s (a loaded machine) enters
  // TILT mode and takes no action for 30 s; the deadline allows for that rather than fail on it.
  const back = await eventually(
    async () => {
      const res = await callOrders(b, live)
      if (res.status !== 200) errors++
      await res.arrayBuffer()
      return res.status === 200
    },
    60_000,
    50,
  )
  const gatewayBackMs = performance.now() - killedAt
  t.ok(back, 'the gateway on B serves again by itself')
  // The first sentinel that answers may not have heard of the promotion yet (another sentinel ran the
  // failover, and its announcement travels on the sentinels' hello channel): ask until it has.
  t.ok(await eventually(async () => (await redis.currentMaster()) === redis.replicaPort, 10_000, 50), 'the sentinels promoted the replica')

  let issued: string | null = null
  const asBack = await eventually(
    async () => {
      issued = await serviceToken(a).catch(() => null)
      if (issued === null) errors++
      return issued !== null
    },
    30_000,
    50,
  )
  const asBackMs = performance.now() - killedAt
  t.ok(asBack, 'the authorization server on A issues tokens again')
  if (!back || !asBack)
    t.comment(
      `store log lines of B:\n${b.lines
        .filter((l) => /"msg":"(store (connected|unreachable)|revocation list)/.test(l))
        .slice(-8)
        .join('\n')}`,
    )
  if (!back || !asBack)
    t.comment(
      `store log lines of A:\n${a.lines
        .filter((l) => /"msg":"(store (connected|unreachable)|revocation list)/.test(l))
        .slice(-12)
        .join('\n')}`,
    )

  let lost = 0
  for (const token of revoked) if ((await stored(redis.replicaPort, jwtClaims(token).jti)) === null) lost++
  t.equal(lost, 0, `revocations lost: 0 of ${revoked.length}`)
  const statuses = await Promise.all(revoked.map(async (tok) => (await callOrders(b, tok)).status))
  t.ok(
    statuses.every((s) => s === 401),
    'B still refuses every token revoked before the kill',
  )

  // The feed works through the new master: a new revocation reaches B within a second.
  const fresh = issued ?? (await serviceToken(a))
  t.equal((await callOrders(b, fresh)).status, 200)
  const started = performance.now()
  t.equal((await revoke(a, fresh)).status, 200, 'revocation answered 200 (no replica left to wait for)')
  t.ok(await eventually(async () => (await callOrders(b, fresh)).status === 401, 1000, 5), 'a revocation after the failover reaches B within 1 s')
  t.comment(
    `Sentinel failover: gateway back after ${gatewayBackMs.toFixed(0)} ms, token endpoint after ${asBackMs.toFixed(0)} ms; errors seen: ${errors}; revocations lost: ${lost} of ${revoked.length}; A -> B after the failover: ${(performance.now() - started).toFixed(1)} ms`,
  )
})
