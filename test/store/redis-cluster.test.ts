/**
 * The contract on a real Redis Cluster: three masters and three replicas
 * (test/helpers/redis-cluster.ts), through ioredis' Cluster client. Keys of
 * different families land on different masters, and Redis rejects a script
 * whose keys span slots, so this is what proves the hash-tag layout; the
 * races run against the cluster too.
 */
import t from 'tap'
import { RedisStore } from '../../src/store/redis.js'
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
