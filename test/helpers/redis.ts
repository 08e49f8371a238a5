/**
 * A real Redis for tests: spawns its own `redis-server` on a free port (never
 * 6379), or uses `REDIS_URL` when set. Missing both is an error, never a skip.
 * A real Redis Cluster (three masters, three replicas) is in redis-cluster.ts,
 * Sentinel in redis-sentinel.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { Redis } from 'ioredis'
import { eventually, freePort } from './http.js'

export interface TestRedis {
  /** redis://127.0.0.1:<port>/0 (or REDIS_URL). */
  url: string
  port: number
  /**
   * A key prefix unique to this call (`bwtest:<random>:`). Tests should put
   * their keys under it: with REDIS_URL, stop() deletes exactly these keys.
   */
  prefix: string
  /** Spawned: kill the server. REDIS_URL: delete the keys under `prefix`. */
  stop(): Promise<void>
  /** Spawned only: SIGKILL the server (simulates a crash); `restart()` brings it back on the same port. */
  kill(): Promise<void>
  restart(): Promise<void>
}

export interface StartRedisOptions {
  /** Always spawn a server, even when REDIS_URL is set (outage tests need to kill it). */
  own?: boolean
}

const NOT_FOUND = 'redis-server not found: apt-get install -y redis-server or set REDIS_URL=redis://host:port/db'

export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const prefix = `bwtest:${randomBytes(6).toString('hex')}:`
  const external = process.env.REDIS_URL
  if (external && !options.own) return useExternal(external, prefix)
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
  if (probe.error) throw new Error(NOT_FOUND)
  return spawnOwn(prefix)
}

function useExternal(url: string, prefix: string): TestRedis {
  const port = Number(new URL(url).port || 6379)
  const refuse = async (): Promise<void> => {
    throw new Error('kill()/restart() need a spawned redis-server: call startRedis({ own: true })')
  }
  return {
    url,
    port,
    prefix,
    async stop() {
      const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
      try {
        await c.connect()
        let cursor = '0'
        do {
          const [next, keys] = await c.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
          if (keys.length > 0) await c.del(...keys)
          cursor = next
        } while (cursor !== '0')
      } finally {
        c.disconnect()
      }
    },
    kill: refuse,
    restart: refuse,
  }
}

/**
 * One short-lived connection to the redis-server on `port` for `fn`: no
 * retries, 1 s bounds, errors go to the caller (a node a test just killed
 * fails fast instead of hanging the test).
 */
export async function askRedis<T>(port: number, fn: (c: Redis) => Promise<T>): Promise<T> {
  const c = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 1000,
  })
  c.on('error', () => undefined)
  try {
    await c.connect()
    return await fn(c)
  } finally {
    c.disconnect()
  }
}

/** Whether one raw PING on `port` gets +PONG within half a second. */
function pongs(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const sock = connect(port, '127.0.0.1')
    let buf = ''
    const done = (v: boolean): void => {
      sock.destroy()
      resolve(v)
    }
    sock.setTimeout(500, () => done(false))
    sock.once('error', () => done(false))
    sock.once('connect', () => sock.write('PING\r\n'))
    sock.on('data', (d) => {
      buf += d.toString('utf8')
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'))
    })
  })
}

/** Resolves once a raw PING gets +PONG, or rejects after `timeoutMs`. */
async function waitForPong(port: number, timeoutMs: number): Promise<void> {
  if (!(await eventually(() => pongs(port), timeoutMs, 25))) throw new Error(`redis-server on port ${port} did not answer PING`)
}

async function spawnOwn(prefix: string): Promise<TestRedis> {
  let port = 0
  let child: ChildProcess | null = null
  const killOnExit = (): void => {
    child?.kill('SIGKILL')
  }
  process.on('exit', killOnExit)

  const launch = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
    const c = spawn('redis-server', args, { stdio: 'ignore' })
    child = c
    const exited = new Promise<never>((_, reject) => {
      c.once('exit', (code) => reject(new Error(`redis-server exited with code ${code} on port ${port}`)))
      c.once('error', (err) => reject(err))
    })
    exited.catch(() => undefined)
    await Promise.race([waitForPong(port, 5000), exited])
  }

  const killChild = async (): Promise<void> => {
    const c = child
    child = null
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve())
      c.kill('SIGKILL')
    })
  }

  // A free port can be taken between the probe and the spawn: try a few.
  let lastErr: unknown = null
  for (let attempt = 0; attempt < 3 && !child; attempt++) {
    port = await freePort()
    try {
      await launch()
    } catch (err) {
      lastErr = err
      await killChild()
    }
  }
  if (!child) {
    process.off('exit', killOnExit)
    throw lastErr instanceof Error ? lastErr : new Error('could not start redis-server')
  }

  return {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    prefix,
    async stop() {
      await killChild()
      process.off('exit', killOnExit)
    },
    kill: killChild,
    async restart() {
      await killChild()
      await launch()
    },
  }
}
