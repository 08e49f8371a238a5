/**
 * Reaching particular nodes of a Redis Cluster, where ioredis' Cluster client
 * only routes by key:
 *
 * - `WAIT` has no key, yet it must go over the very connection that made the
 *   write (it counts that connection's replication offset), so the store
 *   finds the master of a key's slot in ioredis' slot table and sends WAIT to
 *   that node's connection (the one the write went through).
 * - The revocation feed uses cluster-wide PUBLISH, which every node (masters
 *   and replicas) delivers, so the subscriber may sit on any node. ioredis'
 *   own cluster subscriber moves to another node and resubscribes without
 *   telling anyone, which would hide the gap in which messages were missed;
 *   so the store keeps one plain connection whose connector moves to the
 *   next known node at every reconnect, and sees (and reports) each loss.
 */
import { createConnection } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls'
import { AbstractConnector, type Cluster, type Redis } from 'ioredis'

/** CRC16/XMODEM, the checksum Redis Cluster maps keys to slots with. */
function crc16(data: Buffer): number {
  let crc = 0
  for (const byte of data) {
    crc ^= byte << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc
}

/** The slot of `key` (the hash tag `{…}` alone is hashed when it is non-empty), as CLUSTER KEYSLOT answers. */
export function keySlot(key: string): number {
  const open = key.indexOf('{')
  if (open !== -1) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) key = key.slice(open + 1, close)
  }
  return crc16(Buffer.from(key, 'utf8')) % 16384
}

/**
 * The connection to the master of `key`'s slot as ioredis knows it now; null
 * when the slot has no known master (the cluster is being re-read after a
 * failover).
 */
export function masterOf(cluster: Cluster, key: string): { node: Redis } | null {
  const owners = cluster.slots[keySlot(key)]
  const master = owners?.[0]
  if (!owners || master === undefined) return null
  const node = cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === master)
  return node ? { node } : null
}

export interface NodeAddress {
  host: string
  port: number
}

/**
 * A connector class for a plain ioredis connection that connects to the next
 * of `candidates()` each time (ioredis calls connect at every reconnect), so
 * a node that died is left for a live one at the next attempt.
 */
export function rotatingConnector(candidates: () => NodeAddress[], tls: ConnectionOptions | undefined): new (options: unknown) => AbstractConnector {
  let next = Math.floor(Math.random() * 1024)
  return class RotatingConnector extends AbstractConnector {
    constructor(options: unknown) {
      super((options as { disconnectTimeout?: number }).disconnectTimeout ?? 2000)
    }

    connect(): Promise<ReturnType<typeof createConnection>> {
      this.connecting = true
      const list = candidates()
      const target = list[next++ % Math.max(1, list.length)]
      return new Promise((resolve, reject) => {
        // As ioredis' own connector: create the stream on the next tick, unless disconnected meanwhile.
        process.nextTick(() => {
          if (!this.connecting) return reject(new Error('Connection is closed.'))
          if (!target) return reject(new Error('no cluster node known'))
          const stream = tls ? tlsConnect({ ...tls, host: target.host, port: target.port }) : createConnection({ host: target.host, port: target.port })
          stream.once('error', (err: Error) => {
            this.firstError = err
          })
          this.stream = stream
          resolve(stream)
        })
      })
    }
  }
}
