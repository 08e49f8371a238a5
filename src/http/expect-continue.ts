/**
 * `Expect: 100-continue` (RFC 9110 10.1.1). The server listens for Node's
 * 'checkContinue' event, so Node no longer invites every body by itself:
 * the dispatcher parks the response on the request ({@link holdContinue}),
 * and `100 Continue` is sent only when the body is about to be read (by
 * readBody, or by the proxy before it streams the body upstream), that is
 * once the request has been admitted on its headers. A request refused on
 * its headers (no token, 405, 413 ...) gets its final answer without ever
 * inviting the body, and Node then closes the connection rather than wait
 * for a body the client will not send.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'

const PENDING = Symbol('bearward.continuePending')
type Holding = IncomingMessage & { [PENDING]?: ServerResponse }

/**
 * The client asked for `100 Continue`: send it when the body is wanted, not before.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-10.1.1
 */
export function holdContinue(req: IncomingMessage, res: ServerResponse): void {
  ;(req as Holding)[PENDING] = res
}

/** Send the held `100 Continue`, once, if the answer has not started. */
export function continueIfExpected(req: IncomingMessage): void {
  const res = (req as Holding)[PENDING]
  if (res === undefined) return
  ;(req as Holding)[PENDING] = undefined
  if (!res.headersSent && !res.writableEnded) res.writeContinue()
}
