/**
 * A real Redis Sentinel set-up for tests: a master, one replica and three
 * sentinels on loopback ports, with a short `down-after-milliseconds` and
 * `failover-timeout`, so a SIGKILLed master is replaced within a few seconds.
 * Missing binaries make the test fail with how to install them, never skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, freePort } from './http.js'
import { askRedis } from './redis.js'

const NOT_FOUND =
  'redis-server (with its --sentinel mode) is needed for the Sentinel tests: apt-get install -y redis-server redis-sentinel (Debian/Ubuntu) or brew install redis'

export const MASTER_NAME = 'mymaster'

export interface TestSentinel {
  /** `host:port` of each sentinel, as bearward's `store.sentinels` takes them. */
  sentinels: string[]
  masterPort: number
  replicaPort: number
  prefix: string
  /** The master's port as the sentinels name it now (asks the first live sentinel). */
  currentMaster(): Promise<number>
  /** SIGKILL the redis-server on `port`. */
  kill(port: number): Promise<void>
  /** SIGSTOP / SIGCONT the process on `port` (frozen: its connections stay open, it answers nothing). */
  pause(port: number): void
  resume(port: number): void
  stop(): Promise<void>
}

export interface StartSentinelOptions {
  /** `down-after-milliseconds` (default 500). */
  downAfterMs?: number
  /** `failover-timeout` (default 2000). */
  failoverTimeoutMs?: number
}

export async function startRedisSentinel(options: StartSentinelOptions = {}): Promise<TestSentinel> {
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
  if (probe.error) throw new Error(`redis-server not found. ${NOT_FOUND}`)
  const dir = mkdtempSync(join(tmpdir(), 'bw-sentinel-'))
  const children = new Map<number, ChildProcess>()
  const killAll = (): void => {
    for (const c of children.values()) c.kill('SIGKILL')
  }
  process.on('exit', killAll)
  const alive = (c: ChildProcess): boolean => c.exitCode === null && c.signalCode === null
  const kill = async (port: number): Promise<void> => {
    const c = children.get(port)
    if (!c || !alive(c)) return
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()))
    c.kill('SIGKILL')
    await exited
  }
  const stop = async (): Promise<void> => {
    for (const c of children.values()) c.kill('SIGCONT')
    await Promise.all([...children.keys()].map(kill))
    process.off('exit', killAll)
    rmSync(dir, { recursive: true, force: true })
  }
  const serve = (port: number, args: string[]): void => {
    children.set(port, spawn('redis-server', args, { stdio: 'ignore', cwd: dir }))
  }
  const pong = async (port: number): Promise<void> => {
    const c = children.get(port)
    const ok = await eventually(async () => c !== undefined && alive(c) && (await askRedis(port, (r) => r.ping()).catch(() => '')) === 'PONG', 5000, 25)
    if (!ok) throw new Error(`redis on port ${port} did not answer PING (port taken, or it failed to start)`)
  }

  const downAfter = options.downAfterMs ?? 500
  const failoverTimeout = options.failoverTimeoutMs ?? 2000
  const base = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
  try {
    const masterPort = await freePort()
    serve(masterPort, ['--port', String(masterPort), ...base])
    await pong(masterPort)
    const replicaPort = await freePort()
    serve(replicaPort, ['--port', String(replicaPort), ...base, '--replicaof', '127.0.0.1', String(masterPort)])
    await pong(replicaPort)
    const sentinelPorts: number[] = []
    for (let i = 0; i < 3; i++) {
      const port = await freePort()
      // A sentinel rewrites its config file: each gets its own.
      const file = join(dir, `sentinel-${port}.conf`)
      writeFileSync(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} ${downAfter}`,
          `sentinel failover-timeout ${MASTER_NAME} ${failoverTimeout}`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      )
      serve(port, [file, '--sentinel'])
      sentinelPorts.push(port)
    }
    for (const p of sentinelPorts) await pong(p)
    const synced = await eventually(
      async () => (await askRedis(replicaPort, (c) => c.info('replication')).catch(() => '')).includes('master_link_status:up'),
      10_000,
      50,
    )
    if (!synced) throw new Error('the replica did not sync with the master within 10 s')
    // A failover needs a quorum of sentinels that know each other and the replica (hello messages every 2 s).
    const ready = await eventually(
      async () => {
        const views = await Promise.all(sentinelPorts.map((p) => askRedis(p, (c) => c.call('SENTINEL', 'MASTER', MASTER_NAME)).catch(() => [] as unknown[])))
        return views.every((v) => {
          const flat = (v as unknown[]).map(String)
          const field = (name: string): string => flat[flat.indexOf(name) + 1] ?? ''
          return field('num-other-sentinels') === '2' && field('num-slaves') === '1'
        })
      },
      20_000,
      100,
    )
    if (!ready) throw new Error('the three sentinels did not discover each other and the replica within 20 s')
    return {
      sentinels: sentinelPorts.map((p) => `127.0.0.1:${p}`),
      masterPort,
      replicaPort,
      prefix: `bwtest:${randomBytes(6).toString('hex')}:`,
      async currentMaster() {
        for (const p of sentinelPorts) {
          const c = children.get(p)
          if (!c || !alive(c)) continue
          const addr = (await askRedis(p, (r) => r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)).catch(() => null)) as [string, string] | null
          if (addr) return Number(addr[1])
        }
        throw new Error('no sentinel answered')
      },
      kill,
      pause: (port) => void children.get(port)?.kill('SIGSTOP'),
      resume: (port) => void children.get(port)?.kill('SIGCONT'),
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
