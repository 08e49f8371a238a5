/**
 * A real Redis Cluster for tests: three masters and three replicas on
 * loopback ports (`redis-server --cluster-enabled yes` per node, then
 * `redis-cli --cluster create … --cluster-replicas 1`), with a short node
 * timeout so a killed master is replaced within about a second. Missing
 * binaries make the test fail with how to install them, never skip.
 *
 * One cluster per test file: forming it takes a second or two.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, freePort } from './http.js'
import { askRedis } from './redis.js'

const NOT_FOUND = 'redis-server and redis-cli are needed for the cluster tests: apt-get install -y redis-server (Debian/Ubuntu) or brew install redis'

export interface ClusterNodeProcess {
  port: number
  /** `host:port`, as bearward's `store.cluster` takes it. */
  address: string
  /** Alive (not killed by the test). */
  readonly alive: boolean
}

export interface TestCluster {
  /** Every node, masters and replicas as formed (roles change after a failover). */
  nodes: ClusterNodeProcess[]
  /** `host:port` of every node: the seed list. */
  seeds: string[]
  /** A redis:// URL of one node (credentials would go here). */
  url: string
  /** A key prefix unique to this cluster's user. */
  prefix: string
  /** The port of the node that is master of `key`'s slot now (asks a live node). */
  masterOf(key: string): Promise<number>
  /** The ports of the replicas of the master on `port`, as the cluster sees them now. */
  replicasOf(port: number): Promise<number[]>
  /** SIGKILL the node on `port` (a crash: no goodbye to its peers). */
  kill(port: number): Promise<void>
  /** SIGSTOP / SIGCONT the node on `port` (a frozen process that holds its sockets). */
  pause(port: number): void
  resume(port: number): void
  /** Whether every live node says `cluster_state:ok` within `ms` (every slot served by a live master). */
  healthy(ms?: number): Promise<boolean>
  stop(): Promise<void>
}

export interface StartClusterOptions {
  /** `cluster-node-timeout` in ms (default 500): how long a silent master takes to be failed over. */
  nodeTimeoutMs?: number
}

interface Node {
  port: number
  child: ChildProcess
}

function requireBinaries(): void {
  for (const bin of ['redis-server', 'redis-cli']) {
    const probe = spawnSync(bin, ['--version'], { stdio: 'ignore' })
    if (probe.error) throw new Error(`${bin} not found. ${NOT_FOUND}`)
  }
}

function launch(port: number, busPort: number, dir: string, nodeTimeoutMs: number): ChildProcess {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    // The bus port is chosen, not port + 10000: above 55535 that is past 65535 and redis-server exits.
    '--cluster-port',
    String(busPort),
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, `nodes-${port}.conf`),
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    // Tests kill masters: a replica must take over however long it was cut off.
    '--cluster-replica-validity-factor',
    '0',
    '--cluster-announce-ip',
    '127.0.0.1',
  ]
  return spawn('redis-server', args, { stdio: 'ignore', cwd: dir })
}

/**
 * One node on two free ports, answering PING. A free port can be taken by
 * another test between the probe and the spawn (the node then exits at
 * once): a node that does not come up is tried again on new ports, three times.
 */
async function launchNode(dir: string, nodeTimeoutMs: number, alive: (n: Node) => boolean): Promise<Node> {
  let last = ''
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort()
    const node: Node = { port, child: launch(port, await freePort(), dir, nodeTimeoutMs) }
    const up = await eventually(async () => alive(node) && (await askRedis(port, (c) => c.ping()).catch(() => '')) === 'PONG', 5000, 25)
    if (up) return node
    node.child.kill('SIGKILL')
    last = `redis-server on port ${port} did not answer PING (exit ${node.child.exitCode ?? node.child.signalCode ?? 'none yet'})`
  }
  throw new Error(`${last}, three times: a port taken each time, or redis-server failing to start`)
}

function run(cmd: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    c.stdout.on('data', (d: Buffer) => (out += d.toString()))
    c.stderr.on('data', (d: Buffer) => (out += d.toString()))
    c.once('error', reject)
    c.once('exit', (code) => resolve({ code, out }))
  })
}

export async function startRedisCluster(options: StartClusterOptions = {}): Promise<TestCluster> {
  requireBinaries()
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 500
  const dir = mkdtempSync(join(tmpdir(), 'bw-cluster-'))
  const nodes: Node[] = []
  const killAll = (): void => {
    for (const n of nodes) n.child.kill('SIGKILL')
  }
  process.on('exit', killAll)
  const alive = (n: Node): boolean => n.child.exitCode === null && n.child.signalCode === null

  const stop = async (): Promise<void> => {
    await Promise.all(
      nodes.map(async (n) => {
        if (!alive(n)) return
        const exited = new Promise<void>((resolve) => n.child.once('exit', () => resolve()))
        n.child.kill('SIGCONT')
        n.child.kill('SIGKILL')
        await exited
      }),
    )
    process.off('exit', killAll)
    rmSync(dir, { recursive: true, force: true })
  }

  try {
    for (let i = 0; i < 6; i++) nodes.push(await launchNode(dir, nodeTimeoutMs, alive))
    const created = await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'])
    if (created.code !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.out}`)
    const ok = await eventually(
      async () => {
        const infos = await Promise.all(nodes.map((n) => askRedis(n.port, (c) => c.call('CLUSTER', 'INFO')).catch(() => '')))
        return infos.every((i) => String(i).includes('cluster_state:ok'))
      },
      15000,
      50,
    )
    if (!ok) throw new Error('the redis cluster did not reach cluster_state:ok on every node within 15 s')
    // Every replica must be attached (link up), or a failover test could find no one to promote.
    const synced = await eventually(
      async () => {
        const roles = await Promise.all(nodes.map((n) => askRedis(n.port, (c) => c.info('replication')).catch(() => '')))
        return roles.filter((r) => r.includes('role:slave') && r.includes('master_link_status:up')).length === 3
      },
      15000,
      50,
    )
    if (!synced) throw new Error('the cluster replicas did not finish their first sync within 15 s')
  } catch (err) {
    await stop()
    throw err
  }

  const liveNode = (): Node => {
    const n = nodes.find(alive)
    if (!n) throw new Error('no cluster node is alive')
    return n
  }
  const byPort = (port: number): Node => {
    const n = nodes.find((x) => x.port === port)
    if (!n) throw new Error(`no cluster node on port ${port}`)
    return n
  }
  /** CLUSTER NODES of a live node, as [port, flags, master id, id] rows. */
  const table = async (): Promise<Array<{ id: string; port: number; flags: string[]; masterId: string }>> => {
    const text = String(await askRedis(liveNode().port, (c) => c.call('CLUSTER', 'NODES')))
    return text
      .trim()
      .split('\n')
      .map((line) => {
        const [id = '', addr = '', flags = '', masterId = ''] = line.split(' ')
        return { id, port: Number(addr.split('@')[0]?.split(':')[1]), flags: flags.split(','), masterId }
      })
  }

  return {
    nodes: nodes.map((n) => ({
      port: n.port,
      address: `127.0.0.1:${n.port}`,
      get alive() {
        return alive(n)
      },
    })),
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`),
    url: `redis://127.0.0.1:${nodes[0]!.port}`,
    prefix: `bwtest:${randomBytes(6).toString('hex')}:`,
    async masterOf(key) {
      const slot = Number(await askRedis(liveNode().port, (c) => c.call('CLUSTER', 'KEYSLOT', key)))
      const slots = (await askRedis(liveNode().port, (c) => c.call('CLUSTER', 'SLOTS'))) as Array<
        [number, number, [string, number, ...unknown[]], ...unknown[]]
      >
      const range = slots.find(([from, to]) => slot >= from && slot <= to)
      if (!range) throw new Error(`slot ${slot} has no master`)
      return Number(range[2][1])
    },
    async replicasOf(port) {
      const rows = await table()
      const master = rows.find((r) => r.port === port)
      if (!master) throw new Error(`no cluster node on port ${port}`)
      return rows.filter((r) => r.masterId === master.id && !r.flags.includes('fail')).map((r) => r.port)
    },
    async kill(port) {
      const n = byPort(port)
      if (!alive(n)) return
      const exited = new Promise<void>((resolve) => n.child.once('exit', () => resolve()))
      n.child.kill('SIGKILL')
      await exited
    },
    pause(port) {
      byPort(port).child.kill('SIGSTOP')
    },
    resume(port) {
      byPort(port).child.kill('SIGCONT')
    },
    async healthy(ms = 10000) {
      return eventually(
        async () => {
          const live = nodes.filter(alive)
          const infos = await Promise.all(live.map((n) => askRedis(n.port, (c) => c.call('CLUSTER', 'INFO')).catch(() => '')))
          return infos.every((i) => String(i).includes('cluster_state:ok'))
        },
        ms,
        50,
      )
    },
    stop,
  }
}
