import { readFileSync } from 'node:fs'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import { isIP } from 'node:net'
import { Transform, type Duplex, type Readable, type TransformCallback } from 'node:stream'
import { Pool, buildConnector, type Dispatcher } from 'undici'
import type { GatewayConfig, RouteConfig } from '../config/types.js'
import type { RequestContext, ResponseCloseListener } from '../context.js'
import { BadGateway, GatewayTimeout, PayloadTooLarge, ServerError, type OAuthError } from '../errors.js'
import { continueIfExpected } from '../http/continue.js'
import { errorOnSocket, sendErrorWithId } from '../http/reply.js'
import { redactUrl, type Logger } from '../log.js'
import { TrustedProxies } from './forwarded.js'
import { RequestHeaderPolicy, headerObject, headerPairs, responseHeaderList, type FlatHeaders } from './headers.js'
import type { ForwardRequest } from './types.js'
import { WebSocketUpstream } from './websocket.js'

/**
 * Forwarding (issue #5): one authorized request in, one upstream exchange out.
 *
 * HTTP goes through one undici Pool per upstream origin (keep-alive
 * connections, measured ~19k req/s against http-proxy's ~13k, DESIGN.md) via
 * `pool.dispatch()` with a handler: no intermediate Readable per response,
 * and the upstream body is written to the client with backpressure
 * (RFC 9110 7.6 intermediaries). WebSocket upgrades go through node:http
 * (websocket.ts). Every failure is answered through `sendError`.
 *
 * `Expect: 100-continue`: the client gets `100 Continue` only once the
 * request was admitted and its body is about to be streamed (http/continue.ts),
 * and we drop `Expect` upstream (undici cannot send it), so the upstream
 * simply receives the body.
 * Other 1xx responses from the upstream (e.g. 103 Early Hints) are not relayed.
 */

/**
 * undici 7's Request reads `servername` from the dispatch options (it is what
 * the connection is keyed and TLS-named by) though its DispatchOptions type
 * leaves it out; test/gateway/proxy-https.test.ts pins the behaviour.
 */
type UpstreamDispatch = Dispatcher.DispatchOptions & { servername?: string | undefined }

/** Everything about a route that does not change per request. */
interface RoutePlan {
  readonly name: string
  readonly pool: Pool
  readonly ws: WebSocketUpstream
  /** The upstream URL's own path without a trailing slash (`''` for `/`). */
  readonly basePath: string
  readonly headers: RequestHeaderPolicy
  readonly maxBodyBytes: number
  /** The upstream origin for logs (userinfo redacted). */
  readonly label: string
  /**
   * TLS server name for an https upstream (its own host name, or its address
   * for an IP literal), sent with every request; undefined for http.
   */
  readonly servername: string | undefined
}

/** The request body went past `max_body` while streaming. */
class BodyTooLarge extends Error {
  constructor() {
    super('request body exceeds max_body')
    this.name = 'BodyTooLarge'
  }
}

/** The client went away; the upstream exchange is aborted with this. */
class ClientGone extends Error {
  constructor() {
    super('client closed the connection')
    this.name = 'ClientGone'
  }
}

/** Counts a chunked request body as it streams and fails once it exceeds the limit. */
class BodyLimit extends Transform {
  #left: number

  constructor(limit: number) {
    super()
    this.#left = limit
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#left -= chunk.length
    if (this.#left < 0) callback(new BodyTooLarge())
    else callback(null, chunk)
  }
}

/** undici error codes that mean "the upstream took too long" rather than "could not be reached". */
const TIMEOUT_CODES: ReadonlySet<string> = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'ETIMEDOUT'])

function errorCode(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string') return code
    const name = (err as { name?: unknown }).name
    if (typeof name === 'string') return name
  }
  return 'unknown'
}

/** Map an upstream failure before the response started to the error the client sees. */
function upstreamFailure(err: unknown): OAuthError {
  if (err instanceof BodyTooLarge) return new PayloadTooLarge()
  if (TIMEOUT_CODES.has(errorCode(err))) return new GatewayTimeout()
  return new BadGateway()
}

/**
 * The response's raw header (or trailer) list. undici 7 leaves the list it
 * parsed on the controller, so it is read once, straight into the flat list
 * `res.writeHead` takes, keeping the upstream's name case, order and bytes;
 * the parsed object undici also hands over is the fallback for a dispatcher
 * that does not expose the raw list.
 */
function rawList(raw: Dispatcher.DispatchController['rawHeaders'], parsed: IncomingHttpHeaders | null): readonly (Buffer | string)[] | null {
  if (Array.isArray(raw)) return raw
  if (parsed === null) return null
  const flat: string[] = []
  for (const [name, value] of Object.entries(parsed)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const v of value) flat.push(name, v)
    else flat.push(name, value)
  }
  return flat
}

/**
 * One request's exchange with the upstream: an undici dispatch handler that
 * writes the upstream's answer to `res`.
 *
 * It implements undici's current handler interface (onRequestStart,
 * onResponseStart, onResponseData, onResponseEnd, onResponseError), the only
 * one undici 8 keeps; undici 7 (the newest major that still runs on Node 20)
 * serves it through its adapter. Backpressure is the controller's
 * pause()/resume(), the abort is controller.abort().
 */
class Exchange implements Dispatcher.DispatchHandler, ResponseCloseListener {
  readonly #req: IncomingMessage
  readonly #res: ServerResponse
  readonly #plan: RoutePlan
  /** The request's context; its logger is only bound when something is logged. */
  readonly #ctx: RequestContext
  /** A chunked request body being counted against max_body, to release on close. */
  readonly #limit: BodyLimit | null
  /** Called once when the response closes (the proxy's in-flight count). */
  readonly #done: () => void
  /** Pauses, resumes and aborts the upstream exchange; set when undici starts it. */
  #controller: Dispatcher.DispatchController | null = null
  /** The upstream exchange has ended (completed or failed). */
  #settled = false
  #clientGone = false
  #paused = false

  constructor(req: IncomingMessage, res: ServerResponse, plan: RoutePlan, ctx: RequestContext, limit: BodyLimit | null, done: () => void) {
    this.#req = req
    this.#res = res
    this.#plan = plan
    this.#ctx = ctx
    this.#limit = limit
    this.#done = done
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#clientGone) controller.abort(new ClientGone())
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusText?: string): void {
    if (statusCode < 200) return
    try {
      const out = responseHeaderList(rawList(controller.rawHeaders, headers))
      // Ours, not the upstream's (responseHeaderList dropped that): it is the id our logs carry.
      out.push('x-request-id', this.#ctx.id)
      if (statusText) this.#res.writeHead(statusCode, statusText, out)
      else this.#res.writeHead(statusCode, out)
    } catch (err) {
      // A header Node refuses to write (invalid characters): the upstream's answer is unusable.
      controller.abort(err instanceof Error ? err : new Error('invalid upstream response'))
    }
  }

  /** Pauses the upstream until the client drained what it has. */
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#res.write(chunk)) return
    controller.pause()
    if (!this.#paused) {
      this.#paused = true
      // Bound here, not per Exchange: most responses never wait for a drain.
      this.#res.once('drain', () => {
        this.#paused = false
        controller.resume()
      })
    }
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.#settled = true
    const res = this.#res
    // Node emits trailers only on a chunked response, which is what an
    // upstream that sends trailers produces once Transfer-Encoding is dropped.
    const raw = rawList(controller.rawTrailers, trailers)
    if (raw !== null && raw.length > 0) {
      try {
        res.addTrailers(headerPairs(responseHeaderList(raw)))
      } catch {
        // An invalid trailer is dropped; the body already went out complete.
      }
    }
    res.end()
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#settled = true
    const res = this.#res
    if (this.#clientGone || err instanceof ClientGone || res.destroyed) return
    if (res.headersSent) {
      // Reset mid-body: the client must not mistake a truncated body for a whole one.
      this.#ctx.log.warn({ route: this.#plan.name, upstream: this.#plan.label, code: errorCode(err) }, 'upstream failed mid-response')
      res.destroy()
      return
    }
    const failure = upstreamFailure(err)
    if (failure.status !== 413) {
      this.#ctx.log.warn({ route: this.#plan.name, upstream: this.#plan.label, code: errorCode(err), status: failure.status }, 'upstream request failed')
    }
    // An unread request body would otherwise be drained (or stall) before the
    // connection could serve another request.
    sendErrorWithId(res, this.#ctx.id, failure, this.#req.complete ? {} : { headers: { connection: 'close' } })
  }

  /** The request's body timed out; the dispatcher answers 408: abort the upstream exchange first. */
  onRequestAbandoned(): void {
    if (this.#settled) return
    this.#clientGone = true
    this.#controller?.abort(new ClientGone())
  }

  /** `res` closed: finished normally, or the client went away first. */
  onResponseClose(): void {
    if (this.#limit !== null) {
      this.#req.unpipe(this.#limit)
      this.#limit.destroy()
    }
    this.#done()
    if (this.#settled || this.#res.writableFinished) return
    this.#clientGone = true
    this.#controller?.abort(new ClientGone())
  }
}

/**
 * Routes share a Pool when they reach the same origin with the same options
 * (CA bundle and timeouts).
 */
function poolKey(origin: string, caFile: string | null, timeouts: RouteConfig['timeouts']): string {
  return `${origin}\n${caFile ?? ''}\n${timeouts.connectMs}\n${timeouts.headersMs}\n${timeouts.idleMs}`
}

function readCa(route: RouteConfig): string | null {
  if (route.upstreamCaFile === null) return null
  try {
    return readFileSync(route.upstreamCaFile, 'utf8')
  } catch (err) {
    throw new Error(`route ${route.name}: cannot read upstream_ca ${route.upstreamCaFile}: ${errorCode(err)}`)
  }
}

/**
 * The TLS server name is the upstream's, never the client's Host. undici
 * derives it from a request's Host header when none is given, which with
 * `preserve_host` would check the upstream certificate against whatever
 * host the client named and reconnect whenever that changed; so every
 * request to an https upstream names it. For an IP-literal upstream that
 * name is only a constant for undici's bookkeeping: this connector drops it,
 * so no SNI is sent (RFC 6066 3 allows host names only) and the certificate
 * is checked against the address.
 */
function withoutServername(connect: buildConnector.connector): buildConnector.connector {
  return (options, callback) => connect({ ...options, servername: undefined }, callback)
}

/** `ws:` and `wss:` upstreams are reached over http/https like any other. */
function httpOrigin(url: URL): string {
  if (url.protocol === 'ws:') return `http://${url.host}`
  if (url.protocol === 'wss:') return `https://${url.host}`
  return url.origin
}

/**
 * Forwards authorized requests to route upstreams. Built once per Runtime
 * (pools, CA bundles, header rules and the trusted-proxy matcher are all
 * precomputed); `close()` releases it after a reload swapped it out.
 */
export class UpstreamProxy {
  readonly #plans = new Map<RouteConfig, RoutePlan>()
  readonly #byName = new Map<string, RoutePlan>()
  readonly #pools: Pool[] = []
  readonly #log: Logger
  #inFlight = 0
  #idle: (() => void) | null = null
  #closing: Promise<void> | null = null

  /**
   * @throws Error when a route's upstream URL is not http(s)/ws(s), its CA file
   *   cannot be read, or a `trusted_proxies` entry is not an address or range.
   */
  constructor(routes: readonly RouteConfig[], gateway: GatewayConfig, log: Logger) {
    this.#log = log
    const trusted = new TrustedProxies(gateway.trustedProxies)
    const defaults = gateway.identityHeaders
    const alsoStrip = [defaults.subject, defaults.clientId, defaults.scope, defaults.issuer]
    const pools = new Map<string, Pool>()
    const sockets = new Map<string, WebSocketUpstream>()

    // Everything that can throw comes before the first pool is opened, so a
    // refused build leaves no pool behind.
    const cas = routes.map((route) => {
      if (!['http:', 'https:', 'ws:', 'wss:'].includes(new URL(route.upstream).protocol)) {
        throw new Error(`route ${route.name}: upstream must be an http(s) or ws(s) URL`)
      }
      return readCa(route)
    })
    for (const [i, route] of routes.entries()) {
      const url = new URL(route.upstream)
      const ca = cas[i] ?? null
      const origin = httpOrigin(url)
      const key = poolKey(origin, route.upstreamCaFile, route.timeouts)
      const secure = origin.startsWith('https:')
      const upstreamName = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
      const ipLiteral = isIP(upstreamName) !== 0
      let pool = pools.get(key)
      if (pool === undefined) {
        const tls = { timeout: route.timeouts.connectMs, ...(ca !== null ? { ca } : {}) }
        pool = new Pool(origin, {
          connect: secure && ipLiteral ? withoutServername(buildConnector(tls)) : tls,
          headersTimeout: route.timeouts.headersMs,
          bodyTimeout: route.timeouts.idleMs,
        })
        pools.set(key, pool)
        this.#pools.push(pool)
      }
      const handshakeTimeoutMs = route.timeouts.connectMs + route.timeouts.headersMs
      const wsKey = `${key}\n${handshakeTimeoutMs}`
      let ws = sockets.get(wsKey)
      if (ws === undefined) {
        ws = new WebSocketUpstream({ url, ca, handshakeTimeoutMs })
        sockets.set(wsKey, ws)
      }
      const basePath = url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname
      const plan: RoutePlan = {
        name: route.name,
        pool,
        ws,
        basePath,
        headers: new RequestHeaderPolicy({
          identityHeaders: route.identityHeaders,
          alsoStrip,
          forwardAuthorization: route.forwardAuthorization,
          preserveHost: route.preserveHost,
          upstreamHost: url.host,
          trustedProxies: trusted,
        }),
        maxBodyBytes: route.maxBodyBytes,
        label: redactUrl(origin),
        servername: secure ? upstreamName : undefined,
      }
      this.#plans.set(route, plan)
      this.#byName.set(route.name, plan)
    }
  }

  /** By the RouteConfig object the gateway matched (the same Runtime's config), else by name. */
  #plan(route: RouteConfig): RoutePlan | undefined {
    return this.#plans.get(route) ?? this.#byName.get(route.name)
  }

  /**
   * Forward one authorized request; answers the client in every case
   * (errors via sendError): 413 when the body exceeds the route's `max_body`,
   * 502 when the upstream cannot be reached or resets before answering, 504
   * when connecting or the response headers take too long. A failure after
   * the response started destroys the client connection. Sets
   * `ctx.closeListener`, which must be told when the response closes.
   */
  forward(req: IncomingMessage, res: ServerResponse, fwd: ForwardRequest, ctx: RequestContext): void {
    // The client left while the request was judged (a signature or store
    // lookup not cached yet). Its response has already emitted 'close', so
    // nothing would ever end an exchange started now: it would stay counted
    // in flight and hold every later close() for its full timeout. Likewise
    // a request already answered meanwhile (its body timed out: 408), or
    // whose connection can no longer carry an answer.
    if (res.destroyed || res.writableEnded || !req.socket.writable) return
    const plan = this.#plan(fwd.route)
    if (plan === undefined) {
      ctx.log.error({ route: fwd.route.name }, 'no upstream plan for route')
      sendErrorWithId(res, ctx.id, new ServerError())
      return
    }

    let body: Buffer | Readable | null = null
    let limit: BodyLimit | null = null
    let contentLength: string | null = null
    if (fwd.body !== null) {
      if (fwd.body.length > plan.maxBodyBytes) {
        sendErrorWithId(res, ctx.id, new PayloadTooLarge())
        return
      }
      body = fwd.body.length > 0 ? fwd.body : null
      contentLength = String(fwd.body.length)
    } else if (req.headers['transfer-encoding'] !== undefined) {
      limit = new BodyLimit(plan.maxBodyBytes)
      body = req.pipe(limit)
    } else {
      const declared = req.headers['content-length']
      if (declared !== undefined) {
        // Node's parser delivers exactly Content-Length bytes, so checking the
        // declared size up front is enough: nothing is counted per chunk.
        if (Number(declared) > plan.maxBodyBytes) {
          sendErrorWithId(res, ctx.id, new PayloadTooLarge(), { headers: { connection: 'close' } })
          return
        }
        contentLength = declared
        if (Number(declared) > 0) body = req
      }
    }

    // The body is wanted now: a client waiting on `Expect: 100-continue` is invited to send it.
    if (body === req || (limit !== null && body === limit)) continueIfExpected(req)
    const headers: FlatHeaders = plan.headers.build(req, fwd.identity, contentLength, false)
    const path = plan.basePath + fwd.path + (fwd.query === '' ? '' : '?' + fwd.query)
    const exchange = new Exchange(req, res, plan, ctx, limit, this.#onExchangeDone)
    this.#inFlight++
    ctx.closeListener = exchange
    // Header and body timeouts are the pool's own (pools are per timeout
    // set): per-request timeout options cost undici a timer update each.
    const options: UpstreamDispatch = { path, method: req.method ?? 'GET', headers, body, servername: plan.servername }
    plan.pool.dispatch(options, exchange)
  }

  readonly #onExchangeDone = (): void => this.#done()

  /** Exchanges started and not yet closed (what close() waits for). */
  get inFlight(): number {
    return this.#inFlight
  }

  #done(): void {
    this.#inFlight--
    if (this.#inFlight === 0 && this.#idle !== null) this.#idle()
  }

  /**
   * Forward an authorized WebSocket upgrade (RFC 6455 4.1) over node:http
   * (websocket.ts), with the same header rules as HTTP and the path the
   * policy judged. A failure before the upstream answers is a minimal 502
   * (504 on timeout) written to the socket, which is then closed.
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, fwd: ForwardRequest, ctx: RequestContext): void {
    // As in forward(): a client that left while it was judged gets nothing sent for it.
    if (socket.destroyed) return
    // Only a WebSocket handshake (a GET asking for `websocket`) is relayed;
    // any other upgrade is dropped, as it always was.
    if (req.method !== 'GET' || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      socket.destroy()
      return
    }
    const plan = this.#plan(fwd.route)
    if (plan === undefined || this.#closing !== null) {
      errorOnSocket(socket, plan === undefined ? new ServerError() : new BadGateway(), {}, ctx.id)
      return
    }
    const upstream = {
      method: 'GET',
      path: plan.basePath + fwd.path + (fwd.query === '' ? '' : '?' + fwd.query),
      headers: headerObject(plan.headers.build(req, fwd.identity, null, true)),
    }
    try {
      plan.ws.forward(upstream, socket, head, ctx.log)
    } catch (err) {
      // node:http refuses a header value synchronously (e.g. a control
      // character in a token's sub): nothing was sent upstream.
      ctx.log.warn({ route: plan.name, code: errorCode(err) }, 'websocket upstream request refused')
      errorOnSocket(socket, new BadGateway(), {}, ctx.id)
    }
  }

  /**
   * Close every pool after in-flight requests finish (used when a Runtime is
   * swapped out by a reload). Open WebSocket tunnels are not cut: they hold
   * their own connections and end when either side closes.
   */
  close(timeoutMs = 10_000): Promise<void> {
    this.#closing ??= (async () => {
      // Bounded: an exchange that never settles (a stuck upstream) must not
      // keep a retired runtime, or a shutting-down process, alive forever.
      const deadline = Date.now() + timeoutMs
      const until = (ms: number): Promise<void> =>
        new Promise((resolve) => {
          const timer = setTimeout(resolve, Math.max(0, ms))
          timer.unref()
        })
      if (this.#inFlight > 0) {
        await Promise.race([new Promise<void>((resolve) => (this.#idle = resolve)), until(deadline - Date.now())])
      }
      const closed = Promise.all(this.#pools.map((pool) => pool.close())).then(() => true)
      const inTime = await Promise.race([closed, until(deadline - Date.now()).then(() => false)])
      if (!inTime) {
        this.#log.warn({ pools: this.#pools.length, in_flight: this.#inFlight }, 'upstream pools did not drain in time; destroying them')
        await Promise.all(this.#pools.map((pool) => pool.destroy()))
      }
      this.#log.debug({ pools: this.#pools.length }, 'upstream pools closed')
    })()
    return this.#closing
  }
}
