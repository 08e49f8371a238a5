/**
 * A hostile pool target against the gateway's active health checks
 * (docs/traffic.md, Upstream pools): a health answer that drips forever,
 * one that never ends, and one that redirects elsewhere. Real servers on
 * port 0, the real checker over a real undici Pool.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { Pool } from 'undici'
import { ManualClock } from '../../src/clock.js'
import { HealthChecker } from '../../src/gateway/upstream/health-check.js'
import { TargetHealth } from '../../src/gateway/upstream/target-health.js'
import { closeServer } from '../helpers/http.js'

const SETTINGS = { path: '/healthz', intervalMs: 60_000, timeoutMs: 300, unhealthyAfter: 1, healthyAfter: 1 }

/** A TargetHealth that also reports each check's outcome. */
class Watched extends TargetHealth {
  readonly outcomes: Array<{ passed: boolean; reason: string; atMs: number }> = []
  readonly #started = Date.now()
  #waiter: (() => void) | null = null

  override checkPassed(): void {
    super.checkPassed()
    this.#note(true, 'passed')
  }

  override checkFailed(reason: string): void {
    super.checkFailed(reason)
    this.#note(false, reason)
  }

  #note(passed: boolean, reason: string): void {
    this.outcomes.push({ passed, reason, atMs: Date.now() - this.#started })
    this.#waiter?.()
  }

  first(): Promise<{ passed: boolean; reason: string; atMs: number }> {
    return new Promise((resolve) => {
      const done = (): void => resolve(this.outcomes[0] as { passed: boolean; reason: string; atMs: number })
      if (this.outcomes.length > 0) done()
      else this.#waiter = done
    })
  }
}

async function listen(t: Test, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => closeServer(server))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function check(t: Test, origin: string): Promise<Watched> {
  const pool = new Pool(origin)
  t.teardown(() => pool.destroy())
  const health = new Watched(new ManualClock(), SETTINGS, () => {})
  const checker = new HealthChecker({ pool, host: new URL(origin).host, servername: undefined }, SETTINGS, health)
  t.teardown(() => checker.stop())
  checker.start()
  return health
}

t.test('a health answer that drips a byte at a time fails as a timeout, within the timeout', async (t) => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    const timer = setInterval(() => res.write('.'), 20)
    res.on('close', () => clearInterval(timer))
  })
  const health = await check(t, await listen(t, server))
  const outcome = await health.first()
  t.same([outcome.passed, outcome.reason], [false, 'timeout'], 'a 200 head does not pass while its body never ends')
  t.ok(outcome.atMs < SETTINGS.timeoutMs + 500, `settled after ${outcome.atMs} ms (timeout ${SETTINGS.timeoutMs} ms)`)
  t.equal(health.healthy, false, 'ejected (unhealthy_after: 1)')
})

t.test('an endless health answer is not read without bound', async (t) => {
  let written = 0
  const closed = new Promise<void>((resolve) => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      const chunk = Buffer.alloc(64 * 1024, 1)
      const pump = (): void => {
        while (!res.destroyed) {
          written += chunk.length
          if (!res.write(chunk)) break
        }
        if (!res.destroyed) res.once('drain', pump)
      }
      res.on('close', () => resolve())
      pump()
    })
    void listen(t, server).then(async (origin) => {
      const health = await check(t, origin)
      const outcome = await health.first()
      t.ok(outcome.atMs < SETTINGS.timeoutMs + 500, `settled after ${outcome.atMs} ms (${outcome.reason})`)
    })
  })
  await closed
  t.ok(written < 32 * 1024 * 1024, `the checker closed the connection after ${Math.round(written / 1024)} KiB were written`)
})

t.test('a health answer redirecting elsewhere is not followed', async (t) => {
  const elsewhere: string[] = []
  const other = await listen(
    t,
    createServer((req, res) => {
      elsewhere.push(req.url ?? '')
      res.end()
    }),
  )
  const target = await listen(
    t,
    createServer((_req, res) => {
      res.writeHead(302, { location: `${other}/internal` })
      res.end()
    }),
  )
  const health = await check(t, target)
  t.same((await health.first()).passed, true, '3xx passes, as documented')
  t.same(elsewhere, [], 'nothing was sent where the redirect points')
})
