import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createSecureContext } from 'node:tls'
import { performance } from 'node:perf_hooks'
import { systemClock, type Clock } from './clock.js'
import { loadConfigSnapshot, type ConfigSnapshot } from './config/load.js'
import type { Config, ListenAddress } from './config/types.js'
import { ConfigWatcher } from './config/watch.js'
import type { RequestContext, ResponseCloseListener, Shared } from './context.js'
import { ConfigError, formatProblem, NotFound, RequestTimeout } from './errors.js'
import { splitTarget } from './gateway/normalize.js'
import { announcesBody, watchBody, type BodyTimeout } from './http/body-timeouts.js'
import { clientErrorAnswer, type ParserError } from './http/client-error.js'
import { holdContinue } from './http/continue.js'
import { answerFailure, type Face, type FailureReporting } from './http/failure.js'
import { errorOnSocket, sendErrorWithId, sendJson } from './http/reply.js'
import { assertSingleHost, assertTargetAgreesWithHost, assertTargetLength } from './http/request-checks.js'
import { createAccessLogger, createLogger, redactUrl, type Logger } from './log.js'
import { Metrics } from './metrics.js'
import { ProcessState, Runtime } from './runtime.js'
import { createStore } from './store/index.js'
import { RevocationList } from './store/revocation-list.js'
import type { DestinationStream } from 'pino'
import type { JWK } from 'jose'

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

/** Where a response keeps its request's Context, for the one shared close listener. */
const CONTEXT = Symbol('bearward.context')
type ResponseWithContext = ServerResponse & { [CONTEXT]?: Context }

/** Where a connection keeps the response of its current request, for 'clientError'. */
const LIVE_RESPONSE = Symbol('bearward.liveResponse')
/** Whether the connection's latest request asked for the connection to close after its answer. */
const CLOSE_ASKED = Symbol('bearward.closeAsked')
/** The connection has the half-close listener. */
const WATCHED = Symbol('bearward.watched')
type TrackedSocket = Socket & { [LIVE_RESPONSE]?: ServerResponse; [CLOSE_ASKED]?: boolean; [WATCHED]?: true }

/** RFC 9112 9.3: the request said it is the connection's last (`Connection: close`, or HTTP/1.0 without keep-alive). */
function asksToClose(req: IncomingMessage): boolean {
  const connection = req.headers.connection?.toLowerCase()
  if (connection?.includes('close') === true) return true
  return req.httpVersionMinor === 0 && req.httpVersionMajor === 1 && connection?.includes('keep-alive') !== true
}

/**
 * The client shut its write side (FIN) while a request was unanswered. The
 * server runs half-open, so a client that said its request was the last
 * (`Connection: close`) and then half-closed still gets its answer. On a
 * persistent connection a FIN mid-request is how clients abort (undici,
 * browsers): the client has left, so the connection is closed, and the
 * request's work (an upstream exchange) is abandoned rather than finished
 * for nobody.
 */
function onClientFin(this: TrackedSocket): void {
  const live = this[LIVE_RESPONSE]
  if (live !== undefined && !live.writableFinished && this[CLOSE_ASKED] !== true) this.destroy()
}

/**
 * How often Node looks for request heads past `client_timeouts.headers`.
 * Its default (30 s) would let a slowloris hold a socket up to 30 s past the
 * bound; a quarter of the bound, at most 1 s, costs one walk of the
 * connection list per tick.
 */
function connectionsCheckingInterval(headersMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(headersMs / 4)))
}

/** The timeouts Node's server applies itself; set at start and on every reload. */
function applyServerTimeouts(server: Server, config: Config): void {
  const t = config.clientTimeouts
  server.headersTimeout = t.headersMs
  // Off: a whole-request bound in Node cuts the socket from under a request
  // we may still answer; body bounds are http/body-timeouts.ts's.
  server.requestTimeout = 0
  server.keepAliveTimeout = t.keepAliveMs
}

/** A request id we echo must be short and plain, so it cannot forge log lines or headers. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

function sameListen(a: ListenAddress | null, b: ListenAddress | null): boolean {
  return a?.host === b?.host && a?.port === b?.port
}

/**
 * Config keys a reload cannot apply (the process holds what they made: the
 * store connection, the listening sockets, an http or https server), by
 * their YAML names, for the warning that names them.
 */
export function keysNeedingRestart(old: Config, next: Config): string[] {
  const keys: string[] = []
  if (JSON.stringify(old.store) !== JSON.stringify(next.store)) keys.push('store')
  if (!sameListen(old.listen, next.listen)) keys.push('listen')
  if (!sameListen(old.adminListen, next.adminListen)) keys.push('admin_listen')
  // Certificate files are reloaded; turning TLS on or off needs another kind of server.
  if ((old.tls === null) !== (next.tls === null)) keys.push('tls')
  if (old.workers !== next.workers) keys.push('workers')
  return keys
}

/** A token is accepted up to clock_skew past its exp, so its revocation must outlive that too. */
function revocationGraceSec(config: Config): number {
  return Math.max(60, config.gateway.clockSkewSec)
}

/** Read and check the TLS files, so a bad pair refuses the reload before anything is swapped. */
async function secureContextOptions(tls: NonNullable<Config['tls']>): Promise<{ cert: Buffer; key: Buffer }> {
  const [cert, key] = await Promise.all([readFile(tls.certFile), readFile(tls.keyFile)])
  createSecureContext({ cert, key })
  return { cert, key }
}

function urlOf(addr: AddressInfo, tls: boolean): string {
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address
  return `${tls ? 'https' : 'http'}://${host}:${addr.port}`
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
  #admin: Server | null = null
  #watcher: ConfigWatcher | null = null
  #lastReloadError: string | null = null
  /** The access line's logger (no redaction pass: it logs only fields we build). */
  readonly #accessLog: Logger
  /** Request ids: a random per-process prefix and a counter; unique without a CSPRNG call per request. */
  readonly #idPrefix = randomBytes(6).toString('hex')
  #idCounter = 0
  #reloading: Promise<boolean> | null = null
  #closing = false
  /**
   * The 'close' listener of every response, one function for all: it finds
   * the request's Context on the response, so no closure is made per request.
   */
  readonly #responseClosed: (this: ResponseWithContext) => void

  /** How failures the dispatcher catches are reported, by the face the request went to. */
  readonly #failures: Readonly<Record<Face, FailureReporting>>

  private constructor(shared: Shared, state: ProcessState, runtime: Runtime, load: () => Promise<ConfigSnapshot>, serveAdmin: boolean) {
    this.shared = shared
    this.#accessLog = createAccessLogger(shared.log)
    this.#state = state
    this.#runtime = runtime
    this.#load = load
    this.#serveAdmin = serveAdmin
    this.#failures = {
      as: { face: 'as', metrics: shared.metrics, rootLog: shared.log, quiet: false },
      gateway: { face: 'gateway', metrics: shared.metrics, rootLog: shared.log, quiet: true },
    }
    // The listener's own `this` is the response; the App is reached through `app`.
    const app = this
    this.#responseClosed = function (this: ResponseWithContext): void {
      const ctx = this[CONTEXT]
      if (ctx !== undefined) app.#onClose(this.req, this, ctx)
    }
  }

  /** Load the config, connect the store, build the first Runtime and listen. Throws ConfigError on a bad config. */
  static async start(options: AppOptions): Promise<App> {
    const env = options.env ?? process.env
    const load = options.loadConfig ?? (() => loadConfigSnapshot(options.configPath, env))
    const { config, digest, warnings } = await load()
    const log = createLogger(config.log.level, options.logDestination, options.logBindings)
    for (const w of warnings) log.warn(`config: ${formatProblem(w)}`)
    const clock = options.clock ?? systemClock
    const metrics = new Metrics()
    const store = createStore(config.store, { clock, log })
    if (config.store.kind === 'redis') {
      const { url, cluster, sentinels, sentinelName } = config.store
      const where = sentinels.length > 0 ? { sentinels, name: sentinelName } : cluster.length > 0 ? { cluster } : {}
      log.info({ ...(url === '' ? {} : { store: redactUrl(url) }), ...where }, 'using redis store')
    }
    else log.info('using the embedded memory store (single instance)')
    const revocations = new RevocationList(store, clock, log, config.gateway.revocationResyncSec, { graceSec: revocationGraceSec(config) })
    await revocations.start()
    const shared: Shared = { clock, log, store, revocations, metrics }
    const state = new ProcessState(shared, options.ephemeralKey)
    let runtime: Runtime
    try {
      runtime = await Runtime.build(config, shared, state)
      runtime.commit()
    } catch (err) {
      await revocations.stop()
      await store.close()
      throw err
    }
    metrics.configInfo.set(Math.floor(clock.now() / 1000))
    const app = new App(shared, state, runtime, load, options.admin !== false)
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
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.#onRequest(req, res)
    // Node's defaults leave slow clients holding sockets for long; bound them.
    const options = {
      connectionsCheckingInterval: connectionsCheckingInterval(config.clientTimeouts.headersMs),
      headersTimeout: config.clientTimeouts.headersMs,
      requestTimeout: 0,
      keepAliveTimeout: config.clientTimeouts.keepAliveMs,
    }
    if (config.tls) {
      const [cert, key] = await Promise.all([readFile(config.tls.certFile), readFile(config.tls.keyFile)])
      // allowHalfOpen: the TLS socket outlives the client's FIN (see httpAllowHalfOpen below).
      this.#server = createHttpsServer({ cert, key, allowHalfOpen: true, ...options }, handler)
    } else {
      this.#server = createHttpServer(options, handler)
    }
    applyServerTimeouts(this.#server, config)
    // A client that half-closes after its request (shuts its write side, as
    // some clients and load balancers do) still reads: without this Node
    // ends the socket at the client's FIN, and the answer, and possibly a
    // forwarded request's response, is lost. The socket ends after the last
    // answer instead.
    ;(this.#server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true
    // Listening makes Node leave `100 Continue` to us: it is sent once the
    // request is admitted on its headers and its body is wanted (http/continue.ts).
    this.#server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      holdContinue(req, res)
      this.#onRequest(req, res)
    })
    this.#server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.#onUpgrade(req, socket, head))
    this.#server.on('clientError', (err: ParserError, socket: Duplex) => {
      // A parse error in the body of a request whose answer already started
      // (a refusal decided on headers alone, then a broken body) only closes
      // the connection: a second answer would be a response to nothing.
      // Otherwise (a new request's head, or a request not answered yet) the
      // answer says what Node found; the request's own response, if any,
      // then finds the connection closed.
      const raw = socket as TrackedSocket
      const live = raw[LIVE_RESPONSE]
      const answer = clientErrorAnswer(err)
      const answerable = live === undefined || !live.headersSent || (live.writableFinished && live.req.complete)
      if (socket.writable && !raw.destroyed && answerable) errorOnSocket(socket, answer)
      else socket.destroy()
      this.log.debug({ code: err.code, status: answer.status }, 'client error')
    })
    await listenOn(this.#server, config.listen)
    if (config.adminListen && this.#serveAdmin) {
      this.#admin = createHttpServer((req, res) => void this.#onAdmin(req, res))
      await listenOn(this.#admin, config.adminListen)
    }
    const where = this.addresses()
    // A worker process says so: `bearward listening` is its primary's line, once every worker is up.
    const who = this.#serveAdmin ? 'bearward' : 'worker'
    this.log.info({ listen: where.listen, admin: where.admin, public_url: config.publicUrl }, `${who} listening on ${where.listen}`)
  }

  #context(req: IncomingMessage, runtime: Runtime): Context {
    // One split of the target for both faces (origin- or absolute-form).
    const target = splitTarget(req.url ?? '/')
    const incoming = req.headers['x-request-id']
    const id =
      runtime.config.trustIncomingRequestId && typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : this.#nextRequestId()
    return new Context(id, this.log, target.rawPath, target.rawQuery, target.host)
  }

  #nextRequestId(): string {
    this.#idCounter = (this.#idCounter + 1) % Number.MAX_SAFE_INTEGER
    return `${this.#idPrefix}-${this.#idCounter.toString(36)}`
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    // One Runtime from start to end of the request, whatever reloads happen meanwhile.
    const runtime = this.#runtime
    const ctx = this.#context(req, runtime)
    runtime.arrive()
    ctx.runtime = runtime
    // The one close listener of the request: metrics, the access log, the
    // runtime's drain count, and whoever set ctx.closeListener (the proxy).
    ;(res as ResponseWithContext)[CONTEXT] = ctx
    res.on('close', this.#responseClosed)
    const socket = req.socket as TrackedSocket
    socket[LIVE_RESPONSE] = res
    socket[CLOSE_ASKED] = asksToClose(req)
    if (socket[WATCHED] !== true) {
      socket[WATCHED] = true
      socket.on('end', onClientFin)
    }
    if (announcesBody(req)) {
      watchBody(
        req,
        runtime.config.clientTimeouts,
        () => res.writableFinished,
        (which) => this.#bodyTimedOut(req, res, ctx, which),
      )
    }
    this.#dispatch(req, res, ctx, runtime)
  }

  /**
   * A request body stalled or missed its deadline: whatever works on the
   * request stops (the proxy aborts its upstream exchange), and the client
   * gets 408 if nothing was answered yet; otherwise the connection is cut
   * (a response under way must not look complete, and a finished one leaves
   * only a body nobody will read).
   */
  #bodyTimedOut(req: IncomingMessage, res: ServerResponse, ctx: Context, which: BodyTimeout): void {
    ctx.log.info({ timeout: which }, 'request body timed out')
    ctx.closeListener?.onRequestAbandoned?.()
    if (!res.headersSent) sendErrorWithId(res, ctx.id, new RequestTimeout())
    else if (!res.writableFinished) res.destroy()
    else req.socket.destroy()
  }

  #onClose(req: IncomingMessage, res: ServerResponse, ctx: Context): void {
    ctx.closeListener?.onResponseClose()
    ctx.runtime?.depart()
    ctx.runtime = null
    const seconds = (performance.now() - ctx.started) / 1000
    this.shared.metrics.observeResponse(ctx.routeLabel, res.writableFinished ? res.statusCode : null, seconds)
    if (this.#accessLog.isLevelEnabled('info')) {
      this.#accessLog.info(
        { req_id: ctx.id, method: req.method, path: ctx.rawPath, route: ctx.routeLabel, status: res.statusCode, ms: Math.round(seconds * 10000) / 10 },
        'request',
      )
    }
  }

  /**
   * Hand the request to the face that owns it. The gateway answers
   * synchronously-decided requests without a promise; the authorization
   * server's endpoints are async. X-Request-Id is set here for everything
   * but the gateway, which adds it to the header block it writes.
   */
  #dispatch(req: IncomingMessage, res: ServerResponse, ctx: Context, runtime: Runtime): void {
    try {
      assertSingleHost(req)
      assertTargetLength(req)
      assertTargetAgreesWithHost(req, ctx.targetHost)
      const as = runtime.as
      if (as !== null && (as.owns === undefined || as.owns(ctx.rawPath))) {
        res.setHeader('x-request-id', ctx.id)
        as.handle(req, res, ctx).then(
          (handled) => {
            if (!handled) this.#notAs(req, res, ctx, runtime)
          },
          (err: unknown) => this.#fail(res, ctx, err, 'as'),
        )
        return
      }
      this.#notAs(req, res, ctx, runtime)
    } catch (err) {
      this.#fail(res, ctx, err, 'gateway')
    }
  }

  #notAs(req: IncomingMessage, res: ServerResponse, ctx: Context, runtime: Runtime): void {
    try {
      if (runtime.gateway.handle(req, res, ctx)) return
      ctx.routeLabel = 'not_found'
      sendErrorWithId(res, ctx.id, new NotFound())
    } catch (err) {
      this.#fail(res, ctx, err, 'gateway')
    }
  }

  /** The one failure path (http/failure.ts) for what a face let through or the dispatcher's own checks refused. */
  #fail(res: ServerResponse, ctx: Context, err: unknown, face: Face): void {
    sendErrorWithId(res, ctx.id, answerFailure(err, ctx.log, this.#failures[face]).answer)
  }

  #onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const runtime = this.#runtime
    const leave = runtime.enter()
    socket.on('close', leave)
    const ctx = this.#context(req, runtime)
    try {
      assertSingleHost(req)
      assertTargetLength(req)
      assertTargetAgreesWithHost(req, ctx.targetHost)
    } catch (err) {
      errorOnSocket(socket, answerFailure(err, ctx.log, this.#failures.gateway).answer, {}, ctx.id)
      return
    }
    runtime.gateway
      .handleUpgrade(req, socket, head, ctx)
      .then((handled) => {
        if (!handled) errorOnSocket(socket, new NotFound(), {}, ctx.id)
      })
      .catch((err: unknown) => {
        // Unlike a request, an upgrade the gateway failed on may have written to the socket already: close it.
        answerFailure(err, ctx.log, this.#failures.gateway)
        socket.destroy()
      })
  }

  async #onAdmin(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET, HEAD' })
      return
    }
    if (path === '/healthz') {
      sendJson(res, 200, { status: 'ok' })
    } else if (path === '/readyz') {
      const { ready, body } = await this.readiness()
      sendJson(res, ready ? 200 : 503, body, { 'cache-control': 'no-store' })
    } else if (path === '/metrics') {
      const text = this.shared.metrics.render()
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    } else {
      sendJson(res, 404, { error: 'not_found' })
    }
  }

  /** What /readyz answers: ready, or the reasons not to send traffic here (also asked by a primary of its workers). */
  async readiness(): Promise<{ ready: boolean; body: Record<string, unknown> }> {
    const reasons: string[] = []
    if (this.#closing) reasons.push('shutting down')
    // What protected routes go by: not ready while they refuse (or, open, cannot check) revocation.
    if (!this.shared.revocations.healthy) reasons.push('revocation list not in sync with the store')
    try {
      await withTimeout(this.shared.store.ping(), 1000)
    } catch {
      reasons.push('store unreachable')
    }
    const body: Record<string, unknown> = { status: reasons.length ? 'unavailable' : 'ready', store: this.shared.store.kind }
    if (reasons.length) body.reasons = reasons
    if (this.#lastReloadError) body.last_reload_error = this.#lastReloadError
    return { ready: reasons.length === 0, body }
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
        for (const w of warnings) this.log.warn(`config: ${formatProblem(w)}`)
        const old = this.#runtime
        next = await Runtime.build(config, this.shared, this.#state)
        const secure = config.tls && this.#server && 'setSecureContext' in this.#server ? await secureContextOptions(config.tls) : null
        // Nothing below can fail: commit.
        for (const key of keysNeedingRestart(old.config, config)) {
          this.log.warn({ key }, `config: ${key} changed; it takes effect at the next restart`)
        }
        if (secure) (this.#server as import('node:https').Server).setSecureContext(secure)
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
        this.log.info({ routes: config.routes.length }, 'config reloaded')
        void old.drain(config.shutdownTimeoutMs).then(() => old.close())
        return true
      } catch (err) {
        if (next) await next.discard()
        metrics.reloads.inc({ result: 'error' })
        const message = err instanceof ConfigError ? err.message : (err as Error).message
        this.#lastReloadError = message
        this.log.error({ problems: err instanceof ConfigError ? err.problems : undefined }, `config reload refused, still serving the previous config: ${message}`)
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
    await runtime.drain(timeout)
    server?.closeAllConnections()
    await closed
    await new Promise<void>((resolve) => (this.#admin ? this.#admin.close(() => resolve()) : resolve()))
    this.#admin?.closeAllConnections()
    await runtime.close()
    await this.#state.close()
    await this.shared.revocations.stop()
    await this.shared.store.close()
    this.log.info('bearward stopped')
    this.log.flush()
  }
}

/**
 * RequestContext with a lazily bound child logger: most requests never log
 * anything but the access line, and binding costs a serialization.
 */
class Context implements RequestContext {
  readonly id: string
  readonly rawPath: string
  readonly rawQuery: string
  readonly targetHost: string | null
  routeLabel = 'unmatched'
  closeListener: ResponseCloseListener | null = null
  /** performance.now() at arrival, for the latency metric and the access log. */
  readonly started = performance.now()
  /** The Runtime whose drain count the request is in, until it departs. */
  runtime: Runtime | null = null
  readonly #root: Logger
  #log: Logger | null = null

  constructor(id: string, root: Logger, rawPath: string, rawQuery: string, targetHost: string | null) {
    this.id = id
    this.#root = root
    this.rawPath = rawPath
    this.rawQuery = rawQuery
    this.targetHost = targetHost
  }

  get log(): Logger {
    this.#log ??= this.#root.child({ req_id: this.id })
    return this.#log
  }
}

export function listenOn(server: Server, addr: ListenAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      server.off('listening', onListening)
      const why = err.code === 'EADDRINUSE' ? 'the address is already in use' : err.code === 'EACCES' ? 'permission denied' : err.message
      reject(new Error(`cannot listen on ${addr.host}:${addr.port}: ${why}`))
    }
    const onListening = (): void => {
      server.off('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(addr.port, addr.host)
  })
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms)
    t.unref()
    p.then(
      (v) => {
        clearTimeout(t)
        resolve(v)
      },
      (e: unknown) => {
        clearTimeout(t)
        reject(e instanceof Error ? e : new Error(String(e)))
      },
    )
  })
}
