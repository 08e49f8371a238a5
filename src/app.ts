import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { systemClock, type Clock } from './clock.js'
import { loadConfigSnapshot, type ConfigSnapshot } from './config/load.js'
import { ALLOW_DEMO_ENV, demoOnNetworkRefusal } from './config/demo.js'
import type { Config, ListenAddress } from './config/validated-config.js'
import { ConfigWatcher } from './config/watch.js'
import type { Shared } from './context.js'
import { ConfigError, formatProblem } from './errors.js'
import type { ParserError } from './http/client-error.js'
import { holdContinue } from './http/expect-continue.js'
import { createAccessLogger, createLogger, redactUrl, type Logger } from './log.js'
import { Metrics } from './metrics.js'
import { createAudit } from './audit/trail.js'
import { ProcessState, Runtime } from './runtime.js'
import { createAdminServer, processReadiness, type Readiness } from './server/admin.js'
import { handleAdmin } from './admin/serve.js'
import { answerClientError } from './server/connection.js'
import { RequestDispatcher } from './server/dispatch.js'
import {
  applyClientCertificateOptions,
  applyServerTimeouts,
  createListenServer,
  destroyOpenSockets,
  listenOn,
  secureContextOptions,
  urlOf,
} from './server/listen.js'
import { serveHttp2, type Http2Front } from './server/http2.js'
import { keysNeedingRestart, revocationGraceSec } from './server/reload-rules.js'
import { configChanges, reloadReport, startupReport, WarningMemory } from './server/config-report.js'
import { createStore } from './store/index.js'
import { RevocationList } from './store/revocation-list.js'
import { exportSettings, Tracing } from './telemetry/tracing.js'
import { tracedStore } from './telemetry/traced-store.js'
import type { DestinationStream } from 'pino'
import type { JWK } from 'jose'

/**
 * The process (src/server/ holds its parts, one concern a file): start, the
 * `listen` server (http or https) and the admin server, hot reload, and
 * graceful shutdown. Requests are the dispatcher's (server/dispatch.ts), their
 * Context and ids server/context.ts's, raw-socket answers to what Node's parser
 * refused server/connection.ts's, the admin endpoints server/admin.ts's, and
 * what a reload cannot apply server/reload-rules.ts's.
 */

export interface AppOptions {
  configPath: string
  env?: NodeJS.ProcessEnv
  clock?: Clock
  /** Where logs go (default stdout); tests capture them. */
  logDestination?: DestinationStream
  /** Watch the config file for changes (default true). */
  watch?: boolean
  /** Where each load and reload gets its config (default: reads configPath); a worker gets its primary's text. */
  loadConfig?: () => Promise<ConfigSnapshot>
  /** Serve admin_listen (default true); worker processes leave it to their primary. */
  admin?: boolean
  /** Fields on every log line (a worker process's index and pid). */
  logBindings?: Readonly<Record<string, unknown>>
  /** The key to sign with when the AS has no configured keys (default: a new one; workers get their primary's). */
  ephemeralKey?: () => Promise<JWK>
}

/**
 * The process: one Runtime at a time serving `listen`, the admin server on
 * `admin_listen`, hot reload, and graceful shutdown.
 */
export class App {
  readonly shared: Shared
  readonly #state: ProcessState
  readonly #load: () => Promise<ConfigSnapshot>
  readonly #serveAdmin: boolean
  #runtime: Runtime
  #server: Server | null = null
  /** The node:http2 server that takes `listen`'s HTTP/2 connections (`http2`); null when HTTP/2 is off. */
  #h2: Http2Front | null = null
  #admin: Server | null = null
  #watcher: ConfigWatcher | null = null
  #lastReloadError: string | null = null
  /** The last load's warnings: a reload logs only new ones (server/config-report.ts). */
  #warnings = new WarningMemory()
  /** The access line's logger (no redaction pass: it logs only fields we build). */
  readonly #accessLog: Logger
  readonly #dispatcher: RequestDispatcher
  #reloading: Promise<boolean> | null = null
  #closing = false
  /** The `listen` the process serves: the start's, since a reload cannot move the socket (server/reload-rules.ts). */
  readonly #served: ListenAddress
  /** BEARWARD_ALLOW_DEMO as the process started with it. */
  readonly #allowDemo: string | undefined
  private constructor(
    shared: Shared,
    state: ProcessState,
    runtime: Runtime,
    load: () => Promise<ConfigSnapshot>,
    serveAdmin: boolean,
    allowDemo: string | undefined,
  ) {
    this.shared = shared
    this.#served = runtime.config.listen
    this.#allowDemo = allowDemo
    this.#accessLog = createAccessLogger(shared.log)
    this.#state = state
    this.#runtime = runtime
    this.#load = load
    this.#serveAdmin = serveAdmin
    this.#dispatcher = new RequestDispatcher(shared, this.#accessLog)
  }

  /** Load the config, connect the store, build the first Runtime and listen. Throws ConfigError on a bad config. */
  static async start(options: AppOptions): Promise<App> {
    const env = options.env ?? process.env
    const load = options.loadConfig ?? (() => loadConfigSnapshot(options.configPath, env))
    const { config, digest, warnings } = await load()
    const log = createLogger(config.log.level, options.logDestination, options.logBindings)
    const warningMemory = new WarningMemory()
    for (const w of warningMemory.fresh(warnings)) log.warn(`config: ${formatProblem(w)}`)
    const clock = options.clock ?? systemClock
    const metrics = new Metrics()
    const tracing = await Tracing.create(exportSettings(config.traces, env), '0', { onSpans: (outcome, n) => metrics.traceSpans.inc({ outcome }, n) })
    const created = await createStore(config.store, { clock, log, onReplicaWaitTimeout: () => metrics.replicaWaitTimeouts.inc() })
    // Store calls are spans of their request only when spans are exported; otherwise the store is used as it is.
    const store = tracing.exporting ? tracedStore(created, tracing, config.store.kind) : created
    if (config.store.kind === 'redis') {
      const { url, cluster, sentinels, sentinelName } = config.store
      const where = sentinels.length > 0 ? { sentinels, name: sentinelName } : cluster.length > 0 ? { cluster } : {}
      log.info({ ...(url === '' ? {} : { store: redactUrl(url) }), ...where }, 'using redis store')
      // A sample from the start, so an alert on its rate has a series before the first timeout.
      metrics.replicaWaitTimeouts.inc({}, 0)
    } else log.info('using the embedded memory store (single instance)')
    const revocations = new RevocationList(store, clock, log, config.gateway.revocationResyncSec, { graceSec: revocationGraceSec(config) })
    await revocations.start()
    const audit = createAudit(config.audit, clock, metrics.auditEvents)
    const shared: Shared = { clock, log, store, revocations, metrics, tracing, audit }
    const state = new ProcessState(shared, options.ephemeralKey)
    let runtime: Runtime
    try {
      runtime = await Runtime.build(config, shared, state)
      runtime.commit()
    } catch (err) {
      await revocations.stop()
      await store.close()
      await tracing.close()
      audit.close()
      throw err
    }
    metrics.configInfo.set(Math.floor(clock.now() / 1000))
    const app = new App(shared, state, runtime, load, options.admin !== false, env[ALLOW_DEMO_ENV])
    app.#warnings = warningMemory
    try {
      // Watch before listening: a change made as soon as we say we listen must not be missed.
      if (options.watch !== false) {
        app.#watcher = new ConfigWatcher(options.configPath, () => void app.reload())
        await app.#watcher.start(digest)
      }
      await app.#listen(config)
    } catch (err) {
      await app.close()
      throw err
    }
    return app
  }

  get runtime(): Runtime {
    return this.#runtime
  }

  get log(): Logger {
    return this.shared.log
  }

  /** Addresses actually bound (port 0 resolved). */
  addresses(): { listen: string; admin: string | null } {
    const tls = this.#runtime.config.tls !== null
    const main = this.#server?.address() as AddressInfo
    const admin = this.#admin?.address() as AddressInfo | null | undefined
    return { listen: urlOf(main, tls), admin: admin ? urlOf(admin, false) : null }
  }

  async #listen(config: Config): Promise<void> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.#dispatcher.onRequest(req, res, this.#runtime)
    this.#server = await createListenServer(config, handler)
    // Listening makes Node leave `100 Continue` to us: it is sent once the
    // request is admitted on its headers and its body is wanted (http/expect-continue.ts).
    this.#server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      holdContinue(req, res)
      this.#dispatcher.onRequest(req, res, this.#runtime)
    })
    this.#server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.#dispatcher.onUpgrade(req, socket, head, this.#runtime))
    this.#server.on('clientError', (err: ParserError, socket: Duplex) => answerClientError(err, socket, this.log))
    if (config.http2.tls || config.http2.cleartext) this.#serveHttp2(this.#server, config)
    await listenOn(this.#server, config.listen)
    if (config.adminListen && this.#serveAdmin) {
      this.#admin = createAdminServer(
        {
          readiness: () => this.readiness(),
          metrics: () => this.shared.metrics.render(),
          // Read per request: a reload's Runtime (and its admin_api) takes over at once.
          adminApi: (req, res, path) =>
            handleAdmin(req, res, this.#runtime.asContext, { path, origin: `http://${req.headers.host ?? 'localhost'}`, mount: '', secure: false }),
        },
        this.shared.log,
      )
      await listenOn(this.#admin, config.adminListen)
    }
    const where = this.addresses()
    // A worker process says so: `bearward listening` is its primary's line, once every worker is up.
    const who = this.#serveAdmin ? 'bearward' : 'worker'
    this.log.info({ listen: where.listen, admin: where.admin, public_url: config.publicUrl }, `${who} listening on ${where.listen}`)
    // What it serves, once: a worker leaves it to its primary, as it does the line above.
    if (this.#serveAdmin) for (const line of startupReport(config, where.listen)) this.log.info(line.fields, line.msg)
  }

  /** HTTP/2 beside HTTP/1.1 on `listen` (server/http2.ts), to the same dispatcher. */
  #serveHttp2(server: Server, config: Config): void {
    this.#h2 = serveHttp2(server, config, this.log, (req, res) => this.#dispatcher.onRequest(req, res, this.#runtime))
  }

  /** What /readyz answers: ready, or the reasons not to send traffic here (also asked by a primary of its workers). */
  async readiness(): Promise<Readiness> {
    return processReadiness(this.shared, this.#closing, this.#lastReloadError)
  }

  /**
   * Reload the config file, all or nothing. Everything the new config needs
   * is built first (Runtime, TLS context); only when nothing can fail any
   * more is it committed and swapped in. A bad file, or a build that fails
   * late, is refused: logged with its position, counted, shown by /readyz;
   * what the refused build opened is closed, and the running Runtime keeps
   * serving unchanged. Keys that only a restart can apply are logged as such.
   * Returns whether the new config is now in use.
   */
  reload(): Promise<boolean> {
    // Reloads are serialized; a reload requested during one runs after it.
    const run = async (): Promise<boolean> => {
      const metrics = this.shared.metrics
      let next: Runtime | null = null
      try {
        const { config, digest, warnings } = await this.#load()
        // Only what the running config did not already warn about: a reload repeats no warning.
        for (const w of this.#warnings.fresh(warnings)) this.log.warn(`config: ${formatProblem(w)}`)
        // The load judged the demo secrets at the file's `listen`; the socket is still where the process started.
        const demo = demoOnNetworkRefusal(this.#served.host, config.authorizationServer, this.#allowDemo)
        if (demo !== null) throw new ConfigError([{ file: config.file, line: 1, col: 1, path: 'listen', message: demo }])
        const old = this.#runtime
        next = await Runtime.build(config, this.shared, this.#state)
        const secure = config.tls && this.#server && 'setSecureContext' in this.#server ? await secureContextOptions(config.tls) : null
        // Nothing below can fail: commit.
        for (const key of keysNeedingRestart(old.config, config)) {
          this.log.warn({ key }, `config: ${key} changed; it takes effect at the next restart`)
        }
        if (secure && config.tls && this.#server) {
          ;(this.#server as import('node:https').Server).setSecureContext(secure)
          applyClientCertificateOptions(this.#server, config.tls)
        }
        if (config.log.level !== this.log.level) {
          this.log.level = config.log.level
          this.#accessLog.level = config.log.level
        }
        this.#applyRevocationSettings(old.config, config)
        next.commit()
        this.#runtime = next
        if (this.#server !== null) applyServerTimeouts(this.#server, config)
        this.#watcher?.loaded(digest)
        this.#lastReloadError = null
        metrics.reloads.inc({ result: 'ok' })
        metrics.configInfo.set(Math.floor(this.shared.clock.now() / 1000))
        const changed = reloadReport(configChanges(old.config, config))
        this.log.info(changed.fields, changed.msg)
        this.log.info({ routes: config.routes.length }, 'config reloaded')
        this.shared.audit.record({ event: 'config.reloaded', actor: { kind: 'system' }, subject: { kind: 'config', digest }, outcome: 'success' })
        void old.drain(config.shutdownTimeoutMs).then(() => old.close())
        return true
      } catch (err) {
        if (next) await next.discard()
        metrics.reloads.inc({ result: 'error' })
        const message = err instanceof ConfigError ? err.message : (err as Error).message
        this.#lastReloadError = message
        this.shared.audit.record({
          event: 'config.refused',
          actor: { kind: 'system' },
          subject: { kind: 'none' },
          outcome: 'failure',
          reason: err instanceof ConfigError ? 'invalid_config' : 'build_failed',
        })
        this.log.error(
          { problems: err instanceof ConfigError ? err.problems : undefined },
          `config reload refused, still serving the previous config: ${message}`,
        )
        return false
      }
    }
    const prev = this.#reloading ?? Promise.resolve(true)
    const next = prev.then(run, run)
    this.#reloading = next
    return next
  }

  /** `gateway.revocation_resync` and `gateway.clock_skew` reach the process-wide revocation list. */
  #applyRevocationSettings(old: Config, config: Config): void {
    const before = { resync: old.gateway.revocationResyncSec, grace: revocationGraceSec(old) }
    const after = { resync: config.gateway.revocationResyncSec, grace: revocationGraceSec(config) }
    if (before.resync === after.resync && before.grace === after.grace) return
    this.shared.revocations.configure(after.resync, { graceSec: after.grace })
    this.log.info({ revocation_resync_sec: after.resync, revocation_grace_sec: after.grace }, 'config: revocation list settings applied')
  }

  /** Graceful shutdown: stop accepting, let in-flight requests finish within the bound, close the store. */
  async close(): Promise<void> {
    if (this.#closing) return
    this.#closing = true
    this.#watcher?.close()
    const runtime = this.#runtime
    const timeout = runtime.config.shutdownTimeoutMs
    const server = this.#server
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve()
    server?.closeIdleConnections()
    this.#h2?.closeIdle()
    await runtime.drain(timeout)
    if (runtime.inflight > 0) {
      this.log.warn(
        { in_flight: runtime.inflight, shutdown_timeout_ms: timeout },
        'requests still in flight at the shutdown deadline: closing their connections',
      )
    }
    server?.closeAllConnections()
    if (server !== null) destroyOpenSockets(server)
    this.#h2?.destroyAll()
    await closed
    await new Promise<void>((resolve) => (this.#admin ? this.#admin.close(() => resolve()) : resolve()))
    this.#admin?.closeAllConnections()
    await runtime.close()
    await this.#state.close()
    await this.shared.revocations.stop()
    await this.shared.store.close()
    await this.shared.tracing.close()
    this.shared.audit.close()
    this.log.info('bearward stopped')
    this.log.flush()
  }
}
