import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex, Readable } from 'node:stream'
import type { Dispatcher, Pool } from 'undici'
import type { RequestContext } from '../../context.js'
import { BadGateway, OAuthError, PayloadTooLarge, ServerError } from '../../errors.js'
import { continueIfExpected } from '../../http/expect-continue.js'
import { answeredInFull, cannotAnswer, http2HasBody, isHttp2 } from '../../http/http2-request.js'
import { errorOnSocket, sendErrorWithId } from '../../http/reply.js'
import type { Logger } from '../../log.js'
import { formatTraceparent } from '../../telemetry/trace-context.js'
import { SpanKind, type Span, type Tracing } from '../../telemetry/tracing.js'
import { headerObject, type FlatHeaders } from '../flat-headers.js'
import type { UpstreamTrace } from '../headers.js'
import type { OpenExchanges } from '../open-exchanges.js'
import type { ForwardRequest } from '../forward-request.js'
import { BodyLimit } from './body-limit.js'
import { Drain } from './drain.js'
import { Exchange } from './exchange.js'
import { errorCode } from './failure.js'
import type { UpstreamPlan } from '../plan/upstreams.js'
import type { Balancer } from './balancer.js'
import { isConnectFailure, PoolDispatch, type PoolRequest } from './pool-dispatch.js'

/**
 * Forwarding: one authorized request in, one upstream exchange out.
 *
 * HTTP goes through one undici Pool per upstream origin (keep-alive
 * connections, docs/performance.md "Upstream requests go through undici pools") via
 * `pool.dispatch()` with a handler: no intermediate Readable per response,
 * and the upstream body is written to the client with backpressure
 * (RFC 9110 7.6 intermediaries). WebSocket upgrades go through node:http
 * (websocket.ts). Every failure is answered through `sendError`.
 *
 * This file admits a request (its body against `max_body`, the path and
 * headers the upstream sees) and hands it on; the rest of the upstream side
 * lives next to it, one concern a file: the route's plan carries its
 * upstream step (../plan/upstreams.ts: pool, header rules, body limit),
 * connector.ts (TLS without SNI for address upstreams),
 * body-limit.ts (a chunked body counted as it streams), exchange.ts (one
 * request's undici exchange), failure.ts (upstream errors to answers),
 * websocket.ts (the upgrade relay) and drain.ts (in-flight count and
 * closing the pools).
 *
 * `Expect: 100-continue`: the client gets `100 Continue` only once the
 * request was admitted and its body is about to be streamed (http/expect-continue.ts),
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

/**
 * Forwards authorized requests to route upstreams. Built once per Runtime
 * over the pools of the routes' plans; each request brings its route's
 * upstream step (ForwardRequest.upstream). `close()` releases the pools
 * after a reload swapped the Runtime out.
 */
export class UpstreamProxy {
  readonly #drain: Drain
  /** Where exchanges made with a token are registered, to end when it is revoked or expires; null: nowhere. */
  readonly #exchanges: OpenExchanges | null
  /** Records the upstream exchange as a client span of its request when spans are exported; null: never. */
  readonly #tracing: Tracing | null
  #closing: Promise<void> | null = null
  /** Pooled routes' balancers: their targets are released once the exchanges drained. */
  readonly #balancers: readonly Balancer[]

  /** @param pools every pool the plans' upstream steps use (plan/upstreams.ts), drained and closed by close() */
  constructor(
    pools: readonly Pool[],
    log: Logger,
    exchanges: OpenExchanges | null = null,
    tracing: Tracing | null = null,
    balancers: readonly Balancer[] = [],
  ) {
    this.#tracing = tracing
    this.#drain = new Drain(pools, log)
    this.#balancers = balancers
    this.#exchanges = exchanges
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
    const credential = this.#credential(fwd.upstream, req, fwd)
    if (credential instanceof Promise) {
      credential.then(
        (value) => this.#send(req, res, fwd, ctx, value),
        (err: unknown) => this.#credentialFailed(res, ctx, fwd, err),
      )
    } else {
      this.#send(req, res, fwd, ctx, credential)
    }
  }

  /**
   * The signed credential this request's upstream gets (`upstream_token`),
   * or null (passthrough, or no token: a passed-through preflight). Signing
   * is on the thread pool; a cached exchanged token is at hand at once.
   */
  #credential(plan: UpstreamPlan, req: IncomingMessage, fwd: ForwardRequest): string | Promise<string> | null {
    if (plan.credential === null || fwd.identity === null) return null
    try {
      return plan.credential.value({ token: fwd.token ?? null, identity: fwd.identity, method: req.method ?? 'GET', path: plan.basePath + fwd.path })
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** Nothing could be signed for the upstream: nothing is forwarded (never the request without it). */
  #credentialFailed(res: ServerResponse, ctx: RequestContext, fwd: ForwardRequest, err: unknown): void {
    if (res.headersSent || res.destroyed) return
    if (err instanceof OAuthError) {
      ctx.log.warn({ route: fwd.upstream.name, code: err.code }, 'no upstream credential for this token')
      sendErrorWithId(res, ctx.id, err, { realm: fwd.upstream.realm })
      return
    }
    ctx.log.error({ route: fwd.upstream.name, code: errorCode(err) }, 'upstream credential could not be signed')
    sendErrorWithId(res, ctx.id, new ServerError())
  }

  #send(req: IncomingMessage, res: ServerResponse, fwd: ForwardRequest, ctx: RequestContext, credential: string | null): void {
    // The client left while the request was judged (a signature or store
    // lookup not cached yet). Its response has already emitted 'close', so
    // nothing would ever end an exchange started now: it would stay counted
    // in flight and hold every later close() for its full timeout. Likewise
    // a request already answered meanwhile (its body timed out: 408), or
    // whose connection can no longer carry an answer.
    if (cannotAnswer(req, res)) return
    const plan = fwd.upstream

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
    } else if (req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] === undefined && isHttp2(req) && http2HasBody(req))) {
      // A chunked body, or an HTTP/2 one without a length (gRPC's): counted as it streams.
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
    const path = plan.basePath + fwd.path + (fwd.query === '' ? '' : '?' + fwd.query)
    const span = ctx.trace.span === null ? null : this.#upstreamSpan(req.method ?? 'GET', plan, fwd.path, ctx.trace.span)
    const headers: FlatHeaders = plan.headers.build(
      req,
      fwd.identity,
      contentLength,
      false,
      upstreamTrace(ctx, span),
      credential,
      fwd.authorizationDetails ?? null,
    )
    const done = span === null ? this.#drain.done : () => this.#endUpstreamSpan(span, res)
    const exchange = new Exchange(req, res, plan, ctx, limit, done, fwd.rewriter ?? null, fwd.slot ?? null, fwd.fields ?? null)
    this.#drain.started()
    ctx.closeListener = exchange
    // Header and body timeouts are the pool's own (pools are per timeout
    // set): per-request timeout options cost undici a timer update each.
    const options: UpstreamDispatch = { path, method: req.method ?? 'GET', headers, body, servername: plan.servername }
    if (plan.pool !== null) plan.pool.dispatch(options, exchange)
    else if (plan.balancer !== null) this.#dispatchPooled(plan, plan.balancer, { ...options, headers }, exchange, req, res, ctx)
    // After the dispatch: a token revoked meanwhile ends the exchange at once, as a client that left would.
    if (fwd.identity !== null && this.#exchanges !== null) exchange.track(this.#exchanges.open(exchange, fwd.identity, plan.name, ctx))
  }

  /**
   * A pooled route (pool-dispatch.ts): a target per attempt, another one
   * after a connect failure when the request may be sent again.
   */
  #dispatchPooled(
    plan: UpstreamPlan,
    balancer: Balancer,
    options: PoolRequest,
    exchange: Exchange,
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
  ): void {
    const attempt = new PoolDispatch(balancer, exchange, options, () => !cannotAnswer(req, res))
    const ready = balancer.ready
    if (ready !== null) {
      // A host name's first answer is not in yet (a Runtime just built): the request waits for it, once.
      void ready.then(() => {
        // The client left meanwhile: its response closed, which already counted the exchange out.
        if (!cannotAnswer(req, res)) this.#dispatchPooled(plan, balancer, options, exchange, req, res, ctx)
      })
      return
    }
    if (attempt.dispatch()) return
    // No target: no target name resolved yet, or a retired Runtime's balancer released them.
    ctx.log.warn({ route: plan.name }, 'upstream pool has no target to send to')
    // The Exchange answers a failure without its controller (none was ever made).
    exchange.onResponseError(null as unknown as Dispatcher.DispatchController, new Error('no upstream target'))
  }

  /** The upstream exchange's client span (HTTP client span conventions; the path only, never the query). */
  #upstreamSpan(method: string, plan: UpstreamPlan, path: string, parent: Span): Span | null {
    return (
      this.#tracing?.child(
        method,
        SpanKind.CLIENT,
        {
          'http.request.method': method,
          'server.address': plan.server.address,
          'server.port': plan.server.port,
          'url.path': plan.basePath + path,
          'bearward.route': plan.name,
        },
        parent,
      ) ?? null
    )
  }

  #endUpstreamSpan(span: Span, res: ServerResponse): void {
    if (answeredInFull(res)) span.setAttribute('http.response.status_code', res.statusCode)
    else span.setAttribute('error.type', 'aborted')
    span.end()
    this.#drain.done()
  }

  /** Exchanges started and not yet closed (what close() waits for). */
  get inFlight(): number {
    return this.#drain.inFlight
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
    const plan = fwd.upstream
    if (this.#closing !== null) {
      errorOnSocket(socket, new BadGateway(), {}, ctx.id)
      return
    }
    const credential = this.#credential(plan, req, fwd)
    if (credential instanceof Promise) {
      credential.then(
        (value) => {
          if (socket.destroyed) return
          this.#relay(req, socket, head, fwd, ctx, plan, value)
        },
        (err: unknown) => {
          const refusal = err instanceof OAuthError ? err : new ServerError()
          ctx.log.warn({ route: plan.name, code: errorCode(err) }, 'no upstream credential for this token')
          if (!socket.destroyed) errorOnSocket(socket, refusal, { realm: plan.realm }, ctx.id)
        },
      )
      return
    }
    this.#relay(req, socket, head, fwd, ctx, plan, credential)
  }

  #relay(req: IncomingMessage, socket: Duplex, head: Buffer, fwd: ForwardRequest, ctx: RequestContext, plan: UpstreamPlan, credential: string | null): void {
    const upstream = {
      method: 'GET',
      path: plan.basePath + fwd.path + (fwd.query === '' ? '' : '?' + fwd.query),
      headers: headerObject(plan.headers.build(req, fwd.identity, null, true, upstreamTrace(ctx, null), credential, fwd.authorizationDetails ?? null)),
    }
    // A pooled route balances upgrades as it does requests (eligible targets
    // only), and a handshake that cannot connect counts against the target's
    // health; it is not retried on another (docs/traffic.md).
    let ws = plan.ws
    let failed: ((code: string) => void) | null = null
    if (plan.balancer !== null) {
      const target = plan.balancer.pick(null)
      if (target === null) {
        errorOnSocket(socket, new BadGateway(), {}, ctx.id)
        return
      }
      ws = target.ws
      failed = (code) => {
        if (isConnectFailure(code)) target.connectFailed(code)
      }
      if (!plan.headers.preservesHost) upstream.headers.host = target.host
    }
    try {
      const tunnel = ws.forward(upstream, socket, head, ctx.log, failed)
      if (fwd.identity !== null && this.#exchanges !== null) tunnel.track(this.#exchanges.open(tunnel, fwd.identity, plan.name, ctx))
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
   * their own connections and end when either side closes, or when their
   * token is revoked or expires (the open-exchange registry outlives this).
   */
  close(timeoutMs = 10_000): Promise<void> {
    this.#closing ??= this.#drain.close(timeoutMs).then(async () => {
      await Promise.all(this.#balancers.map((b) => b.close()))
    })
    return this.#closing
  }
}

/** What the upstream is told of the trace: ours, with our client span (when recorded) or our server span as the parent. */
function upstreamTrace(ctx: RequestContext, span: Span | null): UpstreamTrace {
  return { traceparent: formatTraceparent(ctx.trace, span === null ? ctx.trace.spanId : span.spanId), tracestate: ctx.trace.tracestate }
}
