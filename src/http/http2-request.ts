import { METHODS, type IncomingMessage, type ServerResponse } from 'node:http'
import { constants as h2constants, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2'
import { InvalidRequest } from '../errors.js'

/**
 * An HTTP/2 request (node:http2's compatibility API) made to read like the
 * HTTP/1.1 requests every face was written for, once, on arrival:
 *
 * - `:authority` is the request's Host (RFC 9113 8.3.1): copied to
 *   `headers.host` when the client sent no Host, and a Host that names
 *   another authority than `:authority` is refused (the two would be routed
 *   and served differently, as with two Host headers on HTTP/1.1);
 * - `rawHeaders` without the pseudo-header fields (`:method`, `:path`,
 *   `:scheme`, `:authority`), which no header rule knows and no upstream
 *   may receive as fields, and with the Host the rules then see;
 * - the `cookie` fields HTTP/2 lets a client split (RFC 9113 8.2.3) joined
 *   into one with "; " before they reach an HTTP/1.1 upstream, where two
 *   Cookie lines are not allowed (RFC 6265 5.4); `headers.cookie` is
 *   joined so by node:http2 already.
 *
 * Method, path and scheme stay where the faces read them (`req.method`,
 * `req.url`); the path is `:path` and is normalised and judged like an
 * HTTP/1.1 request target.
 */

/** Set on an HTTP/2 request whose Host and `:authority` disagree; the dispatcher refuses it. */
const CONFLICT = Symbol('bearward.authorityConflict')
type Adapted = IncomingMessage & { [CONFLICT]?: true }

/**
 * The methods Node's HTTP/1.1 parser accepts (llhttp's table), spelled as it
 * takes them: case-sensitively. Over HTTP/2 `:method` is any token, and a
 * rule written for `DELETE` never sees `delete`, while the upstream's
 * framework may upper-case it and run the DELETE the policy never judged.
 */
const HTTP1_METHODS: ReadonlySet<string> = new Set(METHODS)

/** True for a request that arrived over HTTP/2. */
export function isHttp2(req: IncomingMessage): boolean {
  return req.httpVersionMajor === 2
}

/** Rewrite `req`'s Host and raw header list as described above; returns it as an IncomingMessage. */
export function adaptHttp2Request(h2: Http2ServerRequest): IncomingMessage {
  const req = h2 as unknown as Adapted
  const headers = h2.headers
  const authority = headers[':authority']
  const host = headers.host
  if (typeof authority === 'string' && authority !== '') {
    if (host === undefined) headers.host = authority
    else if (host.toLowerCase() !== authority.toLowerCase()) req[CONFLICT] = true
  }
  const raw = h2.rawHeaders
  const plain: string[] = []
  // Where the one Cookie field stands in `plain`, its crumbs joined (-1: none yet).
  let cookieAt = -1
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.charCodeAt(0) === 58 /* ':' */) continue
    const value = raw[i + 1] as string
    if (name === 'cookie') {
      if (cookieAt !== -1) {
        plain[cookieAt] = `${plain[cookieAt] as string}; ${value}`
        continue
      }
      cookieAt = plain.length + 1
    }
    plain.push(name, value)
  }
  if (host === undefined && typeof authority === 'string' && authority !== '') plain.push('host', authority)
  Object.defineProperty(req, 'rawHeaders', { value: plain, configurable: true, enumerable: true })
  return req
}

/** RFC 9113 8.3.1: a Host naming another authority than `:authority` is refused (400). */
export function assertAuthorityAgreesWithHost(req: IncomingMessage): void {
  if ((req as Adapted)[CONFLICT] === true) throw new InvalidRequest('The Host header and :authority disagree')
}

/**
 * An HTTP/2 `:method` outside the set HTTP/1.1's parser accepts is refused
 * (400, the answer HTTP/1.1 gives a method its parser cannot read), before
 * any route or endpoint runs: both protocols then carry the same methods,
 * spelled the same, to every rule and every upstream.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-9.1
 */
export function assertHttp1Method(req: IncomingMessage): void {
  if (!HTTP1_METHODS.has(req.method ?? '')) throw new InvalidRequest('The request method is not one this server accepts')
}

/**
 * Whether an HTTP/2 request has a body still to come: HTTP/2 frames bodies
 * itself, so one may arrive with neither Content-Length nor
 * Transfer-Encoding (gRPC's never carry a length). A request whose HEADERS
 * frame ended the stream has none.
 */
export function http2HasBody(req: IncomingMessage): boolean {
  const stream = (req as unknown as Http2ServerRequest).stream
  return stream !== undefined && !stream.endAfterHeaders
}

/**
 * Whether a request's body has arrived whole, read or not. node:http's
 * `complete` says so over HTTP/1.1; node:http2's compatibility request sets
 * `complete` only once the body has been read, so there the stream's own
 * state answers: the client has ended its side (END_STREAM).
 */
export function bodyReceived(req: IncomingMessage): boolean {
  if (req.complete) return true
  if (!isHttp2(req)) return false
  const stream = (req as unknown as Http2ServerRequest).stream
  return stream !== undefined && (stream.endAfterHeaders || stream.state.remoteClose === 1)
}

/**
 * Whether a response was answered in full. node:http2's compatibility
 * response reports `writableFinished` once its stream closed, also when the
 * client reset it unanswered; only `writableEnded` (our `end()`) tells the
 * two apart. On HTTP/1.1 the one implies the other.
 */
export function answeredInFull(res: { readonly writableFinished: boolean; readonly writableEnded: boolean }): boolean {
  return res.writableFinished && res.writableEnded
}

/**
 * Whether `res` can no longer carry an answer: it ended, or its connection
 * (HTTP/1.1) or stream (HTTP/2) is gone. node:http2's compatibility
 * response has no `destroyed`, and its `req.socket.writable` is the
 * stream's writable side, false from the start for a HEAD request, whose
 * answer (a head without a body) is still to be sent.
 */
export function cannotAnswer(req: IncomingMessage, res: ServerResponse): boolean {
  if (res.writableEnded) return true
  if (!isHttp2(req)) return res.destroyed || !req.socket.writable
  const stream = (res as unknown as Http2ServerResponse).stream as Http2ServerResponse['stream'] | undefined
  return stream === undefined || stream.destroyed || stream.closed
}

/**
 * End an answer that cannot be completed (the upstream failed mid-body, the
 * token was revoked or expired, the request body timed out) so the client
 * cannot take what it received for the whole answer. On HTTP/1.1 the
 * connection is closed: a chunked body misses its last chunk, a sized one
 * its length. On HTTP/2 the stream is reset with INTERNAL_ERROR: a
 * destroy() without an error resets it with NO_ERROR, which Node's client
 * (and others) read as a normal end of the body, and CANCEL, which Node's
 * client reports as no error either.
 * @see https://www.rfc-editor.org/rfc/rfc9113#section-8.1
 */
export function cutResponse(res: ServerResponse): void {
  if (!isHttp2(res.req)) {
    res.destroy()
    return
  }
  const stream = (res as unknown as Http2ServerResponse).stream as Http2ServerResponse['stream'] | undefined
  if (stream !== undefined && !stream.destroyed) stream.close(h2constants.NGHTTP2_INTERNAL_ERROR)
}
