/**
 * The contract on a real Redis Cluster: three masters and three replicas
 * (test/helpers/redis-cluster.ts), through ioredis' Cluster client. Keys of
 * different families land on different masters, and Redis rejects a script
 * whose keys span slots, so this is what proves the hash-tag layout; the
 * races run against the cluster too.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { ManualClock } from '../../src/clock.js'
import { rateRule } from '../../src/gateway/limits/plan.js'
import { RedisStore } from '../../src/store/redis.js'
import { eventually } from '../helpers/http.js'
import { startRedisCluster } from '../helpers/redis-cluster.js'
import { runStoreContract } from './contract.js'

const cluster = await startRedisCluster()
t.teardown(() => cluster.stop())
let n = 0

t.test('the cluster has three masters, each with one replica', async (t) => {
  const masters = new Set<number>()
  for (const tag of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']) masters.add(await cluster.masterOf(`{${tag}}`))
  t.equal(masters.size, 3, 'keys spread over three masters')
  for (const m of masters) t.equal((await cluster.replicasOf(m)).length, 1, `master ${m} has a replica`)
})

runStoreContract(t, 'redis cluster', async (clock) => {
  const keyPrefix = `${cluster.prefix}${++n}:`
  const make = (): RedisStore => new RedisStore({ url: cluster.url, cluster: cluster.seeds, keyPrefix, clock, commandTimeoutMs: 1000 })
  const stores = [make()]
  return {
    store: stores[0]!,
    peer: async () => {
      const p = make()
      stores.push(p)
      return p
    },
    cleanup: async () => {
      await Promise.all(stores.map((s) => s.close()))
    },
  }
})

t.test('leased rate limits on the cluster: two instances, two limits a request, never more than the limit', async (t) => {
  const clock = new ManualClock()
  const keyPrefix = `${cluster.prefix}lease:`
  const make = (): RedisStore => new RedisStore({ url: cluster.url, cluster: cluster.seeds, keyPrefix, clock, commandTimeoutMs: 1000 })
  const [one, two] = [make(), make()]
  t.teardown(async () => {
    await one.close()
    await two.close()
  })
  const client = rateRule(1000, 3_600_000, 0) // a lease of 10, 1 s
  const person = rateRule(100_000, 3_600_000, 0) // a lease of 1,000: it never refuses here
  const takes = [
    { key: 'client', cost: 1, rule: client },
    { key: 'person', cost: 1, rule: person },
  ]
  const burst = await Promise.all(Array.from({ length: 1200 }, (_, i) => (i % 2 === 0 ? one : two).trafficLimits.take(takes)))
  const allowed = burst.filter((a) => a.allowed).length
  t.ok(allowed >= 990 && allowed <= 1000, `${allowed} of 1200 at once: the limit, less at most the other instance's unspent lease`)
  t.ok(one.trafficLimits.leases > 0 && two.trafficLimits.leases > 0, 'both instances leased')
  let more = 0
  for (let i = 0; i < 40; i++) if ((await (i % 2 === 0 ? one : two).trafficLimits.take(takes)).allowed) more++
  t.equal(allowed + more, 1000, 'each instance spends what it holds: together exactly the limit')
})

/**
 * The revocation feed's own subscriber connection (src/store/redis/cluster.ts):
 * when the node it sits on dies, the loss is reported at once (the gateway
 * stops trusting its list), the connection moves to a live node, and the
 * feed is reported back; messages published then arrive. Runs last: it
 * kills a node of the file's cluster.
 */
t.test('the feed reports the loss of its node, moves to a live node, and delivers again', async (t) => {
  const clock = new ManualClock()
  const keyPrefix = `${cluster.prefix}feed:`
  const store = new RedisStore({ url: cluster.url, cluster: cluster.seeds, keyPrefix, clock, commandTimeoutMs: 1000 })
  const publisher = new RedisStore({ url: cluster.url, cluster: cluster.seeds, keyPrefix, clock, commandTimeoutMs: 1000 })
  t.teardown(async () => {
    await store.close()
    await publisher.close()
  })
  const feed: boolean[] = []
  const got: string[] = []
  await store.revocations.subscribe(
    (e) => got.push(e.id),
    (up) => feed.push(up),
  )
  const exp = Math.floor(clock.now() / 1000) + 600
  await publisher.revocations.add({ kind: 'jti', id: 'before', exp })
  t.ok(await eventually(() => got.includes('before')), 'delivered before the kill')

  // The node holding the subscription: the one whose CLIENT LIST shows a connection with one channel.
  let host: number | null = null
  for (const node of cluster.nodes.filter((n) => n.alive)) {
    const c = new Redis({ port: node.port, host: '127.0.0.1', maxRetriesPerRequest: 0 })
    const clients = String(await c.call('CLIENT', 'LIST'))
    c.disconnect()
    if (/ sub=1 /.test(clients)) host = node.port
  }
  t.ok(host, 'the subscriber sits on one node')
  const started = performance.now()
  await cluster.kill(host!)
  t.ok(await eventually(() => feed.includes(false), 3000, 5), 'the loss is reported')
  const lossMs = performance.now() - started
  t.ok(await eventually(() => feed.at(-1) === true, 15_000, 20), 'the feed is back, on another node')
  const backMs = performance.now() - started
  t.ok(await cluster.healthy(15_000), 'the cluster is ok again')
  await eventually(
    async () => {
      try {
        await publisher.revocations.add({ kind: 'jti', id: 'after', exp })
        return true
      } catch {
        return false
      }
    },
    15_000,
    50,
  )
  t.ok(await eventually(() => got.includes('after')), 'a message published after the move arrives')
  t.comment(`feed: loss reported after ${lossMs.toFixed(0)} ms, back after ${backMs.toFixed(0)} ms`)
})
