/**
 * The ioredis clients the store talks through: one node, Sentinel or
 * Cluster for commands, and for Cluster the revocation subscriber's own
 * plain connection. None queues a command while disconnected or replays one
 * after a caller saw it fail.
 */
import type { ConnectionOptions } from 'node:tls'
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { rotatingConnector, type NodeAddress } from './cluster.js'
import type { Client } from './link.js'
import type { RedisStoreOptions } from './options.js'

function parseNode(seed: string): NodeAddress {
  if (/^rediss?:\/\//.test(seed)) {
    const u = new URL(seed)
    return { host: u.hostname, port: Number(u.port || 6379) }
  }
  const i = seed.lastIndexOf(':')
  return i > 0 ? { host: seed.slice(0, i), port: Number(seed.slice(i + 1)) } : { host: seed, port: 6379 }
}

/** Credentials, database and TLS of `url` (host and port are the cluster's or the sentinels' business). */
function urlOptions(url: string): RedisOptions {
  const out: RedisOptions = {}
  if (url === '') return out
  const u = new URL(url)
  if (u.username) out.username = decodeURIComponent(u.username)
  if (u.password) out.password = decodeURIComponent(u.password)
  if (u.protocol === 'rediss:') out.tls = {}
  const db = Number(u.pathname.slice(1))
  if (u.pathname.length > 1 && Number.isInteger(db)) out.db = db
  return out
}

export function createClient(o: RedisStoreOptions, timeoutMs: number): Client {
  const capMs = o.maxReconnectDelayMs ?? 500
  const common: RedisOptions = {
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(timeoutMs, 2000),
    // No offline queue and no replay: a command either goes out now or fails,
    // and nothing the caller saw fail is executed later behind its back.
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    // In-flight commands are rejected as soon as the connection drops.
    maxRetriesPerRequest: 0,
    // Commands issued in one turn of the event loop (by every request it
    // served) go out in one write: a write to Redis costs the process 20-25
    // µs of system time on a loopback VM (docs/performance.md).
    enableAutoPipelining: true,
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), capMs),
  }
  if (o.cluster && o.cluster.length > 0) {
    const { db: _db, ...redisOptions } = { ...common, ...urlOptions(o.url) }
    return new Cluster(o.cluster.map(parseNode), {
      redisOptions,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      clusterRetryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), capMs),
    })
  }
  if (o.sentinels && o.sentinels.length > 0) {
    return new Redis({
      ...common,
      ...urlOptions(o.url),
      sentinels: o.sentinels.map(parseNode),
      name: o.sentinelName ?? 'mymaster',
      // Ask the sentinels again at every reconnect (they name the new master after a failover),
      // and drop the connection as soon as they announce +switch-master.
      sentinelRetryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), capMs),
      failoverDetector: true,
    })
  }
  return new Redis(o.url, common)
}

/**
 * Cluster: one plain connection that moves to the next known node at each
 * reconnect (see cluster.ts). The feed is cluster-wide PUBLISH, not
 * sharded SPUBLISH: the scripts publish in the same step as the write they
 * announce, and a script may only touch its own slot, which SPUBLISH's
 * channel would have to share; revocations are few and small, so the bus
 * carrying each to every node costs nothing that matters; and any node,
 * replicas included, can then serve the subscriber.
 */
export function createClusterSubscriber(cluster: Cluster, o: RedisStoreOptions, timeoutMs: number): Redis {
  const seeds = (o.cluster ?? []).map(parseNode)
  const candidates = (): NodeAddress[] => {
    const known = cluster.nodes('all').map((n) => ({ host: n.options.host ?? '127.0.0.1', port: n.options.port ?? 6379 }))
    const seen = new Set(known.map((n) => `${n.host}:${n.port}`))
    return [...known, ...seeds.filter((n) => !seen.has(`${n.host}:${n.port}`))]
  }
  const { tls, ...auth } = urlOptions(o.url)
  return new Redis({
    ...auth,
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(timeoutMs, 2000),
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), o.maxReconnectDelayMs ?? 500),
    Connector: rotatingConnector(candidates, tls === undefined ? undefined : (tls as ConnectionOptions)),
  })
}
