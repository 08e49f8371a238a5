/** How the Redis store is reached and how it behaves when Redis is slow or gone. */
import type { Clock } from '../../clock.js'
import type { StoreLog } from './replies.js'

export interface RedisStoreOptions {
  /** redis:// or rediss:// URL (may hold a password: never logged). */
  url: string
  /** Cluster seed nodes (`host:port` or redis:// URLs); empty or absent for a single node. */
  cluster?: string[]
  /**
   * Sentinels (`host:port`) that name the master of `sentinelName`; with
   * them `url` only carries credentials, database and TLS.
   */
  sentinels?: string[]
  sentinelName?: string
  /**
   * Revocation writes wait until this many replicas hold them (Redis WAIT),
   * at most `timeoutMs`; fewer in time fails the call (StoreUnavailableError,
   * the write stays on the master). `replicas: 0` does not wait. The count is
   * capped by the replicas the master has (Cluster: in the slot table; one
   * server or Sentinel: connected now, from ROLE).
   */
  replicaWait?: { replicas: number; timeoutMs: number }
  /**
   * Told each time a revocation write was not confirmed by its replicas in
   * time (the metric bearward_store_replica_wait_timeouts_total): a rising
   * count means replicas lag or are gone, and clients see 503s for it.
   */
  onReplicaWaitTimeout?: () => void
  /** Prefix of every key and of the revocation channel (default `bw:`). */
  keyPrefix?: string
  /** Per-command timeout (default 1000 ms). */
  commandTimeoutMs?: number
  clock: Clock
  log?: StoreLog
  /** Cap of the reconnect backoff (default 500 ms). */
  maxReconnectDelayMs?: number
}
