/**
 * A TCP relay between a process under test and a server (redis-server), on
 * 127.0.0.1:0, that a test can cut and restore to make network faults:
 *
 * - `cut()`: every relayed connection is destroyed (the peer sees the
 *   connection reset), and new connections are refused (reset at once) or,
 *   with `{ newConnections: 'blackhole' }`, accepted and never answered.
 * - `silence()`: a silent partition (a TCP black hole, no RST): connections
 *   stay open but nothing passes either way, and new ones are held unanswered.
 * - `restore()`: the network heals. Bytes held during a silence are delivered
 *   (as TCP would retransmit them) and held connections are connected through.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'
import { listen } from './http.js'

type Mode = 'open' | 'refuse' | 'blackhole' | 'silent'

/** One relayed connection: the client side, the server side (once connected), and bytes held back. */
interface Pair {
  client: Socket
  server: Socket | null
  /** Bytes from the client not yet written to the server (held while silent or not connected). */
  up: Buffer[]
  /** Bytes from the server not yet written to the client (held while silent). */
  down: Buffer[]
}

export interface TcpRelay {
  /** Port the relay listens on. */
  readonly port: number
  /** `redis://127.0.0.1:<relay port>/0`. */
  readonly url: string
  /** Connections relayed since start (accepted while open or held, then connected through). */
  readonly accepted: number
  /** Connections currently open on the client side. */
  readonly open: number
  cut(options?: { newConnections?: 'refuse' | 'blackhole' }): void
  silence(): void
  restore(): void
  close(): Promise<void>
}

export async function startTcpRelay(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpRelay> {
  let mode: Mode = 'open'
  let accepted = 0
  const pairs = new Set<Pair>()

  const flush = (pair: Pair): void => {
    if (pair.server === null || mode !== 'open') return
    for (const chunk of pair.up.splice(0)) pair.server.write(chunk)
    for (const chunk of pair.down.splice(0)) pair.client.write(chunk)
  }

  const drop = (pair: Pair): void => {
    if (!pairs.delete(pair)) return
    pair.client.destroy()
    pair.server?.destroy()
  }

  const connectThrough = (pair: Pair): void => {
    const server = connect(targetPort, targetHost)
    pair.server = server
    server.setNoDelay(true)
    server.on('connect', () => flush(pair))
    server.on('data', (chunk: Buffer) => {
      if (mode === 'open') pair.client.write(chunk)
      else pair.down.push(chunk)
    })
    server.on('error', () => drop(pair))
    server.on('close', () => drop(pair))
  }

  const server: Server = createServer((client) => {
    if (mode === 'refuse') {
      client.resetAndDestroy()
      return
    }
    accepted++
    client.setNoDelay(true)
    const pair: Pair = { client, server: null, up: [], down: [] }
    pairs.add(pair)
    client.on('data', (chunk: Buffer) => {
      if (mode === 'open' && pair.server !== null && !pair.server.connecting) pair.server.write(chunk)
      else pair.up.push(chunk)
    })
    client.on('error', () => drop(pair))
    client.on('close', () => drop(pair))
    // Black-holed or silent: accepted, but nothing behind it until restore().
    if (mode === 'open') connectThrough(pair)
  })
  const { port } = await listen(server)

  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    get accepted() {
      return accepted
    },
    get open() {
      return pairs.size
    },
    cut(options = {}) {
      mode = options.newConnections ?? 'refuse'
      for (const pair of [...pairs]) {
        pairs.delete(pair)
        pair.client.resetAndDestroy()
        pair.server?.destroy()
      }
    },
    silence() {
      mode = 'silent'
    },
    restore() {
      mode = 'open'
      for (const pair of pairs) {
        if (pair.server === null) connectThrough(pair)
        else flush(pair)
      }
    },
    async close() {
      for (const pair of [...pairs]) drop(pair)
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
