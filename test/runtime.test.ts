/**
 * Building a Runtime is all or nothing (issue 16, item 3): a build that
 * fails late changes nothing the running Runtime uses (JWKS clients keep
 * their settings, no client is added or fetches) and closes what it opened
 * (introspection pools); a good build changes nothing live until commit().
 */
import { noAudit } from '../src/audit/trail.js'
import t from 'tap'
import { createServer } from 'node:http'
import { keysNeedingRestart } from '../src/server/reload-rules.js'
import { ManualClock } from '../src/clock.js'
import { parseConfig } from '../src/config/load.js'
import type { Config } from '../src/config/validated-config.js'
import type { Shared } from '../src/context.js'
import { RemoteIntrospector } from '../src/gateway/introspection-client.js'
import { createLogger } from '../src/log.js'
import { Metrics } from '../src/metrics.js'
import { ProcessState, Runtime } from '../src/runtime.js'
import { MemoryStore } from '../src/store/memory.js'
import { RevocationList } from '../src/store/revocation-list.js'
import { Tracing } from '../src/telemetry/tracing.js'
import { listen, eventually } from './helpers/http.js'

/** A JWKS endpoint that counts fetches per path. */
const hits = new Map<string, number>()
const jwksServer = createServer((req, res) => {
  hits.set(req.url ?? '', (hits.get(req.url ?? '') ?? 0) + 1)
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end('{"keys":[]}')
})
const { url: base } = await listen(jwksServer)
t.teardown(() => new Promise<void>((resolve) => jwksServer.close(() => resolve())))

function fetched(path: string, ms = 5000): Promise<boolean> {
  return eventually(() => (hits.get(path) ?? 0) > 0, ms, 10)
}

const corp = (cooldown: string): string => `
  - id: corp
    issuer: https://corp.example
    jwks_uri: ${base}/corp.json
    jwks: { cooldown: ${cooldown} }
`
const other = `
  - id: other
    issuer: https://other.example
    jwks_uri: ${base}/other.json
    introspection: { endpoint: ${base}/introspect, client_id: gw, client_secret: s3cret }
`
function config(issuers: string, extraRoutes = ''): Config {
  return parseConfig(
    `
listen: 127.0.0.1:0
public_url: http://127.0.0.1:1
issuers:
${issuers}
routes:
  - name: orders
    match: { path: /orders }
    upstream: http://127.0.0.1:1
    issuers: [corp]
${extraRoutes}
`,
    '<inline>',
    {},
    { checkFiles: false },
  )
}
/** A route that uses `other` and whose CA file cannot be read: the upstream proxy, built last, throws. */
const lateFailure = `
  - name: other
    match: { path: /other }
    upstream: https://127.0.0.1:1
    upstream_ca: /nonexistent/ca.pem
    token: any
    issuers: [other]
`

const clock = new ManualClock()
const log = createLogger('silent')
const store = new MemoryStore(clock)
const revocations = new RevocationList(store, clock, undefined, 3600)
await revocations.start()
const shared: Shared = { clock, log, store, revocations, metrics: new Metrics(), tracing: new Tracing(null), audit: noAudit }
const state = new ProcessState(shared)
t.teardown(async () => {
  await state.close()
  await revocations.stop()
  await store.close()
})
const corpIssuer = (c: Config) => ({ ...c.issuers.find((i) => i.id === 'corp')!, jwksUri: `${base}/corp.json` })
const otherIssuer = (c: Config) => ({ ...c.issuers.find((i) => i.id === 'other')!, jwksUri: `${base}/other.json` })

const first = config(corp('30s'))
const running = await Runtime.build(first, shared, state)
t.teardown(() => running.close())
running.commit()

t.test('a build that fails late changes nothing live and closes what it opened', async (t) => {
  t.ok(await fetched('/corp.json'), 'the running config fetched its issuer keys')
  const live = state.jwks.peek(corpIssuer(first))
  t.equal(live?.settings.cooldownSec, 30)

  let introspectorsClosed = 0
  const close = RemoteIntrospector.prototype.close
  RemoteIntrospector.prototype.close = function (this: RemoteIntrospector) {
    introspectorsClosed++
    return close.call(this)
  }
  t.teardown(() => {
    RemoteIntrospector.prototype.close = close
  })

  const bad = config(corp('1s') + other, lateFailure)
  await t.rejects(Runtime.build(bad, shared, state), /cannot read upstream_ca/, 'the build fails in the upstream proxy, after the issuers were built')
  t.equal(state.jwks.peek(corpIssuer(bad)), live, 'the live client is the same object')
  t.equal(live?.settings.cooldownSec, 30, 'and keeps the settings of the running config')
  t.equal(state.jwks.peek(otherIssuer(bad)), undefined, 'no client was added for the new issuer')
  t.equal(introspectorsClosed, 1, "the refused build's introspection pool was closed")
  // A fetch the refused build would have started goes out at once; the next round trip is after it.
  await fetch(`${base}/probe`)
  t.equal(hits.get('/other.json') ?? 0, 0, "the new issuer's keys were never fetched")
})

t.test('a good build changes nothing live until commit(); discard() drops what it staged', async (t) => {
  const good = config(corp('5s') + other, lateFailure.replace('    upstream_ca: /nonexistent/ca.pem\n', ''))
  const next = await Runtime.build(good, shared, state)
  const live = state.jwks.peek(corpIssuer(good))
  t.equal(live?.settings.cooldownSec, 30, 'built, not committed: the running Runtime sees its own settings')
  t.equal(state.jwks.peek(otherIssuer(good)), undefined)
  await next.discard()
  t.equal(live?.settings.cooldownSec, 30, 'discarded: still unchanged')
  t.equal(state.jwks.peek(otherIssuer(good)), undefined)

  const applied = await Runtime.build(good, shared, state)
  t.teardown(() => applied.close())
  applied.commit()
  t.equal(live?.settings.cooldownSec, 5, 'committed: the new settings apply')
  t.ok(state.jwks.peek(otherIssuer(good)), 'and the new issuer has its client')
  t.ok(await fetched('/other.json'), 'which fetches its keys')
})

t.test('keys a reload cannot apply are named', async (t) => {
  const a = parseConfig('listen: 127.0.0.1:8080\nadmin_listen: 127.0.0.1:9090\nstore: memory\n', '<inline>', {}, { checkFiles: false })
  t.same(keysNeedingRestart(a, a), [])
  const b = parseConfig(
    'listen: 127.0.0.1:8081\nadmin_listen: 127.0.0.1:9091\nstore: redis://127.0.0.1:6379/0\ntls: { cert_file: c.pem, key_file: k.pem }\ngateway: { revocation_resync: 5s, clock_skew: 10s }\n',
    '<inline>',
    {},
    { checkFiles: false },
  )
  t.same(keysNeedingRestart(a, b), ['store', 'listen', 'admin_listen', 'tls'], 'revocation_resync and clock_skew are applied, so not listed')
})
