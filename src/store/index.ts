/**
 * Builds the configured {@link Store}: the embedded memory store, or Redis
 * (single node, Sentinel or Cluster). The Runtime owns the result and closes it.
 */
import type { Clock } from '../clock.js'
import type { StoreConfig } from '../config/validated-config.js'
import { MemoryStore } from './memory.js'
import type { StoreLog } from './redis/replies.js'
import type { Store } from './types.js'

export type { StoreLog } from './redis/replies.js'
export { MemoryStore } from './memory.js'
export { RevocationList } from './revocation-list.js'

export interface StoreDeps {
  clock: Clock
  /** A pino logger (or anything with info/warn/error); connection state changes are logged once each. */
  log?: StoreLog
  /** Redis with `store.replica_wait`: called when a revocation was not confirmed by a replica in time. */
  onReplicaWaitTimeout?: () => void
}

/**
 * Create the store `config` describes. Redis connects in the background; it never throws for an unreachable server.
 * The Redis store's modules (ioredis and the scripts) load only when a config names Redis: a memory-store start does
 * not pay for them.
 */
export async function createStore(config: StoreConfig, deps: StoreDeps): Promise<Store> {
  if (config.kind === 'memory') return new MemoryStore(deps.clock, deps.log ? { log: deps.log } : {})
  const { RedisStore } = await import('./redis.js')
  return new RedisStore({
    url: config.url,
    cluster: config.cluster,
    keyPrefix: config.keyPrefix,
    commandTimeoutMs: config.commandTimeoutMs,
    sentinels: config.sentinels,
    sentinelName: config.sentinelName,
    replicaWait: config.replicaWait,
    clock: deps.clock,
    ...(deps.log ? { log: deps.log } : {}),
    ...(deps.onReplicaWaitTimeout ? { onReplicaWaitTimeout: deps.onReplicaWaitTimeout } : {}),
  })
}
