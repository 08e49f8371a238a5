/**
 * Upstream pool targets across a reload, through the real Runtime build
 * (issue #44): the process keeps them (ProcessState.upstreamTargets), a
 * new Runtime that plans the same target gets the same one (its
 * connections and health), and a Runtime's close releases its own: the
 * checks of a route the reload removed stop, and nothing is left after the
 * last Runtime closed.
 */
import { noAudit } from '../src/audit/trail.js'
import t from 'tap'
import { createServer } from 'node:http'
import { ManualClock } from '../src/clock.js'
import { parseConfig } from '../src/config/load.js'
import type { Config } from '../src/config/validated-config.js'
import type { Shared } from '../src/context.js'
import { createLogger } from '../src/log.js'
import { Metrics } from '../src/metrics.js'
import { ProcessState, Runtime } from '../src/runtime.js'
import { MemoryStore } from '../src/store/memory.js'
import { RevocationList } from '../src/store/revocation-list.js'
import { Tracing } from '../src/telemetry/tracing.js'
import { listen } from './helpers/http.js'

/** Health checks by target, and a switch that fails them. */
const checks = new Map<string, number>()
const down = new Set<string>()
function healthUpstream(name: string): Promise<{ url: string }> {
  const server = createServer((req, res) => {
    if (req.url === '/healthz') checks.set(name, (checks.get(name) ?? 0) + 1)
    res.writeHead(down.has(name) ? 503 : 200, { 'content-length': 0 })
    res.end()
  })
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return listen(server)
}
const a = await healthUpstream('a')
const b = await healthUpstream('b')

function config(routes: string): Config {
  return parseConfig(`listen: 127.0.0.1:0\npublic_url: http://127.0.0.1:1\nroutes:\n${routes}`, '<inline>', {}, { checkFiles: false })
}
const checked = (name: string, url: string): string => `
  - name: ${name}
    match: { path: /${name} }
    public: true
    upstreams: { targets: [${url}], health: { path: /healthz, interval: 100ms, timeout: 100ms, unhealthy_after: 1, healthy_after: 1 } }
`

const clock = new ManualClock()
const store = new MemoryStore(clock)
const revocations = new RevocationList(store, clock, undefined, 3600)
await revocations.start()
const metrics = new Metrics()
const shared: Shared = { clock, log: createLogger('silent'), store, revocations, metrics, tracing: new Tracing(null), audit: noAudit }
const state = new ProcessState(shared)
t.teardown(async () => {
  await state.close()
  await revocations.stop()
  await store.close()
})

t.test('a reload keeps an unchanged target with its health, and stops the checks of a removed route', async (t) => {
  const targets = state.upstreamTargets
  const ejected = new Promise<void>((resolve) => {
    const off = targets.onChange((target, healthy) => {
      if (target.route === 'kept' && !healthy) {
        off()
        resolve()
      }
    })
  })
  down.add('a')
  const first = await Runtime.build(config(checked('kept', a.url) + checked('removed', b.url)), shared, state)
  first.commit()
  await ejected
  t.equal(metrics.upstreamHealthy.get({ route: 'kept', target: a.url }), 0, 'the first runtime ejected the failing target')
  t.equal(targets.size, 2)

  const second = await Runtime.build(config(checked('kept', a.url)), shared, state)
  second.commit()
  t.equal(targets.size, 2, 'the kept target is shared, not opened again')
  t.equal(metrics.upstreamHealthy.get({ route: 'kept', target: a.url }), 0, 'and still ejected in the new runtime')

  await first.close()
  t.equal(targets.size, 1, "the old runtime's close released the removed route's target")
  t.equal(metrics.upstreamHealthy.get({ route: 'removed', target: b.url }), undefined, 'its series is gone')
  const removedChecks = checks.get('b') ?? 0
  // The kept target is still checked: two more checks of `a` are the time in which `b` would have been checked too.
  const aChecks = checks.get('a') ?? 0
  const returned = new Promise<void>((resolve) => {
    const off = targets.onChange((target, healthy) => {
      if (target.route === 'kept' && healthy) {
        off()
        resolve()
      }
    })
  })
  down.delete('a')
  await returned
  t.ok((checks.get('a') ?? 0) > aChecks, 'the kept target is still checked by the new runtime')
  t.equal(metrics.upstreamHealthy.get({ route: 'kept', target: a.url }), 1)
  t.equal(checks.get('b') ?? 0, removedChecks, 'the removed route was not checked meanwhile')

  await second.close()
  t.equal(targets.size, 0, 'the last runtime closed: no target, no checker left')
})
