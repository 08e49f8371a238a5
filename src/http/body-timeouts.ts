/**
 * Timeouts on a request body (issue 16, item 2). Node's own `requestTimeout`
 * would cut the connection from under a request we may still answer, so the
 * server runs with it off and bounds bodies here instead:
 *
 * - `body_idle`: the longest silence while the body arrives. It is the
 *   socket's inactivity timer (`req.setTimeout`), so watching it costs no
 *   'data' listener: the body stream is left to whoever consumes it (the
 *   upstream proxy streams it with backpressure).
 * - `request`: a deadline for the whole body, however steadily it trickles.
 *
 * Only requests that announce a body (Content-Length > 0 or
 * Transfer-Encoding) and have not received it whole by the end of the read
 * that brought their head are watched; the watch ends when the body has been
 * read to its end, has been received whole (over HTTP/2: the client ended
 * the stream), or the request closes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ClientTimeouts } from '../config/validated-config.js'
import { bodyReceived } from './http2-request.js'

/** Which bound a body missed: the names of the config keys. */
export type BodyTimeout = 'body_idle' | 'request'

/** True when the request announces a body (RFC 9112 6.3). */
export function announcesBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true
  const length = req.headers['content-length']
  return length !== undefined && length !== '0'
}

/**
 * Call `onTimeout` once if the body of `req` stalls for `bodyIdleMs` or is
 * not complete within `requestMs`. Only the client's sending is bounded: a
 * body received whole is never timed out, however long the server leaves it
 * unread (a token verified over the network, an upstream connecting).
 * `res` is the request's response: once it has been fully written, the
 * keep-alive timer Node then sets on the socket is left alone.
 */
export function watchBody(req: IncomingMessage, res: ServerResponse, timeouts: ClientTimeouts, onTimeout: (which: BodyTimeout) => void): void {
  // Most bodies arrive in the packets that carried their headers. Node's
  // parser reads the rest of such a read after this 'request' handler (a
  // nextTick still comes first), so in the loop's check phase the request is
  // complete and needs no timer: two timers and four listeners a POST
  // otherwise. A body still arriving is watched from then on.
  setImmediate(watchRest, req, res, timeouts, onTimeout)
}

function watchRest(req: IncomingMessage, res: ServerResponse, timeouts: ClientTimeouts, onTimeout: (which: BodyTimeout) => void): void {
  if (req.destroyed || bodyReceived(req)) return
  const socket = req.socket
  let done = false
  const stop = (): void => {
    if (done) return
    done = true
    clearTimeout(deadline)
    req.off('timeout', onIdle)
    req.off('end', stop)
    req.off('close', stop)
    res.off('timeout', onSocketIdle)
    // An HTTP/2 request's timer is its stream's (its socket's setTimeout would be the whole session's).
    if (req.httpVersionMajor === 2) req.setTimeout(0)
    else if (!socket.destroyed && !res.writableFinished) socket.setTimeout(0)
  }
  const fire = (which: BodyTimeout): void => {
    if (done) return
    stop()
    // Received whole meanwhile, only not read yet ('end' comes with reading): nothing to time out.
    if (!bodyReceived(req)) onTimeout(which)
  }
  const onIdle = (): void => fire('body_idle')
  // Node tells an idle socket's request only while it is incomplete, and
  // destroys a socket whose timeout nobody handled: this listener handles it
  // for a body that was completed after the check above and is still unread.
  const onSocketIdle = (): void => {
    if (bodyReceived(req)) stop()
  }
  const deadline = setTimeout(() => fire('request'), timeouts.requestMs)
  deadline.unref()
  req.setTimeout(timeouts.bodyIdleMs, onIdle)
  res.on('timeout', onSocketIdle)
  req.once('end', stop)
  req.once('close', stop)
}
