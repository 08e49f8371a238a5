/**
 * Upstream pools (issue #44, docs/traffic.md "Upstream pools"): balancing,
 * passive ejection and return, active checks, retries on connect failure
 * only, the health gauge, state across a reload, and host names resolved
 * on their TTL. Real upstreams on 127.0.0.1 port 0; time that matters is a
 * ManualClock; what happens asynchronously is awaited as an event.
 */
import t from 'tap'
import { once } from 'node:events'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { createServer as createH2cServer } from 'node:http2'
import { createServer as createHttpsServer } from 'node:https'
import type { TLSSocket } from 'node:tls'
import { createServer as createNetServer } from 'node:net'
import { ManualClock } from '../../src/clock.js'
import { parseConfig } from '../../src/config/load.js'
import type { RouteConfig } from '../../src/config/validated-config.js'
import { Metrics } from '../../src/metrics.js'
import type { Target } from '../../src/gateway/upstream/targets.js'
import { UpstreamTargets } from '../../src/gateway/upstream/targets.js'
import type { Balancer } from '../../src/gateway/upstream/balancer.js'
import { gatewayConfig, proxyFor, selfSignedCert, send, startProxy } from './proxy-helpers.js'
import { startDnsServer, type DnsRecord } from '../helpers/dns-server.js'
import { closeServer } from '../helpers/http.js'

/** A route as the loader makes it from `upstream` / `upstreams` YAML (the line(s) after `public: true`). */
function poolRoute(upstream: string, name = 'pool'): RouteConfig {
  const config = parseConfig(
    `public_url: http://gateway.test
routes:
  - name: ${name}
    match: { path: / }
    public: true
    timeouts: { connect: 2s, headers: 5s, idle: 5s }
${upstream}`,
    '<upstream-pools>',
    {},
  )
  return config.routes[0] as RouteConfig
}

interface TestTarget {
  readonly name: string
  readonly url: string
  readonly port: number
  /** Requests by path, in order. */
  readonly seen: Array<{ method: string; url: string; host: string | undefined }>
  server: Server
  /** Stop taking connections: new ones are refused; requests in flight finish. */
  kill(): Promise<void>
  /** Listen again on the same port. */
  revive(): Promise<void>
}

/**
 * An upstream naming itself. `connectionClose`: every answer ends its
 * connection, so a killed target refuses the next request instead of racing
 * a keep-alive reuse (a request written to a socket that is closing has
 * been sent, and is never retried: see the reset tests).
 */
async function startTarget(
  name: string,
  opts: { connectionClose?: boolean; handler?: (req: IncomingMessage, res: ServerResponse) => boolean; host?: string; port?: number } = {},
): Promise<TestTarget> {
  const seen: TestTarget['seen'] = []
  const make = (): Server =>
    createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', host: req.headers.host })
        if (opts.handler?.(req, res) === true) return
        const body = JSON.stringify({ target: name })
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(opts.connectionClose ? { connection: 'close' } : {}),
        })
        res.end(body)
      })
    })
  const host = opts.host ?? '127.0.0.1'
  let server = make()
  server.listen(opts.port ?? 0, host)
  await once(server, 'listening')
  const port = (server.address() as { port: number }).port
  const target: TestTarget = {
    name,
    url: `http://${host}:${port}`,
    port,
    seen,
    server,
    kill: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeIdleConnections()
      }),
    revive: async () => {
      server = make()
      target.server = server
      server.listen(port, host)
      await once(server, 'listening')
    },
  }
  return target
}

async function closedPort(): Promise<number> {
  const s = createNetServer()
  s.listen(0, '127.0.0.1')
  await once(s, 'listening')
  const { port } = s.address() as { port: number }
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

function stop(target: TestTarget): Promise<void> {
  if (!target.server.listening) return Promise.resolve()
  return closeServer(target.server)
}

/** The next health change of the target dialled at `label`. */
function nextChange(targets: UpstreamTargets, label: string): Promise<boolean> {
  return new Promise((resolve) => {
    const off = targets.onChange((target: Target, healthy: boolean) => {
      if (target.label !== label) return
      off()
      resolve(healthy)
    })
  })
}

function byTarget(replies: ReadonlyArray<{ status: number; text: string }>): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const r of replies) {
    const name = r.status === 200 ? (JSON.parse(r.text) as { target: string }).target : `status ${r.status}`
    counts[name] = (counts[name] ?? 0) + 1
  }
  return counts
}

/** The balancer of a pooled route's plan. */
function balancerOf(gw: { upstreamOf: (route: RouteConfig) => { balancer: Balancer | null } }, route: RouteConfig): Balancer {
  const balancer = gw.upstreamOf(route).balancer
  if (balancer === null) throw new Error('not a pooled route')
  return balancer
}

t.test('round robin spreads requests evenly over the targets', async (t) => {
  const targets = await Promise.all(['a', 'b', 'c'].map((n) => startTarget(n)))
  const route = poolRoute(`    upstream: [${targets.map((x) => x.url).join(', ')}]\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), new UpstreamTargets({ clock: new ManualClock() }))
  t.teardown(async () => {
    await gw.close()
    await Promise.all(targets.map(stop))
  })
  const replies = []
  for (let i = 0; i < 30; i++) replies.push(await send(gw.url, { path: `/r${i}` }))
  t.same(byTarget(replies), { a: 10, b: 10, c: 10 })
  t.same(
    targets.map((x) => x.seen.length),
    [10, 10, 10],
  )
})

t.test('least_request sends to the idle target while another holds a request', async (t) => {
  const held: ServerResponse[] = []
  let onHold: (() => void) | null = null
  const slow = await startTarget('slow', {
    handler: (_req, res) => {
      held.push(res)
      onHold?.()
      return true
    },
  })
  const fast = await startTarget('fast')
  const route = poolRoute(`    upstreams: { targets: [${slow.url}, ${fast.url}], balance: least_request }\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), new UpstreamTargets({ clock: new ManualClock() }))
  t.teardown(async () => {
    for (const res of held) res.end()
    await gw.close()
    await Promise.all([stop(slow), stop(fast)])
  })
  // Requests one at a time until the slow target holds one (the first tie may go either way).
  let first: Promise<{ status: number; text: string }> | null = null
  for (let i = 0; i < 2 && held.length === 0; i++) {
    const holding = new Promise<void>((resolve) => (onHold = resolve))
    const reply = send(gw.url, { path: '/first' })
    const done = await Promise.race([holding.then(() => 'held' as const), reply.then(() => 'answered' as const)])
    if (done === 'held') first = reply
  }
  t.equal(held.length, 1, 'the slow target holds one request')
  const replies = []
  for (let i = 0; i < 10; i++) replies.push(await send(gw.url, { path: `/n${i}` }))
  t.same(byTarget(replies), { fast: 10 }, 'every request meanwhile went to the idle target')
  t.equal(slow.seen.length, 1)
  ;(held[0] as ServerResponse).end('{"target":"slow"}')
  t.equal((await first)?.status, 200, 'the held request completes')
})

t.test('a target killed during a GET load: no request lost, ejection within the bound, return after its rest', async (t) => {
  const clock = new ManualClock()
  const metrics = new Metrics()
  const registry = new UpstreamTargets({ clock, metrics })
  const pool = await Promise.all(['a', 'b', 'c'].map((n) => startTarget(n, { connectionClose: true })))
  const [, , c] = pool as [TestTarget, TestTarget, TestTarget]
  const route = poolRoute(`    upstreams: { targets: [${pool.map((x) => x.url).join(', ')}], health: { unhealthy_after: 3, interval: 5s } }\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await Promise.all(pool.map(stop))
  })
  const labels = { route: 'pool', target: c.url }
  const ejected = nextChange(registry, c.url)
  const total = 200
  const concurrency = 10
  const statuses: number[] = []
  let next = 0
  let killed: Promise<void> | null = null
  const worker = async (): Promise<void> => {
    while (next < total) {
      const i = next++
      if (i === 60) killed = c.kill()
      statuses.push((await send(gw.url, { path: `/load/${i}` })).status)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  await killed
  t.equal(statuses.length, total)
  t.equal(statuses.filter((s) => s === 200).length, total, 'every one of the 200 GETs succeeded')
  t.equal(await ejected, false, 'the killed target was ejected')
  t.equal(metrics.upstreamHealthy.get(labels), 0, 'bearward_upstream_healthy says so')
  const failures = metrics.upstreamConnectFailures.get(labels)
  t.ok(failures >= 3 && failures <= 3 + concurrency - 1, `ejected after 3 connect failures, plus at most the attempts already under way (${failures})`)
  const seenBefore = pool.map((x) => x.seen.length)
  t.equal(
    seenBefore.reduce((a, b) => a + b, 0),
    total,
    'each GET reached exactly one target',
  )

  const after = []
  for (let i = 0; i < 30; i++) after.push(await send(gw.url, { path: `/after/${i}` }))
  t.same(byTarget(after), { a: 15, b: 15 }, 'while ejected, the others share its requests')
  t.equal(metrics.upstreamConnectFailures.get(labels), failures, 'and the ejected target is not tried')

  await c.revive()
  clock.advance(5000 - 1)
  for (let i = 0; i < 6; i++) t.equal((await send(gw.url, { path: `/rest/${i}` })).status, 200)
  t.equal(c.seen.length, seenBefore[2], 'not tried before its 5 s rest is over (clock: 4999 ms)')
  const returned = nextChange(registry, c.url)
  clock.advance(1)
  const back = []
  for (let i = 0; i < 6; i++) back.push(await send(gw.url, { path: `/back/${i}` }))
  t.equal(await returned, true, 'tried again at 5000 ms, answered, and healthy again')
  t.equal(metrics.upstreamHealthy.get(labels), 1)
  t.ok((byTarget(back).c ?? 0) >= 1, 'it takes requests again')
  t.match(metrics.render(), /bearward_upstream_healthy\{route="pool",target="http:\/\/127\.0\.0\.1:\d+"\} 1/)
})

t.test('connect failure: idempotent requests go to another target, a POST or a streamed body is not sent again', async (t) => {
  const clock = new ManualClock()
  const metrics = new Metrics()
  const registry = new UpstreamTargets({ clock, metrics })
  const dead = `http://127.0.0.1:${await closedPort()}`
  const live = await startTarget('live')
  // Never ejected here: every other request meets the refused target first.
  const route = poolRoute(`    upstreams: { targets: [${dead}, ${live.url}], health: { unhealthy_after: 100 } }\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await stop(live)
  })
  const failures = (): number => metrics.upstreamConnectFailures.get({ route: 'pool', target: dead })
  // Requests go in pairs: round robin sends the first of each pair to the refused target.
  const pair = async (method: string, path: string, body?: string): Promise<number[]> => [
    (await send(gw.url, { method, path: `${path}/1`, ...(body === undefined ? {} : { body }) })).status,
    (await send(gw.url, { method, path: `${path}/2`, ...(body === undefined ? {} : { body }) })).status,
  ]
  t.same(await pair('POST', '/pay', 'amount=1'), [502, 200], 'the POST that met the refused target is a 502, not sent again')
  t.same(
    live.seen.map((s) => `${s.method} ${s.url}`),
    ['POST /pay/2'],
    'the live target saw only the POST sent to it',
  )
  for (const method of ['GET', 'HEAD', 'OPTIONS', 'DELETE', 'PUT']) {
    t.same(await pair(method, `/${method.toLowerCase()}`), [200, 200], `${method}: both answered, the first by the other target`)
  }
  t.equal(failures(), 6, 'the POST and one of each idempotent pair met the refused target')
  t.same(
    live.seen.slice(1).map((s) => `${s.method} ${s.url}`),
    [
      'GET /get/1',
      'GET /get/2',
      'HEAD /head/1',
      'HEAD /head/2',
      'OPTIONS /options/1',
      'OPTIONS /options/2',
      'DELETE /delete/1',
      'DELETE /delete/2',
      'PUT /put/1',
      'PUT /put/2',
    ],
    'each sent once to the live target',
  )
  t.same(await pair('PUT', '/upload', 'a streamed body'), [502, 200], 'a PUT whose body streams from the client is not sent again')
  t.equal(failures(), 7)
  t.equal(live.seen.filter((s) => s.url.startsWith('/upload')).length, 1)
})

t.test('a target that resets after the request was written: nothing is sent again, whatever the method', async (t) => {
  const resetting = await startTarget('resetting', {
    handler: (req) => {
      req.socket.destroy()
      return true
    },
  })
  const other = await startTarget('other')
  const route = poolRoute(`    upstream: [${resetting.url}, ${other.url}]\n`)
  const registry = new UpstreamTargets({ clock: new ManualClock() })
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await Promise.all([stop(resetting), stop(other)])
  })
  const get = await send(gw.url, { path: '/once' })
  t.equal(get.status, 502, 'the GET the upstream received and reset is a 502')
  t.equal(resetting.seen.length, 1, 'the upstream saw it once')
  t.equal(other.seen.length, 0, 'and no other target saw it')
  await send(gw.url, { path: '/turn' })
  const post = await send(gw.url, { method: 'POST', path: '/pay', body: 'amount=1' })
  t.equal(post.status, 502)
  t.same(
    resetting.seen.map((s) => `${s.method} ${s.url}`),
    ['GET /once', 'POST /pay'],
    'the POST reached the upstream once',
  )
  t.same(
    other.seen.map((s) => s.url),
    ['/turn'],
  )
})

t.test('active checks mark a target down after unhealthy_after failures and up after healthy_after passes', async (t) => {
  const metrics = new Metrics()
  const registry = new UpstreamTargets({ clock: new ManualClock(), metrics })
  let down = false
  const checks: number[] = []
  const flaky = await startTarget('flaky', {
    handler: (req, res) => {
      if (req.url !== '/healthz') return false
      const status = down ? 503 : 200
      checks.push(status)
      res.writeHead(status, { 'content-length': 0 })
      res.end()
      return true
    },
  })
  const steady = await startTarget('steady')
  const route = poolRoute(`    upstreams:
      targets: [${flaky.url}, ${steady.url}]
      health: { path: /healthz, interval: 150ms, timeout: 150ms, unhealthy_after: 2, healthy_after: 3 }
`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await Promise.all([stop(flaky), stop(steady)])
  })
  const labels = { route: 'pool', target: flaky.url }
  t.equal(metrics.upstreamHealthy.get(labels), 1, 'a target starts healthy')
  const ejected = nextChange(registry, flaky.url)
  down = true
  t.equal(await ejected, false)
  t.equal(checks.filter((s) => s === 503).length, 2, 'ejected by its second failed check')
  t.equal(metrics.upstreamHealthy.get(labels), 0)
  const replies = []
  for (let i = 0; i < 6; i++) replies.push(await send(gw.url, { path: `/d${i}` }))
  t.same(byTarget(replies), { steady: 6 }, 'an ejected target gets no requests')
  const returned = nextChange(registry, flaky.url)
  const failedBefore = checks.length
  down = false
  t.equal(await returned, true)
  t.equal(checks.slice(failedBefore).filter((s) => s === 200).length, 3, 'back after its third passing check')
  t.equal(metrics.upstreamHealthy.get(labels), 1)
  const again = []
  for (let i = 0; i < 6; i++) again.push(await send(gw.url, { path: `/u${i}` }))
  t.same(byTarget(again), { flaky: 3, steady: 3 })
})

t.test('every target ejected: requests are tried anyway (panic mode)', async (t) => {
  const registry = new UpstreamTargets({ clock: new ManualClock() })
  let healthy = false
  const only = await startTarget('only', {
    handler: (req, res) => {
      if (req.url !== '/healthz') return false
      res.writeHead(healthy ? 200 : 500, { 'content-length': 0 })
      res.end()
      return true
    },
  })
  const route = poolRoute(`    upstreams: { targets: [${only.url}], health: { path: /healthz, interval: 20ms, timeout: 20ms, unhealthy_after: 1 } }\n`)
  const ejected = nextChange(registry, only.url)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    healthy = true
    await gw.close()
    await stop(only)
  })
  t.equal(await ejected, false)
  const reply = await send(gw.url, { path: '/anyway' })
  t.equal(reply.status, 200, 'the ejected target still serves when it is all there is')
})

t.test('a reload keeps unchanged targets and their health; a removed route stops its checks', async (t) => {
  const metrics = new Metrics()
  const registry = new UpstreamTargets({ clock: new ManualClock(), metrics })
  const dead = `http://127.0.0.1:${await closedPort()}`
  const live = await startTarget('live')
  const checked = await startTarget('checked')
  const kept = poolRoute(`    upstream: [${dead}, ${live.url}]\n`, 'kept')
  const removed = poolRoute(`    upstreams: { targets: [${checked.url}], health: { path: /healthz, interval: 20ms, timeout: 20ms } }\n`, 'removed')
  const before = await startProxy([kept, removed], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await before.close()
    await Promise.all([stop(live), stop(checked)])
  })
  // Three GETs meet the refused target (each retried on the live one): it is ejected.
  const ejected = nextChange(registry, dead)
  for (let i = 0; i < 6; i++) t.equal((await send(before.url, { path: `/x${i}` })).status, 200)
  t.equal(await ejected, false)
  // The reload: the same `kept` route, `removed` gone.
  const reloaded = poolRoute(`    upstream: [${dead}, ${live.url}]\n`, 'kept')
  const after = proxyFor([reloaded], gatewayConfig(), { targets: registry })
  const keptTargets = balancerOf(after, reloaded).targets()
  const deadTarget = keptTargets.find((x) => x.label === dead)
  t.equal(deadTarget?.health.healthy, false, 'the new runtime finds the target still ejected')
  t.equal(metrics.upstreamHealthy.get({ route: 'kept', target: dead }), 0)
  t.equal(registry.size, 3, 'before the old runtime closes: kept (2 targets) and removed (1)')
  const removedTarget = balancerOf(before, removed).targets()[0] as Target
  t.equal(removedTarget.checker?.active, true, 'the removed route was checked')
  await before.close()
  t.equal(removedTarget.checker?.active, false, 'the removed route checks no more: no timer, no check in flight')
  t.equal(registry.size, 2, 'only the kept targets are held')
  t.equal(metrics.upstreamHealthy.get({ route: 'removed', target: checked.url }), undefined, 'its gauge series is gone')
  await after.proxy.close()
  t.equal(registry.size, 0, 'the last runtime closed: nothing held')
})

t.test('a host name target: each address is a target, re-resolved on its TTL, the last answer kept on failure', async (t) => {
  const records = new Map<string, DnsRecord>([['api.pool.test', { addresses: ['127.0.0.1'], ttl: 30 }]])
  const dns = await startDnsServer(records)
  const one = await startTarget('one')
  const two = await startTarget('two', { host: '127.0.0.2', port: one.port })
  const clock = new ManualClock()
  const metrics = new Metrics()
  const registry = new UpstreamTargets({ clock, metrics })
  const route = poolRoute(`    upstreams: { targets: ["http://api.pool.test:${one.port}/base"], dns: { servers: ["${dns.server}"] } }\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await Promise.all([stop(one), stop(two), dns.close()])
  })
  const host = `api.pool.test:${one.port}`
  const r1 = await send(gw.url, { path: '/a' })
  t.equal(r1.status, 200, 'the first request waited for the first answer')
  t.same(one.seen.at(-1), { method: 'GET', url: '/base/a', host }, 'dialled by address, named by its host name')
  t.equal(metrics.upstreamHealthy.get({ route: 'pool', target: `http://127.0.0.1:${one.port}` }), 1, 'the address is the gauge target')
  records.set('api.pool.test', { addresses: ['127.0.0.2'], ttl: 30 })
  const queries = dns.queries.get('api.pool.test')
  t.equal((await send(gw.url, { path: '/b' })).status, 200)
  t.equal(one.seen.length, 2, 'within the TTL, the first answer holds')
  t.equal(dns.queries.get('api.pool.test'), queries, 'and nothing is asked again')
  clock.advance(30_000)
  t.equal((await send(gw.url, { path: '/c' })).status, 200)
  await balancerOf(gw, route).resolving()
  t.ok((dns.queries.get('api.pool.test') ?? 0) > (queries ?? 0), 'the TTL ran out: asked again')
  t.equal((await send(gw.url, { path: '/d' })).status, 200)
  t.same(two.seen.at(-1), { method: 'GET', url: '/base/d', host }, 'the new address serves')
  records.set('api.pool.test', { addresses: [], ttl: 30, fail: true })
  clock.advance(30_000)
  await send(gw.url, { path: '/e' })
  await balancerOf(gw, route).resolving()
  const r = await send(gw.url, { path: '/f' })
  t.equal(r.status, 200, 'a failed resolution keeps the last addresses')
  t.equal(two.seen.at(-1)?.url, '/base/f')
})

t.test('HTTP/2 targets: an h2c pool is balanced over HTTP/2', async (t) => {
  const versions: string[] = []
  const servers = await Promise.all(
    ['x', 'y'].map(async (name) => {
      const server = createH2cServer((req, res) => {
        versions.push(`${name} ${req.httpVersion}`)
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ target: name }))
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      return server
    }),
  )
  const urls = servers.map((s) => `h2c://127.0.0.1:${(s.address() as { port: number }).port}`)
  const route = poolRoute(`    upstream: [${urls.join(', ')}]\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), new UpstreamTargets({ clock: new ManualClock() }))
  t.teardown(async () => {
    await gw.close()
    for (const s of servers) s.close()
  })
  const replies = []
  for (let i = 0; i < 4; i++) replies.push(await send(gw.url, { path: `/h${i}` }))
  t.same(byTarget(replies), { x: 2, y: 2 })
  t.same(versions.sort(), ['x 2.0', 'x 2.0', 'y 2.0', 'y 2.0'])
})

t.test('a DNS answer pointing at the metadata address is not dialled, and a long answer is bounded', async (t) => {
  const records = new Map<string, DnsRecord>([
    ['mixed.pool.test', { addresses: ['169.254.169.254', '127.0.0.1'], ttl: 30 }],
    ['meta.pool.test', { addresses: ['169.254.169.254'], ttl: 30 }],
    ['many.pool.test', { addresses: Array.from({ length: 40 }, (_, i) => `127.0.1.${i + 1}`), ttl: 30 }],
  ])
  const dns = await startDnsServer(records)
  const one = await startTarget('one')
  const clock = new ManualClock()
  const registry = new UpstreamTargets({ clock })
  const route = (name: string): RouteConfig =>
    poolRoute(`    upstreams: { targets: ["http://${name}.pool.test:${one.port}"], dns: { servers: ["${dns.server}"] } }\n`, name)
  const mixed = route('mixed')
  const meta = route('meta')
  const many = route('many')
  const gw = await startProxy(
    [mixed, meta, many],
    gatewayConfig(),
    (req) => ({ route: req.url?.startsWith('/meta') ? meta : req.url?.startsWith('/many') ? many : mixed }),
    registry,
  )
  t.teardown(async () => {
    await gw.close()
    await Promise.all([stop(one), dns.close()])
  })
  t.equal((await send(gw.url, { path: '/mixed' })).status, 200)
  t.same(
    balancerOf(gw, mixed)
      .targets()
      .map((x) => x.label),
    [`http://127.0.0.1:${one.port}`],
    'the link-local address was dropped from the answer',
  )
  const refused = await send(gw.url, { path: '/meta' })
  t.equal(refused.status, 502, 'a name that resolves to the metadata address only has no target: 502')
  t.same(balancerOf(gw, meta).targets(), [])
  records.set('mixed.pool.test', { addresses: ['169.254.169.254'], ttl: 30 })
  clock.advance(30_000)
  await send(gw.url, { path: '/mixed' })
  await balancerOf(gw, mixed).resolving()
  t.equal((await send(gw.url, { path: '/mixed' })).status, 200, 'an answer turned to the metadata address keeps the last good one')
  t.equal(one.seen.length, 3, 'every answered request reached the real target')
  await send(gw.url, { path: '/many' }).catch(() => undefined)
  t.equal(balancerOf(gw, many).targets().length, 16, 'forty addresses: sixteen targets')
})

t.test('5xx answers do not eject a target: only connections that fail count', async (t) => {
  const metrics = new Metrics()
  const registry = new UpstreamTargets({ clock: new ManualClock(), metrics })
  const failing = await startTarget('failing', {
    handler: (_req, res) => {
      res.writeHead(500, { 'content-length': 0 })
      res.end()
      return true
    },
  })
  const route = poolRoute(`    upstreams: { targets: [${failing.url}], health: { unhealthy_after: 1 } }\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await stop(failing)
  })
  for (let i = 0; i < 5; i++) t.equal((await send(gw.url, { path: `/e${i}` })).status, 500)
  t.equal(metrics.upstreamHealthy.get({ route: 'pool', target: failing.url }), 1, 'a client that makes the upstream fail cannot eject it')
  t.equal(failing.seen.length, 5, 'and nothing was sent twice')
})

t.test('an active check carries no credential or identity and names the target host', async (t) => {
  const registry = new UpstreamTargets({ clock: new ManualClock() })
  const headers: Array<IncomingMessage['headers']> = []
  let checked: (() => void) | null = null
  const target = await startTarget('target', {
    handler: (req, res) => {
      if (req.url !== '/status') return false
      headers.push(req.headers)
      checked?.()
      res.writeHead(204)
      res.end()
      return true
    },
  })
  const first = new Promise<void>((resolve) => (checked = resolve))
  const route = poolRoute(`    upstreams: { targets: [${target.url}/base], health: { path: /status, interval: 1s, timeout: 1s } }\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await stop(target)
  })
  await first
  const seen = headers[0] ?? {}
  t.equal(seen.host, new URL(target.url).host)
  t.same(
    Object.keys(seen).filter((h) => h === 'authorization' || h === 'cookie' || h.startsWith('x-auth') || h.startsWith('x-forwarded')),
    [],
    'no credential, identity or forwarding header',
  )
  t.equal(target.seen[0]?.url, '/status', 'the path is the configured one, not under the route base path')
})

t.test('an https host name target: dialled by address, with the name as SNI and Host, its certificate checked against it', async (t) => {
  const tls = await selfSignedCert()
  const servernames: Array<string | false | null> = []
  const hosts: Array<string | undefined> = []
  const server = createHttpsServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    hosts.push(req.headers.host)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"target":"tls"}')
  })
  server.on('secureConnection', (socket: TLSSocket) => servernames.push(socket.servername))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as { port: number }).port
  // The test's resolver answers `localhost` with 127.0.0.1: the name is resolved by DNS, not /etc/hosts.
  const dns = await startDnsServer(new Map([['localhost', { addresses: ['127.0.0.1'], ttl: 30 }]]))
  const registry = new UpstreamTargets({ clock: new ManualClock() })
  const route = poolRoute(`    upstreams: { targets: ["https://localhost:${port}"], dns: { servers: ["${dns.server}"] } }\n    upstream_ca: ${tls.certFile}\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    void closeServer(server)
    await dns.close()
  })
  const reply = await send(gw.url, { path: '/tls' })
  t.equal(reply.status, 200)
  t.same(
    balancerOf(gw, route)
      .targets()
      .map((x) => x.label),
    [`https://127.0.0.1:${port}`],
    'the target is the address',
  )
  t.same(servernames, ['localhost'], 'SNI names the configured host')
  t.same(hosts, [`localhost:${port}`], 'and so does Host')
  t.equal(dns.queries.get('localhost'), 1)
})

t.test('a name of /etc/hosts (localhost) is found through the system lookup when the DNS does not know it', async (t) => {
  const local = await startTarget('local')
  const registry = new UpstreamTargets({ clock: new ManualClock() })
  const route = poolRoute(`    upstream: ["http://localhost:${local.port}"]\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await stop(local)
  })
  // localhost may also be ::1, where nothing listens: a GET that meets it is sent to 127.0.0.1.
  const replies = []
  for (let i = 0; i < 4; i++) replies.push(await send(gw.url, { path: `/l${i}` }))
  t.same(byTarget(replies), { local: 4 })
  t.ok(
    balancerOf(gw, route)
      .targets()
      .some((x) => x.label === `http://127.0.0.1:${local.port}`),
    'dialled by address',
  )
  t.ok(
    local.seen.every((s) => s.host === `localhost:${local.port}`),
    'named localhost',
  )
})

/** Answer every WebSocket handshake on `target` with 101, recording it (the tunnel is closed at once). */
function acceptUpgrades(target: TestTarget): SeenUpgradeHost[] {
  const seen: SeenUpgradeHost[] = []
  target.server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    seen.push({ url: req.url ?? '', host: req.headers.host })
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key'] ?? ''}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64')
    socket.on('error', () => {})
    socket.end(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`)
  })
  return seen
}

interface SeenUpgradeHost {
  url: string
  host: string | undefined
}

/** A WebSocket handshake through the gateway: 101 or the status it was refused with. */
function handshake(base: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, {
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64') },
    })
    req.once('upgrade', (res: IncomingMessage, socket: Duplex) => {
      socket.destroy()
      resolve(res.statusCode ?? 0)
    })
    req.once('response', (res: IncomingMessage) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.once('error', reject)
    req.end()
  })
}

t.test('WebSocket upgrades on a pooled route are balanced; a target that refuses them is ejected', async (t) => {
  const clock = new ManualClock()
  const metrics = new Metrics()
  const registry = new UpstreamTargets({ clock, metrics })
  const pool = await Promise.all(['a', 'b'].map((n) => startTarget(n)))
  const [a, b] = pool as [TestTarget, TestTarget]
  const seenA = acceptUpgrades(a)
  const seenB = acceptUpgrades(b)
  const route = poolRoute(`    upstreams: { targets: [${pool.map((x) => x.url).join(', ')}], health: { unhealthy_after: 2, interval: 5s } }\n`)
  const gw = await startProxy([route], gatewayConfig(), () => ({}), registry)
  t.teardown(async () => {
    await gw.close()
    await Promise.all(pool.map(stop))
  })
  const statuses = []
  for (let i = 0; i < 6; i++) statuses.push(await handshake(gw.url, `/ws/${i}`))
  t.same(statuses, [101, 101, 101, 101, 101, 101])
  t.same([seenA.length, seenB.length], [3, 3], 'round robin, as requests are')
  t.same(
    [...seenA, ...seenB].map((s) => s.host),
    [a.url.slice(7), a.url.slice(7), a.url.slice(7), b.url.slice(7), b.url.slice(7), b.url.slice(7)],
    'each handshake names the target it went to in Host',
  )

  const ejected = nextChange(registry, b.url)
  await stop(b)
  const during = []
  for (let i = 0; i < 4; i++) during.push(await handshake(gw.url, `/down/${i}`))
  t.same(during.filter((s) => s === 502).length, 2, 'two handshakes met the dead target: 502, not retried (a 101 cannot be taken back)')
  t.equal(await ejected, false, 'after unhealthy_after connect failures the target is ejected')
  t.equal(metrics.upstreamConnectFailures.get({ route: 'pool', target: b.url }), 2, 'its failed handshakes are counted')
  const after = []
  for (let i = 0; i < 4; i++) after.push(await handshake(gw.url, `/after/${i}`))
  t.same(after, [101, 101, 101, 101], 'while it is ejected every handshake goes to the live target')
})
