import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { clientErrorAnswer, type ParserError } from '../http/client-error.js'
import { errorOnSocket } from '../http/reply.js'
import type { Logger } from '../log.js'

/**
 * What a client connection carries between its requests: the response of its
 * current request (for 'clientError') and whether that request asked to be
 * the last, and the half-close rule for a client FIN mid-request.
 */

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

/** Mark `res` as its connection's current request; the first request also installs the FIN listener. */
export function trackRequest(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket as TrackedSocket
  socket[LIVE_RESPONSE] = res
  socket[CLOSE_ASKED] = asksToClose(req)
  if (socket[WATCHED] !== true) {
    socket[WATCHED] = true
    socket.on('end', onClientFin)
  }
}

/**
 * Node's 'clientError': what its parser refused, answered on the raw socket.
 * A parse error in the body of a request whose answer already started
 * (a refusal decided on headers alone, then a broken body) only closes
 * the connection: a second answer would be a response to nothing.
 * Otherwise (a new request's head, or a request not answered yet) the
 * answer says what Node found; the request's own response, if any,
 * then finds the connection closed.
 */
export function answerClientError(err: ParserError, socket: Duplex, log: Logger): void {
  const raw = socket as TrackedSocket
  const live = raw[LIVE_RESPONSE]
  const answer = clientErrorAnswer(err)
  const answerable = live === undefined || !live.headersSent || (live.writableFinished && live.req.complete)
  if (socket.writable && !raw.destroyed && answerable) errorOnSocket(socket, answer)
  else socket.destroy()
  log.debug({ code: err.code, status: answer.status }, 'client error')
}
