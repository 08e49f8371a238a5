/**
 * Two bearward processes on a real Redis Cluster (three masters, three
 * replicas): a revocation through one is refused by the other within a
 * second; a revocation that no replica confirms in time is answered 503 yet
 * in force; and a master SIGKILLed while requests flow is replaced, after
 * which both instances serve again by themselves, with every revocation
 * that was answered 200 still in the store. The figures measured are
 * printed as comments (and quoted in docs/redis-topologies.md).
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { DEMO_SECRET } from '../helpers/as-config.js'
import type { RunningBin } from '../helpers/bin.js'
import { eventually } from '../helpers/http.js'
import { startRedisCluster } from '../helpers/redis-cluster.js'
import { aliceTokens, basic, callOrders, form, jwtClaims, serviceToken, startStorePair } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

t.setTimeout(240_000)

const cluster = await startRedisCluster({ nodeTimeoutMs: 500 })
const prefix = cluster.prefix
const up = await startUpstream('orders')
const { a, b, stop } = await startStorePair({
  store: { url: cluster.url, cluster: [...cluster.seeds], key_prefix: prefix, replica_wait: { replicas: 1, timeout: '500ms' } },
  upstream: up.url,
  cleanup: async () => {
    await up.close()
    await cluster.stop()
  },
})
t.teardown(stop)

/** ZSCORE of a revoked jti, asked of the slot's current master. */
async function storedRevocation(jti: string): Promise<string | null> {
  const key = `${prefix}revoked:{jti}`
  const c = new Redis({ port: await cluster.masterOf(key), host: '127.0.0.1', maxRetriesPerRequest: 0, lazyConnect: true })
  try {
    await c.connect()
    return await c.zscore(key, jti)
  } finally {
    c.disconnect()
  }
}

/** A refresh family of alice at `web` (code + PKCE), through A. */
async function family(): Promise<{ access: string; refresh: string; grantId: string }> {
  const body = await aliceTokens(a, 'orders:read')
  return { access: body.access_token, refresh: body.refresh_token ?? '', grantId: jwtClaims(body.access_token).grant_id ?? '' }
}

t.test('a token revoked through A is refused by B within 1 s (cluster-wide PUBLISH)', async (t) => {
  const token = await serviceToken(a)
  t.equal((await callOrders(b, token)).status, 200, 'B accepts the token first')
  const started = performance.now()
  t.equal((await form(`${a.url}/revoke`, { token }, basic('service', DEMO_SECRET))).status, 200)
  t.ok(await eventually(async () => (await callOrders(b, token)).status === 401, 1000, 5), 'refused by B within 1 s')
  t.comment(`revocation A -> B on the cluster: ${(performance.now() - started).toFixed(1)} ms`)
  t.ok(await storedRevocation(jwtClaims(token).jti), 'the revocation is in the store')
})

t.test('no replica confirms in time: 503, yet the revocation is in force; sent again once the replica is back: 200', async (t) => {
  const key = `${prefix}revoked:{jti}`
  const master = await cluster.masterOf(key)
  const [replica] = await cluster.replicasOf(master)
  t.ok(replica, 'the master holding the revocation list has a replica')
  const token = await serviceToken(a)
  cluster.pause(replica!)
  let res: Response
  const started = performance.now()
  try {
    res = await form(`${a.url}/revoke`, { token }, basic('service', DEMO_SECRET))
  } finally {
    cluster.resume(replica!)
  }
  const waited = performance.now() - started
  const timeouts = async (bin: RunningBin): Promise<string | undefined> =>
    /^bearward_store_replica_wait_timeouts_total (\d+)$/m.exec(await (await fetch(`${bin.admin}/metrics`)).text())?.[1]
  t.equal(res.status, 503, 'the revocation is not confirmed: 503')
  t.equal(await timeouts(a), '1', 'A counts the replica wait that timed out (bearward_store_replica_wait_timeouts_total)')
  t.equal(await timeouts(b), '0', 'B, which made no revocation, shows the series at 0')
  t.match(await res.json(), { error: 'temporarily_unavailable' })
  t.ok(waited >= 450, `it waited for the replica (${waited.toFixed(0)} ms)`)
  t.comment(`revoke with the replica frozen answered 503 after ${waited.toFixed(0)} ms`)
  t.ok(
    await eventually(async () => (await callOrders(b, token)).status === 401, 1000, 5),
    'yet B refuses the token: the write is on the master and was published',
  )
  t.ok(await storedRevocation(jwtClaims(token).jti), 'and it is on the master')
  t.ok(await cluster.healthy(), 'the cluster is ok again')
  t.ok(
    await eventually(async () => (await form(`${a.url}/revoke`, { token }, basic('service', DEMO_SECRET))).status === 200, 10_000, 100),
    'sent again once the replica answers: 200 (revocation is idempotent)',
  )
})

t.test('SIGKILL of the master holding a family and the revocation list, while requests flow', async (t) => {
  const listKey = `${prefix}revoked:{jti}`
  const victim = await cluster.masterOf(listKey)
  // A family whose keys live on the same master as the revocation list (each lands there with p = 1/3).
  // Up to 80 tries: a miss after all of them has p = (2/3)^80, about 1e-14 (20 tries, p = 3e-4, did miss once in CI).
  let fam = await family()
  t.ok(fam.grantId, 'the access token names its grant (grant_id)')
  let tries = 1
  for (; tries < 80 && (await cluster.masterOf(`${prefix}grant:{${fam.grantId}}`)) !== victim; tries++) fam = await family()
  t.equal(await cluster.masterOf(`${prefix}grant:{${fam.grantId}}`), victim, `the family lives on the victim (after ${tries} families)`)
  const [replica] = await cluster.replicasOf(victim)
  const live = await serviceToken(a)

  const errors: Record<string, number> = {}
  const count = (what: string, status: number): void => {
    if (status !== 200) errors[`${what} ${status}`] = (errors[`${what} ${status}`] ?? 0) + 1
  }
  const badAnswers: string[] = []
  const revokedOk: string[] = []
  let refresh = fam.refresh
  let rotations = 0
  let rotationLost = false
  let stop = false
  let killedAt = 0
  const backAt: Record<string, number> = {}
  const served = (what: string, status: number): void => {
    count(what, status)
    if (status === 200 && killedAt > 0 && backAt[what] === undefined) backAt[what] = performance.now() - killedAt
  }

  const gatewayLoop = async (): Promise<void> => {
    while (!stop) {
      const res = await callOrders(b, live)
      if (res.status !== 200 && res.status !== 503) badAnswers.push(`gateway ${res.status}`)
      served('gateway', res.status)
      await res.arrayBuffer()
      if (killedAt > 0 && backAt.gateway !== undefined && (backAt.rotate !== undefined || rotationLost) && backAt.revoke !== undefined) stop = true
    }
  }
  const rotateLoop = async (): Promise<void> => {
    while (!stop) {
      const res = await form(`${a.url}/token`, { grant_type: 'refresh_token', refresh_token: refresh }, basic('web', DEMO_SECRET))
      const body = (await res.json()) as { refresh_token?: string; error?: string }
      if (res.status === 200 && body.refresh_token) {
        refresh = body.refresh_token
        rotations++
      } else if (killedAt > 0 && res.status === 400 && body.error === 'invalid_grant') {
        // The last rotation answered before the kill did not reach the replica (asynchronous
        // replication): the token it issued is unknown to the new master. Counted, documented.
        rotationLost = true
        return
      } else if (!(res.status === 503 && body.error === 'temporarily_unavailable')) {
        badAnswers.push(`rotate ${res.status} ${body.error}`)
        return
      }
      served('rotate', res.status)
    }
  }
  const revokeLoop = async (): Promise<void> => {
    while (!stop) {
      let token: string
      try {
        token = await serviceToken(a)
      } catch {
        count('token', 503)
        continue
      }
      const res = await form(`${a.url}/revoke`, { token }, basic('service', DEMO_SECRET))
      if (res.status === 200) revokedOk.push(token)
      else if (res.status !== 503) badAnswers.push(`revoke ${res.status}`)
      served('revoke', res.status)
      await res.arrayBuffer()
    }
  }

  const loops = Promise.all([gatewayLoop(), rotateLoop(), revokeLoop()])
  // Let traffic flow, then crash the master.
  await eventually(() => revokedOk.length >= 5 && rotations >= 5, 10_000)
  const before = { revoked: revokedOk.length, rotations }
  killedAt = performance.now()
  await cluster.kill(victim)
  const healthyAgain = await eventually(() => stop || badAnswers.length > 0, 30_000, 20)
  stop = true
  await loops
  t.ok(healthyAgain, 'every kind of request was served again')
  t.same(badAnswers, [], 'every answer was 200 or a clean 503 temporarily_unavailable (never a 500, never a half-done rotation)')
  t.ok(await cluster.healthy(), 'the cluster is ok without the victim')
  const newMaster = await cluster.masterOf(listKey)
  t.equal(newMaster, replica, 'the replica was promoted')

  // Every revocation answered 200 survived the failover: in the store, refused by both instances.
  let lost = 0
  for (const token of revokedOk) if ((await storedRevocation(jwtClaims(token).jti)) === null) lost++
  t.equal(lost, 0, `revocations lost: 0 of ${revokedOk.length}`)
  const refusedByB = await Promise.all(revokedOk.map(async (tok) => (await callOrders(b, tok)).status))
  t.ok(
    refusedByB.every((s) => s === 401),
    'B refuses every revoked token',
  )
  // The family is still one family: its latest refresh token rotates (async replication may lose the
  // very last rotation answered before the kill: then the family is refused as a whole, never forked).
  if (!rotationLost) {
    const next = await form(`${a.url}/token`, { grant_type: 'refresh_token', refresh_token: refresh }, basic('web', DEMO_SECRET))
    t.equal(next.status, 200, "the family's latest refresh token still rotates")
  }

  t.comment(`failover figures: traffic before the kill: ${before.revoked} revocations, ${before.rotations} rotations`)
  t.comment(`service back after the kill (ms): ${JSON.stringify(Object.fromEntries(Object.entries(backAt).map(([k, v]) => [k, Math.round(v)])))}`)
  t.comment(
    `errors seen: ${JSON.stringify(errors)}; revocations answered 200: ${revokedOk.length}, lost: ${lost}; rotations: ${rotations}, last one lost to async replication: ${rotationLost}`,
  )
})
