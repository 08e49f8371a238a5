/**
 * The server as bin/bearward runs it, minus the process around it: the config
 * parsed from YAML by the real loader, a Runtime built by Runtime.build as the
 * App builds it, and the App's own RequestDispatcher (src/server/dispatch.ts)
 * answering requests and upgrades on a real HTTP server on 127.0.0.1, port 0.
 * The test owns the parts a running binary hides: a ManualClock, the store,
 * the metrics, the revocation list and every log line.
 *
 * What the App adds besides (TLS, the admin port, reload, signals, workers) is
 * tested through bin/bearward (test/helpers/bin.ts).
 *
 * The one harness behind the authorization-server helpers (as-back.ts for the
 * back channel, as-front.ts for the pages) and the gateway fixture
 * (test/gateway/fixture.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { JWK } from 'jose'
import type { AsContext } from '../../src/as/context.js'
import { ManualClock } from '../../src/clock.js'
import { parseConfig } from '../../src/config/load.js'
import type { Config } from '../../src/config/validated-config.js'
import type { Shared } from '../../src/context.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { createAccessLogger, createLogger } from '../../src/log.js'
import { Metrics } from '../../src/metrics.js'
import type { AuditRecord } from '../../src/audit/events.js'
import { recordingAudit } from './audit.js'
import { ProcessState, Runtime } from '../../src/runtime.js'
import { RequestDispatcher } from '../../src/server/dispatch.js'
import { applyClientCertificateOptions, refuseRenegotiation, secureContextOptions } from '../../src/server/listen.js'
import { serveHttp2, type Http2Front } from '../../src/server/http2.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RevocationList } from '../../src/store/revocation-list.js'
import type { Store } from '../../src/store/types.js'
import { Tracing } from '../../src/telemetry/tracing.js'
import { closeServer, listen } from './http.js'

export interface ServeOptions {
  /** ManualClock at 2026-01-01 by default; Redis tests pass one that follows real time. */
  clock?: ManualClock
  /** The store (default: the embedded MemoryStore on the clock, without its sweep timer); closed by `close`. */
  store?: (clock: ManualClock) => Store
  /**
   * Values for `${VAR}` in the YAML. `PUBLIC_URL` is the served address
   * (plus `basePath`) unless given here, so `public_url: ${PUBLIC_URL}`
   * makes the issuer exactly the URL the tests reach.
   */
  env?: Record<string, string>
  /** Appended to the served address for `${PUBLIC_URL}` (`/auth` → `http://127.0.0.1:port/auth`). */
  basePath?: string
  /** The signing key when the config lists none (the App's ephemeral key); default a new ES256 key. */
  signingKey?: () => Promise<JWK>
  /** Another server's process state, so both share remote JWKS caches as a reloaded Runtime does. */
  state?: ProcessState
  /** Log level (default info); every line is kept in `logs`. */
  logLevel?: string
  /** Serve with Node's lenient parser (lets smuggling-shaped requests through to the dispatcher). */
  insecureHTTPParser?: boolean
  /**
   * Serve HTTPS: the config's `tls` (certificate, `client_ca`, `client_certificates`) applied as
   * the App applies it on reload (server/listen.ts), and h2 by ALPN when `alpn` (with `http2.tls`).
   */
  https?: { alpn?: boolean }
}

export interface ServedRuntime {
  /** Where the server listens: `http://127.0.0.1:<port>`. */
  url: string
  /** `${PUBLIC_URL}` as the YAML saw it. */
  publicUrl: string
  config: Config
  runtime: Runtime
  /** The authorization server's context (throws when the config has no authorization_server). */
  readonly as: AsContext
  shared: Shared
  state: ProcessState
  clock: ManualClock
  store: Store
  metrics: Metrics
  revocations: RevocationList
  server: Server
  /** The HTTP/2 side of `server` when the config sets `http2.cleartext` (h2c with prior knowledge, as bin/bearward serves it); else null. */
  http2: Http2Front | null
  /** Every log line written, as parsed JSON, in order. */
  logs: Record<string, unknown>[]
  /** Every audit event recorded, in order (the records as given to `audit.record`). */
  audit: AuditRecord[]
  close(): Promise<void>
}

/**
 * Parse `yaml` with the real loader, build its Runtime and serve it through
 * the App's dispatcher. `yaml` may be a function of the served address, for a
 * test that must set something up with it first (a provider that needs our
 * callback URL).
 */
export async function serveRuntime(yaml: string | ((url: string) => Promise<string>), o: ServeOptions = {}): Promise<ServedRuntime> {
  const clock = o.clock ?? new ManualClock()
  const store = o.store ? o.store(clock) : new MemoryStore(clock, { sweepIntervalMs: 0 })
  const logs: Record<string, unknown>[] = []
  const audit: AuditRecord[] = []
  const log = createLogger(o.logLevel ?? 'info', {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>)
    },
  })
  const metrics = new Metrics()
  const signingKey = o.signingKey ?? (() => generatePrivateJwk('ES256'))

  // The issuer is the served address, so the server listens before its Runtime exists; nothing
  // reaches the dispatcher until the Runtime is built (the test has no URL before this returns).
  let runtime: Runtime | null = null
  let dispatcher: RequestDispatcher | null = null
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    if (runtime === null || dispatcher === null) return void res.destroy()
    dispatcher.onRequest(req, res, runtime)
  }
  const server: Server =
    o.https === undefined
      ? createServer({ insecureHTTPParser: o.insecureHTTPParser ?? false }, handler)
      : createHttpsServer({ allowHalfOpen: true, ...(o.https.alpn ? { ALPNProtocols: ['h2', 'http/1.1'] } : {}) }, handler)
  if (o.https !== undefined) refuseRenegotiation(server)
  server.on('upgrade', (req, socket, head: Buffer) => {
    if (runtime === null || dispatcher === null) return void socket.destroy()
    dispatcher.onUpgrade(req, socket, head, runtime)
  })
  const listened = await listen(server)
  const url = o.https === undefined ? listened.url : listened.url.replace(/^http:/, 'https:')
  const publicUrl = o.env?.PUBLIC_URL ?? url + (o.basePath ?? '')

  let h2: Http2Front | null = null
  const closeFront = (): Promise<void> => {
    h2?.destroyAll()
    return closeServer(server)
  }
  let revocations: RevocationList | null = null
  try {
    const text = typeof yaml === 'string' ? yaml : await yaml(url)
    const config = parseConfig(text, '<test>', { ...o.env, PUBLIC_URL: publicUrl })
    if (o.https !== undefined) {
      if (config.tls === null) throw new Error('serveRuntime: `https` needs `tls` in the config')
      ;(server as HttpsServer).setSecureContext(await secureContextOptions(config.tls))
      applyClientCertificateOptions(server, config.tls)
    }
    revocations = new RevocationList(store, clock, log, config.gateway.revocationResyncSec)
    await revocations.start()
    const shared: Shared = { clock, log, store, revocations, metrics, tracing: new Tracing(null), audit: recordingAudit(audit, metrics) }
    const state = o.state ?? new ProcessState(shared, signingKey)
    const built = await Runtime.build(config, shared, state)
    built.commit()
    runtime = built
    dispatcher = new RequestDispatcher(shared, createAccessLogger(log))
    const served = dispatcher
    if (config.http2.cleartext || config.http2.tls) h2 = serveHttp2(server, config, log, (req, res) => served.onRequest(req, res, built))
    const liveRevocations = revocations
    return {
      url,
      publicUrl,
      config,
      runtime: built,
      get as(): AsContext {
        if (built.asContext === null) throw new Error('the test config has no authorization_server section')
        return built.asContext
      },
      shared,
      state,
      clock,
      store,
      metrics,
      revocations: liveRevocations,
      server,
      http2: h2,
      logs,
      audit,
      async close() {
        await closeFront()
        await built.close()
        if (o.state === undefined) await state.close()
        await liveRevocations.stop()
        await store.close()
      },
    }
  } catch (err) {
    await closeFront()
    await revocations?.stop()
    await store.close()
    throw err
  }
}
