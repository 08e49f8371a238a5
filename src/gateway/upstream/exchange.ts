import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Dispatcher } from 'undici'
import type { RequestContext, ResponseCloseListener } from '../../context.js'
import { sendErrorWithId } from '../../http/reply.js'
import { headerPairs, responseHeaderList } from '../headers.js'
import type { EndReason, Endable, OpenExchange } from '../open-exchanges.js'
import type { BodyLimit } from './body-limit.js'
import { errorCode, upstreamFailure } from './failure.js'
import type { RoutePlan } from './plan.js'
import type { ResponseRewriter } from './rewrite.js'

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
export class Exchange implements Dispatcher.DispatchHandler, ResponseCloseListener, Endable {
  readonly #req: IncomingMessage
  readonly #res: ServerResponse
  readonly #plan: RoutePlan
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

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    plan: RoutePlan,
    ctx: RequestContext,
    limit: BodyLimit | null,
    done: () => void,
    rewriter: ResponseRewriter | null = null,
  ) {
    this.#rewriter = rewriter
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
      if (this.#rewriter !== null) this.#rewriter.writeHead(this.#res, statusCode, statusText, out)
      else if (statusText) this.#res.writeHead(statusCode, statusText, out)
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
    const raw = rawList(controller.rawTrailers, trailers)
    if (raw !== null && raw.length > 0) {
      try {
        res.addTrailers(headerPairs(responseHeaderList(raw)))
      } catch {
        // An invalid trailer is dropped; the body already went out complete.
      }
    }
    if (this.#rewriter === null) {
      res.end()
      return
    }
    try {
      this.#rewriter.end(res)
    } catch (err) {
      this.#ctx.log.warn({ route: this.#plan.name, upstream: this.#plan.label, code: errorCode(err) }, 'upstream response could not be rewritten')
      if (res.headersSent) res.destroy()
      else sendErrorWithId(res, this.#ctx.id, upstreamFailure(err))
    }
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
    this.#res.destroy()
  }

  /** `res` closed: finished normally, or the client went away first. */
  onResponseClose(): void {
    this.#open?.close()
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
