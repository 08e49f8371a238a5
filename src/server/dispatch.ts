import { publicAdminPath } from '../admin/api.js'
import { handleAdmin } from '../admin/serve.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Duplex } from 'node:stream'
import type { Shared } from '../context.js'
import { NotFound, RequestTimeout } from '../errors.js'
import { announcesBody, watchBody, type BodyTimeout } from '../http/body-timeouts.js'
import { answerFailure, reportAbortedBody, type Face, type FailureReporting } from '../http/failure.js'
import { errorOnSocket, sendErrorWithId } from '../http/reply.js'
import { answeredInFull, assertAuthorityAgreesWithHost, assertHttp1Method, cutResponse, http2HasBody, isHttp2 } from '../http/http2-request.js'
import { assertHostWithoutUserinfo, assertSingleHost, assertTargetAgreesWithHost, assertTargetLength, assertWebSocketUpgrade } from '../http/request-checks.js'
import { writeAccessLine, type Logger } from '../log.js'
import type { Runtime } from '../runtime.js'
import { trackRequest } from './connection.js'
import { RequestIds, type Context } from './context.js'

/** Where a response keeps its request's Context, for the one shared close listener. */
const CONTEXT = Symbol('bearward.context')
type ResponseWithContext = ServerResponse & { [CONTEXT]?: Context }

/**
 * Every request and upgrade on `listen`: its Context, the checks both faces
 * share, the face that owns it (authorization server, then gateway, then
 * 404), the one failure path for what they let through, body timeouts, and
 * on close the metrics, the access line and the Runtime's drain count.
 */
export class RequestDispatcher {
  readonly #shared: Shared
  /** The access line's logger (no redaction pass: it logs only fields we build). */
  readonly #accessLog: Logger
  readonly #ids = new RequestIds()
  /** How failures the dispatcher catches are reported, by the face the request went to. */
  readonly #failures: Readonly<Record<Face, FailureReporting>>
  /**
   * The 'close' listener of every response, one function for all: it finds
   * the request's Context on the response, so no closure is made per request.
   */
  readonly #responseClosed: (this: ResponseWithContext) => void

  constructor(shared: Shared, accessLog: Logger) {
    this.#shared = shared
    this.#accessLog = accessLog
    this.#failures = {
      as: { face: 'as', metrics: shared.metrics, rootLog: shared.log, quiet: false },
      gateway: { face: 'gateway', metrics: shared.metrics, rootLog: shared.log, quiet: true },
    }
    // The listener's own `this` is the response; the dispatcher is reached through `dispatcher`.
    const dispatcher = this
    this.#responseClosed = function (this: ResponseWithContext): void {
      const ctx = this[CONTEXT]
      if (ctx !== undefined) dispatcher.#onClose(this.req, this, ctx)
    }
  }

  #context(req: IncomingMessage, runtime: Runtime): Context {
    return this.#ids.contextFor(req, runtime.config.trustIncomingRequestId, this.#shared.log, this.#shared.tracing)
  }

  /** One request, served by `runtime` from start to end whatever reloads happen meanwhile. */
  onRequest(req: IncomingMessage, res: ServerResponse, runtime: Runtime): void {
    const ctx = this.#context(req, runtime)
    runtime.arrive()
    ctx.runtime = runtime
    // The one close listener of the request: metrics, the access log, the
    // runtime's drain count, and whoever set ctx.closeListener (the proxy).
    ;(res as ResponseWithContext)[CONTEXT] = ctx
    res.on('close', this.#responseClosed)
    // HTTP/2 has no connection-wide request to track, and frames its bodies itself.
    const h2 = isHttp2(req)
    if (!h2) trackRequest(req, res)
    if (h2 ? http2HasBody(req) : announcesBody(req)) {
      watchBody(req, res, runtime.config.clientTimeouts, (which) => this.#bodyTimedOut(req, res, ctx, which))
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
    else if (!res.writableFinished) cutResponse(res)
    else req.socket.destroy()
  }

  #onClose(req: IncomingMessage, res: ServerResponse, ctx: Context): void {
    // The client left before its body was complete (a reader rejected with
    // ClientAborted, or the proxy was streaming it): reported here, once.
    if (!req.complete && !answeredInFull(res)) reportAbortedBody(ctx, this.#failures[ctx.routeLabel.startsWith('as:') ? 'as' : 'gateway'])
    ctx.closeListener?.onResponseClose()
    const accessSub = ctx.runtime?.config.log.accessSub ?? true
    ctx.runtime?.depart()
    ctx.runtime = null
    const seconds = (performance.now() - ctx.started) / 1000
    const status = answeredInFull(res) ? res.statusCode : null
    this.#shared.metrics.observeResponse(ctx.routeLabel, status, seconds)
    // One string, no object per request (log.ts); the line is buffered with every other log line.
    writeAccessLine(
      this.#accessLog,
      ctx.id,
      ctx.trace.traceId,
      req.method ?? 'GET',
      ctx.rawPath,
      ctx.routeLabel,
      res.statusCode,
      Math.round(seconds * 10000) / 10,
      ctx.clientId,
      accessSub ? ctx.sub : null,
      ctx.refusal,
    )
    if (ctx.trace.span !== null) {
      const httpRoute = ctx.httpRoute ?? (ctx.routeLabel.startsWith('as:') ? ctx.rawPath : null)
      this.#shared.tracing.finish(ctx.trace, req.method ?? 'GET', ctx.rawPath, httpRoute, ctx.routeLabel, status, ctx.clientId)
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
      // HTTP/1.1's parser already refused any other method.
      if (isHttp2(req)) assertHttp1Method(req)
      assertSingleHost(req)
      assertAuthorityAgreesWithHost(req)
      assertHostWithoutUserinfo(req)
      assertTargetLength(req)
      assertTargetAgreesWithHost(req, ctx.targetHost)
      // `admin_api.public_path`: the admin API and pages on this listener too (src/admin/serve.ts); no route overlaps it (refused at load).
      const adminPath = publicAdminPath(runtime.config.adminApi, ctx.rawPath)
      if (adminPath !== null) {
        res.setHeader('x-request-id', ctx.id)
        ctx.routeLabel = 'admin_api'
        const publicUrl = new URL(runtime.config.publicUrl)
        const place = { path: adminPath, origin: publicUrl.origin, mount: runtime.config.adminApi?.publicPath ?? '', secure: publicUrl.protocol === 'https:' }
        handleAdmin(req, res, runtime.asContext, place).catch((err: unknown) => this.#fail(res, ctx, err, 'as'))
        return
      }
      const as = runtime.as
      if (as !== null && (as.owns === undefined || as.owns(ctx.rawPath))) {
        res.setHeader('x-request-id', ctx.id)
        // Only the endpoints find their span through async context; the gateway is handed it (telemetry/tracing.ts).
        const handling = ctx.trace.span === null ? as.handle(req, res, ctx) : this.#shared.tracing.within(ctx.trace, () => as.handle(req, res, ctx))
        handling.then(
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

  /** One upgrade request: the same checks, then the gateway (the authorization server takes none). */
  onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: Runtime): void {
    const leave = runtime.enter()
    socket.on('close', leave)
    const ctx = this.#context(req, runtime)
    try {
      assertWebSocketUpgrade(req)
      assertSingleHost(req)
      assertHostWithoutUserinfo(req)
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
}
