/**
 * The contract on Redis Cluster (one node holding every slot: Redis rejects a
 * script whose keys span slots exactly as a larger cluster would), through
 * ioredis' Cluster client. This is what proves the hash-tag layout.
 */
import t from 'tap'
import { RedisStore } from '../../src/store/redis.js'
import { startRedis } from '../helpers/redis.js'
import { runStoreContract } from './contract.js'

const redis = await startRedis({ cluster: true })
t.teardown(() => redis.stop())
let n = 0

runStoreContract(t, 'redis cluster', async (clock) => {
  const keyPrefix = `${redis.prefix}${++n}:`
  const make = (): RedisStore =>
    new RedisStore({ url: redis.url, cluster: [`127.0.0.1:${redis.port}`], keyPrefix, clock, commandTimeoutMs: 1000 })
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
