import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Dispatcher } from 'undici'
import type { RequestContext, ResponseCloseListener } from '../../context.js'
import { sendErrorWithId } from '../../http/reply.js'
import { isGrpcRequest } from '../../http/grpc.js'
import { answeredInFull, cannotAnswer, cutResponse, isHttp2 } from '../../http/http2-request.js'
import { clientFields } from '../client-fields.js'
import { headerObject, headerPairs, type FlatHeaders } from '../flat-headers.js'
import { responseHeaderList } from '../response-headers.js'
import { dropOwnSetCookies } from '../own-cookies.js'
import type { EndReason, Endable, OpenExchange } from '../open-exchanges.js'
import type { ConcurrencySlot } from '../concurrency.js'
import { ConcurrencyLimitReached } from '../../errors.js'
import type { BodyLimit } from './body-limit.js'
import { errorCode, upstreamFailure } from './failure.js'
import type { UpstreamPlan } from '../plan/upstreams.js'
import type { ResponseRewriter } from './rewrite.js'
import { replaceFields } from '../limits/fields.js'

/** The client went away; the upstream exchange is aborted with this. */
class ClientGone extends Error {
  constructor() {
    super('client closed the connection')
    this.name = 'ClientGone'
  }
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
  // Over HTTP/2 undici leaves node:http2's header object there instead, and
  // hands the handler an empty one for the trailers (undici 7.30).
  const fields = raw !== null && raw !== undefined && typeof raw === 'object' ? (raw as IncomingHttpHeaders) : parsed
  if (fields === null) return null
  const flat: string[] = []
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const v of value) flat.push(name, v)
    else flat.push(name, value)
  }
  return flat
}

/** The status fields of a gRPC answer (PROTOCOL-HTTP2.md, Trailers). */
const GRPC_STATUS_FIELDS: ReadonlySet<string> = new Set(['grpc-status', 'grpc-message', 'grpc-status-details-bin'])

/**
 * A gRPC upstream that fails a call at once answers Trailers-Only: its
 * status fields in the response head, which ends the stream. Relayed as a
 * head and then an end of stream, a gRPC client would take them for
 * metadata and find no status; so they are taken out of `head` (in place)
 * and returned, to be sent as the trailers they stand for. null when the
 * head has none (an ordinary answer, whose status comes in its trailers).
 */
function takeGrpcStatus(head: FlatHeaders): FlatHeaders | null {
  let moved: FlatHeaders | null = null
  for (let i = 0; i < head.length; ) {
    const name = String(head[i]).toLowerCase()
    if (GRPC_STATUS_FIELDS.has(name)) {
      moved ??= []
      moved.push(name, head[i + 1] as string)
      head.splice(i, 2)
    } else i += 2
  }
  return moved
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
export class Exchange implements Dispatcher.DispatchHandler, ResponseCloseListener, Endable {
  readonly #req: IncomingMessage
  readonly #res: ServerResponse
  readonly #plan: UpstreamPlan
  /** The request's context; its logger is only bound when something is logged. */
  readonly #ctx: RequestContext
  /** A chunked request body being counted against max_body, to release on close. */
  readonly #limit: BodyLimit | null
  /** Called once when the response closes (the proxy's in-flight count). */
  readonly #done: () => void
  /** Rewrites the answer on its way (the MCP list filter); null: passed through as is. */
  readonly #rewriter: ResponseRewriter | null
  /** Pauses, resumes and aborts the upstream exchange; set when undici starts it. */
  #controller: Dispatcher.DispatchController | null = null
  /** The upstream exchange has ended (completed or failed). */
  #settled = false
  #clientGone = false
  #paused = false
  /** Its entry among the gateway's open exchanges (a request with a token), forgotten on close. */
  #open: OpenExchange | null = null
  /** The request is a gRPC call (http/grpc.ts). */
  readonly #grpc: boolean
  /** The grpc-* status fields of a Trailers-Only upstream answer, sent as trailers at the end; null: none. */
  #grpcTrailers: FlatHeaders | null = null
  /** The client speaks HTTP/2: the fields relayed are those it can carry (client-fields.ts). */
  readonly #http2: boolean
  /** The route's RateLimit fields (gateway/limits/), which replace the upstream's of the same names; null: none. */
  readonly #limitFields: FlatHeaders | null
  /** The route's concurrency slot, told of the answer (an event stream moves it to the streams); null: none. */
  readonly #slot: ConcurrencySlot | null
  /** On a pooled route, the target of the current attempt (pool-dispatch.ts), named in logs; null: the plan's one upstream. */
  upstream: string | null = null

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    plan: UpstreamPlan,
    ctx: RequestContext,
    limit: BodyLimit | null,
    done: () => void,
    rewriter: ResponseRewriter | null = null,
    slot: ConcurrencySlot | null = null,
    limitFields: FlatHeaders | null = null,
  ) {
    this.#rewriter = rewriter
    this.#slot = slot
    this.#limitFields = limitFields
    this.#req = req
    this.#res = res
    this.#plan = plan
    this.#ctx = ctx
    this.#limit = limit
    this.#done = done
    this.#grpc = isGrpcRequest(req)
    this.#http2 = isHttp2(req)
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#clientGone) controller.abort(new ClientGone())
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusText?: string): void {
    if (statusCode < 200) return
    if (this.#slot !== null && !this.#slot.answered(headers['content-type'])) {
      // An event stream with no stream slot free: not relayed; onResponseError answers the streams' 503.
      controller.abort(new ConcurrencyLimitReached('streams'))
      return
    }
    try {
      const relayed = responseHeaderList(rawList(controller.rawHeaders, headers))
      dropOwnSetCookies(relayed, this.#ctx, this.#plan.name)
      const out = this.#http2 ? clientFields(relayed, true, false) : relayed
      // Ours, not the upstream's (responseHeaderList dropped that): it is the id our logs carry.
      out.push('x-request-id', this.#ctx.id)
      if (this.#limitFields !== null) replaceFields(out, this.#limitFields)
      if (this.#grpc) this.#grpcTrailers = takeGrpcStatus(out)
      if (this.#rewriter !== null) this.#rewriter.writeHead(this.#res, statusCode, statusText, out)
      // HTTP/2 has no reason phrase (RFC 9113 8.3.2); node:http2 warns at one.
      else if (statusText && !this.#http2) this.#res.writeHead(statusCode, statusText, out)
      else this.#res.writeHead(statusCode, out)
    } catch (err) {
      // A header Node refuses to write (invalid characters): the upstream's answer is unusable.
      controller.abort(err instanceof Error ? err : new Error('invalid upstream response'))
    }
  }

  /** Pauses the upstream until the client drained what it has. */
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    let written: boolean
    try {
      written = this.#rewriter === null ? this.#res.write(chunk) : this.#rewriter.write(this.#res, chunk)
    } catch (err) {
      controller.abort(err instanceof Error ? err : new Error('response rewrite failed'))
      return
    }
    if (written) return
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
    let raw = rawList(controller.rawTrailers, trailers)
    // A gRPC Trailers-Only answer's status, moved out of its head: sent as the trailers it stands for.
    if ((raw === null || raw.length === 0) && this.#grpcTrailers !== null) raw = this.#grpcTrailers
    if (raw !== null && raw.length > 0) {
      // Only what the client's protocol can carry: node:http2 would throw on the rest where nothing catches it.
      const fields = clientFields(responseHeaderList(raw), this.#http2, true)
      dropOwnSetCookies(fields, this.#ctx, this.#plan.name)
      try {
        // node:http2's addTrailers takes an object only (a list of pairs would be sent as fields named 0, 1...).
        if (fields.length > 0) res.addTrailers(this.#http2 ? headerObject(fields) : headerPairs(fields))
      } catch {
        // What node:http still refuses is dropped; the body already went out complete.
      }
    }
    if (this.#rewriter === null) {
      res.end()
      return
    }
    try {
      this.#rewriter.end(res)
    } catch (err) {
      this.#ctx.log.warn(
        { route: this.#plan.name, upstream: this.upstream ?? this.#plan.label, code: errorCode(err) },
        'upstream response could not be rewritten',
      )
      if (res.headersSent) cutResponse(res)
      else sendErrorWithId(res, this.#ctx.id, upstreamFailure(err))
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#settled = true
    const res = this.#res
    // node:http2's compatibility response has no `destroyed`: its stream tells.
    if (this.#clientGone || err instanceof ClientGone || res.destroyed || (this.#http2 && cannotAnswer(this.#req, res))) return
    if (res.headersSent) {
      // Reset mid-body: the client must not mistake a truncated body for a whole one.
      this.#ctx.log.warn({ route: this.#plan.name, upstream: this.upstream ?? this.#plan.label, code: errorCode(err) }, 'upstream failed mid-response')
      cutResponse(res)
      return
    }
    const failure = upstreamFailure(err)
    if (failure.status !== 413 && !(err instanceof ConcurrencyLimitReached)) {
      this.#ctx.log.warn(
        { route: this.#plan.name, upstream: this.upstream ?? this.#plan.label, code: errorCode(err), status: failure.status },
        'upstream request failed',
      )
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

  /** Registered among the open exchanges: ended when its token is revoked or expires. */
  track(open: OpenExchange): void {
    this.#open = open
  }

  /**
   * Its token was revoked or expired: the response is cut (a chunked body
   * ends without its last chunk, so the client cannot take it for whole) and
   * the close that follows aborts the upstream exchange.
   */
  endExchange(_reason: EndReason): void {
    cutResponse(this.#res)
  }

  /** `res` closed: finished normally, or the client went away first. */
  onResponseClose(): void {
    this.#open?.close()
    if (this.#limit !== null) {
      this.#req.unpipe(this.#limit)
      this.#limit.destroy()
    }
    this.#done()
    // answeredInFull: an HTTP/2 stream the client reset also reports writableFinished.
    if (this.#settled || answeredInFull(this.#res)) return
    this.#clientGone = true
    this.#controller?.abort(new ClientGone())
  }
}
