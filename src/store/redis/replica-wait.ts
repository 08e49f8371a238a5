/**
 * Waiting until a revocation reached the replicas (Redis WAIT), so a failover
 * right after cannot lose it: Redis replicates asynchronously.
 */
import type { Cluster, Redis } from 'ioredis'
import { StoreUnavailableError } from '../../errors.js'
import { masterOf } from './cluster.js'
import type { Client } from './link.js'
import type { RedisStoreOptions } from './options.js'
import { list, num, str } from './replies.js'

/**
 * Wait until the writes just made to `keys` (over this connection) reached
 * the configured number of replicas. Short of that in time the call fails
 * with StoreUnavailableError: the write stays on the master (and its message
 * went out, so every running instance already refuses the token), but the
 * caller is not told it is safe, and revocation is idempotent, so sending it
 * again is the cure.
 */
export async function confirmReplicated(c: Client, keys: string[], cluster: boolean, o: RedisStoreOptions): Promise<void> {
  const wait = o.replicaWait
  if (!wait || wait.replicas <= 0) return
  // The master(s) that took the writes: on Cluster, each key's slot master.
  const masters: Redis[] = []
  if (cluster) {
    for (const key of keys) {
      const found = masterOf(c as Cluster, key)
      if (!found) throw new StoreUnavailableError('no master known for a revocation key')
      if (!masters.includes(found.node)) masters.push(found.node)
    }
  } else {
    masters.push(c as Redis)
  }
  // ROLE lists the replicas connected to that master now: with none there is
  // nothing to wait for (and nothing a failover could promote). The cluster
  // client's slot table is not asked: it is refreshed only now and then, so
  // right after a cluster forms (or a replica joins) it can list none.
  const targets: Array<{ node: Redis; want: number }> = []
  for (const node of masters) {
    const role = list(await node.call('ROLE'))
    const connected = str(role[0]) === 'master' && Array.isArray(role[2]) ? role[2].length : 0
    const want = Math.min(wait.replicas, connected)
    if (want > 0) targets.push({ node, want })
  }
  const acked = await Promise.all(targets.map(({ node, want }) => node.call('WAIT', want, wait.timeoutMs)))
  targets.forEach(({ want }, i) => {
    const got = num(acked[i])
    if (got >= want) return
    o.log?.warn({ replicas: got, wanted: want, timeoutMs: wait.timeoutMs }, 'revocation not confirmed by a replica in time')
    o.onReplicaWaitTimeout?.()
    throw new StoreUnavailableError('revocation not confirmed by a replica in time')
  })
}
