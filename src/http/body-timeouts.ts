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
 * Transfer-Encoding) are watched; the watch ends when the body has been read
 * to its end or the request closes.
 */
import type { IncomingMessage } from 'node:http'
import type { ClientTimeouts } from '../config/validated-config.js'

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
 * not complete within `requestMs`. `responded` tells whether an answer has
 * already been fully written (the keep-alive timer Node then sets on the
 * socket is left alone).
 */
export function watchBody(req: IncomingMessage, timeouts: ClientTimeouts, responded: () => boolean, onTimeout: (which: BodyTimeout) => void): void {
  const socket = req.socket
  let done = false
  const stop = (): void => {
    if (done) return
    done = true
    clearTimeout(deadline)
    req.off('timeout', onIdle)
    req.off('end', stop)
    req.off('close', stop)
    // An HTTP/2 request's timer is its stream's (its socket's setTimeout would be the whole session's).
    if (req.httpVersionMajor === 2) req.setTimeout(0)
    else if (!socket.destroyed && !responded()) socket.setTimeout(0)
  }
  const fire = (which: BodyTimeout): void => {
    if (done) return
    stop()
    onTimeout(which)
  }
  const onIdle = (): void => fire('body_idle')
  const deadline = setTimeout(() => fire('request'), timeouts.requestMs)
  deadline.unref()
  req.setTimeout(timeouts.bodyIdleMs, onIdle)
  req.once('end', stop)
  req.once('close', stop)
}
