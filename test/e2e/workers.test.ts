/**
 * `workers: 2` (issue 21, every core): bin/bearward as a primary with two
 * worker processes on a real redis-server. One binary for the file; each
 * step waits for what the primary or the workers log, or polls with a
 * deadline.
 */
import t from 'tap'
import { request } from 'node:http'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { asConfig, DEMO_SECRET } from '../helpers/as-config.js'
import { configYaml, mergeConfig, type ConfigTree } from '../helpers/config-tree.js'
import { runCli, startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { eventually } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { startUpstream } from '../helpers/upstream.js'
import { basic } from '../helpers/client-auth.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'

// Two worker processes and a primary starting on a shared 2-core machine: more than tap's default per-file timeout.
t.setTimeout(300_000)

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request on a connection of its own (no keep-alive pool), so successive requests may reach different workers. */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

const serviceAuth = basic('service', DEMO_SECRET)

async function serviceToken(bin: RunningBin): Promise<string> {
  const res = await send(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: serviceAuth, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=orders%3Aread',
  })
  if (res.status !== 200) throw new Error(`token: ${res.status} ${res.body}`)
  return (JSON.parse(res.body) as { access_token: string }).access_token
}

type Entry = Record<string, unknown>
const entries = (bin: RunningBin): Entry[] =>
  bin.lines.flatMap((l) => {
    try {
      return [JSON.parse(l) as Entry]
    } catch {
      return []
    }
  })
const fromPrimary = (e: Entry): boolean => e.role === 'primary'
/**
 * The workers (by index, sorted) whose access lines match `pred`, once
 * there are lines from both (or after 5 s): each process buffers its log
 * lines for up to 100 ms (src/log.ts).
 */
async function workersLogging(bin: RunningBin, pred: (path: string) => boolean): Promise<unknown[]> {
  let seen: unknown[] = []
  await eventually(() => {
    seen = [
      ...new Set(
        entries(bin)
          .filter((e) => e.msg === 'request' && pred(String(e.path)))
          .map((e) => e.worker),
      ),
    ].sort()
    return seen.length >= 2
  })
  return seen
}

async function metricValue(bin: RunningBin, series: string): Promise<number | undefined> {
  const text = await (await fetch(`${bin.admin}/metrics`)).text()
  for (const line of text.split('\n')) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1))
  return undefined
}

interface Readiness {
  status: string
  workers: Array<{ worker: number; pid?: number; status: string }>
  reasons?: string[]
  last_reload_error?: string
}
const readyz = async (bin: RunningBin): Promise<{ status: number; body: Readiness }> => {
  const res = await fetch(`${bin.admin}/readyz`)
  return { status: res.status, body: (await res.json()) as Readiness }
}

t.test('workers: 2 on one redis-server', async (t) => {
  const redis = await startRedis()
  // /slow answers when the test says so: an in-flight request for the drain at SIGTERM.
  let releaseSlow: () => void = () => undefined
  let slowArrived: () => void = () => undefined
  const slowSeen = new Promise<void>((resolve) => {
    slowArrived = resolve
  })
  const up = await startUpstream('orders', (req, res) => {
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(`answered ${req.url}`)
    }
    if (req.url?.startsWith('/slow') === true) {
      releaseSlow = answer
      slowArrived()
    } else answer()
  })
  const dir = await tempConfig('')
  const file = join(dir.dir, 'gateway.yaml')
  const publicRoute = (name: string): ConfigTree => ({ name, match: { path: `/${name}` }, upstream: up.url, public: true })
  // No signing keys: the primary hands every worker the one ephemeral key.
  const config = await asConfig({
    port: 0,
    upstream: up.url,
    store: { url: redis.url, key_prefix: redis.prefix },
    routes: [publicRoute('pub'), publicRoute('slow')],
    override: { public_url: 'http://bearward.test', workers: 2, shutdown_timeout: '20s' },
  })
  const base = configYaml(config)
  await writeFile(file, base)
  const bin = await startBin(file, {}, 120_000)
  let stopped = false
  t.teardown(async () => {
    if (!stopped) await bin.stop('SIGKILL')
    await up.close()
    await redis.stop()
    await dir.cleanup()
  })

  const started = entries(bin).filter((e) => fromPrimary(e) && e.msg === 'worker started')
  t.equal(new Set(started.map((e) => e.worker_pid)).size, 2, 'the primary started two worker processes')
  const listening = await bin.waitForLog((e) => fromPrimary(e) && String(e.msg).startsWith('bearward listening'))
  t.equal(listening.workers, 2)

  await t.test('/readyz is ready when both workers are, and names them', async (t) => {
    t.ok(await eventually(async () => (await readyz(bin)).status === 200, 20_000, 100), 'ready')
    const { body } = await readyz(bin)
    t.same(
      body.workers.map((w) => [w.worker, w.status]),
      [
        [1, 'ready'],
        [2, 'ready'],
      ],
    )
    t.same(new Set(body.workers.map((w) => w.pid)), new Set(started.map((e) => e.worker_pid)), 'the pids the primary logged')
    t.equal((await fetch(`${bin.admin}/healthz`)).status, 200)
  })

  await t.test('requests are served by both workers; /metrics adds them up', async (t) => {
    const n = 12
    for (let i = 0; i < n; i++) t.equal((await send(`${bin.url}/pub/${i}`)).status, 200)
    t.same(await workersLogging(bin, (p) => p.startsWith('/pub/')), [1, 2], 'access lines from worker 1 and worker 2')
    t.equal(await metricValue(bin, 'bearward_requests_total{outcome="200",route="pub"}'), n, 'the counter is the sum over both workers')
    t.equal(await metricValue(bin, 'bearward_request_duration_seconds_count{outcome="200",route="pub"}'), n)
    t.equal(await metricValue(bin, 'bearward_request_duration_seconds_bucket{outcome="200",route="pub",le="+Inf"}'), n, 'histogram buckets merged')
    t.equal(await metricValue(bin, 'bearward_workers'), 2)
    t.equal(await metricValue(bin, 'bearward_workers_serving'), 2)
  })

  await t.test('both workers sign with one key: a token from either is accepted by either', async (t) => {
    const tokens: string[] = []
    for (let i = 0; i < 4; i++) tokens.push(await serviceToken(bin))
    t.same(await workersLogging(bin, (p) => p === '/token'), [1, 2], 'tokens were issued by both workers')
    for (const token of tokens) {
      for (let i = 0; i < 2; i++) {
        const res = await send(`${bin.url}/orders/${i}`, { headers: { authorization: `Bearer ${token}` } })
        t.equal(res.status, 200, `token accepted (${i})`)
      }
    }
    t.same(await workersLogging(bin, (p) => p.startsWith('/orders/')), [1, 2], 'and verified by both')
    const jwks = new Set<string>()
    for (let i = 0; i < 4; i++) jwks.add((await send(`${bin.url}/jwks.json`)).body)
    t.equal(jwks.size, 1, 'one JWKS from every worker')
  })

  const primaryLines = (msg: string): Entry[] => entries(bin).filter((e) => fromPrimary(e) && e.msg === msg)
  const workerLines = (msg: string): Entry[] => entries(bin).filter((e) => typeof e.worker === 'number' && !fromPrimary(e) && e.msg === msg)

  await t.test('a changed file reaches both workers; a bad one is refused by the primary and no worker changes', async (t) => {
    const before = primaryLines('config reloaded').length
    const workersBefore = workerLines('config reloaded').length
    await writeFile(file, configYaml({ ...config, routes: [...config.routes, publicRoute('added')] }))
    const reloaded = await bin.waitForLog((e) => fromPrimary(e) && e.msg === 'config reloaded' && primaryLines('config reloaded').length > before, 30_000)
    t.same(
      (reloaded.workers as Array<{ worker: number; result: string }>).map((w) => [w.worker, w.result]),
      [
        [1, 'ok'],
        [2, 'ok'],
      ],
      "the primary logs each worker's outcome",
    )
    // Each process writes its own lines: a worker's may come after the primary's.
    t.ok(await eventually(() => workerLines('config reloaded').length === workersBefore + 2, 10_000, 20), 'each worker swapped its Runtime')
    for (let i = 0; i < 6; i++) t.equal((await send(`${bin.url}/added/${i}`)).status, 200, 'the new route')
    t.same(await workersLogging(bin, (p) => p.startsWith('/added/')), [1, 2])

    const workerRefusals = workerLines('config reload refused').length
    const workerReloads = workerLines('config reloaded').length
    await writeFile(file, configYaml({ ...config, routes_typo: 1 }))
    const refused = await bin.waitForLog((e) => fromPrimary(e) && String(e.msg).startsWith('config reload refused, no worker changed'), 30_000)
    t.match(String(refused.msg), /gateway\.yaml:\d+:\d+/, 'the refusal names the position')
    const ready = await readyz(bin)
    t.match(ready.body.last_reload_error, /gateway\.yaml:\d+:\d+: routes_typo/, '/readyz shows the refusal')
    t.equal(ready.status, 200, 'still ready: the previous config serves')
    t.equal(workerLines('config reloaded').length, workerReloads, 'no worker reloaded')
    t.equal(workerLines('config reload refused').length, workerRefusals, 'no worker was even asked')
    for (let i = 0; i < 4; i++) t.equal((await send(`${bin.url}/added/x${i}`)).status, 200, 'the previous config still serves')
    t.equal(await metricValue(bin, 'bearward_config_reloads_total{result="ok"}'), 1, 'reloads counted once, by the primary')
    t.equal(await metricValue(bin, 'bearward_config_reloads_total{result="error"}'), 1)
  })

  await t.test('SIGHUP at the primary reloads every worker', async (t) => {
    // Back to the first config (the watcher reloads it), then SIGHUP with the file unchanged.
    const before = primaryLines('config reloaded').length
    await writeFile(file, base)
    t.ok(await eventually(() => primaryLines('config reloaded').length > before, 30_000, 50), 'the good file is back')
    const workersBefore = workerLines('config reloaded').length
    bin.child.kill('SIGHUP')
    t.ok(await eventually(() => primaryLines('config reloaded').length > before + 1, 30_000, 50), 'SIGHUP with an unchanged file reloads')
    t.ok(await eventually(() => workerLines('config reloaded').length >= workersBefore + 2, 30_000, 50), 'on both workers')
    t.equal((await send(`${bin.url}/added/1`)).status, 404, 'the route is gone again')
    t.equal((await send(`${bin.url}/pub/1`)).status, 200)
  })

  await t.test('a worker killed with SIGKILL is logged and started again; totals do not go down', async (t) => {
    const served = await metricValue(bin, 'bearward_requests_total{outcome="200",route="pub"}')
    const { body } = await readyz(bin)
    const victim = body.workers.find((w) => w.worker === 1)?.pid
    t.ok(victim, 'worker 1 has a pid')
    process.kill(victim as number, 'SIGKILL')
    const exited = await bin.waitForLog((e) => fromPrimary(e) && e.worker_pid === victim && e.signal === 'SIGKILL', 30_000)
    t.match(exited, { level: 50, worker: 1, code: null, restart_in_ms: 250 }, 'logged as an error with the signal and the restart delay')
    const again = await bin.waitForLog((e) => fromPrimary(e) && e.msg === 'worker started' && e.worker === 1 && e.worker_pid !== victim, 60_000)
    t.ok(await eventually(async () => (await readyz(bin)).status === 200, 30_000, 100), 'ready again')
    t.ok(
      (await readyz(bin)).body.workers.some((w) => w.pid === again.worker_pid),
      'the new worker serves',
    )
    t.equal(await metricValue(bin, 'bearward_worker_restarts_total'), 1)
    t.equal(await metricValue(bin, 'bearward_requests_total{outcome="200",route="pub"}'), served, "the dead worker's requests still count")
    const seen = new Set<unknown>()
    for (let i = 0; i < 6; i++) {
      t.equal((await send(`${bin.url}/pub/again${i}`)).status, 200)
    }
    // Access lines are buffered for up to 100 ms (src/log.ts): wait for them.
    const restartedServed = await eventually(() => {
      for (const e of entries(bin)) if (e.msg === 'request' && String(e.path).startsWith('/pub/again')) seen.add(e.pid)
      return seen.has(again.worker_pid)
    })
    t.ok(restartedServed, 'the restarted worker takes requests')
  })

  await t.test('a worker that cannot start is retried with a growing back-off, and serves once it can', async (t) => {
    // A config with a key file; the file then goes away, so a new worker cannot build its Runtime.
    const keyFile = join(dir.dir, 'signing.jwk')
    await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
    const keyed = configYaml(mergeConfig(config, { authorization_server: { keys: [{ file: keyFile }] } }))
    const before = primaryLines('config reloaded').length
    await writeFile(file, keyed)
    t.ok(await eventually(() => primaryLines('config reloaded').length > before, 30_000, 50), 'the keyed config is in use')
    await rm(keyFile)
    const victim = (await readyz(bin)).body.workers.find((w) => w.worker === 2)?.pid
    process.kill(victim as number, 'SIGKILL')
    const exits = (): Entry[] => entries(bin).filter((e) => fromPrimary(e) && e.worker === 2 && typeof e.exits_in_a_row === 'number')
    t.ok(await eventually(() => exits().length >= 2, 120_000, 100), 'two exits in a row')
    const [killed, second] = exits()
    t.match(killed, { signal: 'SIGKILL', restart_in_ms: 250, exits_in_a_row: 1 })
    t.match(
      second,
      { code: 1, restart_in_ms: 500, exits_in_a_row: 2 },
      'the failed start is logged with its exit code; the wait doubles (backoff.test.ts: up to 30 s)',
    )
    t.ok(
      entries(bin).some((e) => fromPrimary(e) && e.msg === 'worker could not start' && /signing\.jwk/.test(String(e.reason))),
      'with the reason',
    )
    const down = await readyz(bin)
    t.equal(down.status, 503, 'not ready while a worker is missing')
    t.match(down.body.reasons, ['1 of 2 workers not ready'])
    await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
    await bin.waitForLog((e) => fromPrimary(e) && e.msg === 'worker started' && e.worker === 2 && e.worker_pid !== victim, 120_000)
    t.ok(await eventually(async () => (await readyz(bin)).status === 200, 30_000, 100), 'ready again once the worker can start')
  })

  await t.test('SIGTERM drains every worker: an in-flight request completes, then the primary exits 0', async (t) => {
    const slow = send(`${bin.url}/slow/1`)
    await slowSeen
    bin.child.kill('SIGTERM')
    await bin.waitForLog((e) => fromPrimary(e) && String(e.msg).startsWith('shutting down'), 30_000)
    t.ok(
      await eventually(async () => (await readyz(bin).catch(() => null))?.body.reasons?.includes('shutting down') === true, 10_000, 50),
      '/readyz says shutting down during the drain',
    )
    releaseSlow()
    const res = await slow
    t.equal(res.status, 200, 'the in-flight request got its answer')
    t.equal(res.body, 'answered /slow/1')
    t.equal(await bin.exited, 0, 'the primary exits 0')
    stopped = true
    const stoppedWorkers = primaryLines('worker stopped')
    t.same(stoppedWorkers.map((e) => [e.worker, e.code]).sort(), [
      [1, 0],
      [2, 0],
    ])
  })
})

t.test('more than one worker on the memory store is refused by check-config and at start', async (t) => {
  const dir = await tempConfig('listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nstore: memory\nworkers: 2\n')
  t.teardown(() => dir.cleanup())
  const check = await runCli(['check-config', '-c', dir.file])
  t.equal(check.code, 1)
  t.match(check.stderr, /gateway\.yaml:4:10: workers: more than one worker process needs a shared store/)
  t.match(check.stderr, /state would be split between processes/)
  const start = await runCli(['start', '-c', dir.file])
  t.equal(start.code, 1, 'start refuses too')
  t.match(start.stderr, /invalid config, not starting[\s\S]*state would be split/)
  t.notMatch(start.stdout, /listening/, 'nothing listened')
})
