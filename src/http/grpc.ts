import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { OAuthError } from '../errors.js'

/**
 * Refusals answered the gRPC way. A gRPC client reads the
 * call's outcome from `grpc-status` and `grpc-message`, never from the HTTP
 * status: an HTTP 401 or a JSON body is a protocol error to it. So a
 * request that is gRPC (its content-type is `application/grpc` or
 * `application/grpc+<codec>`) is refused with HTTP 200, `content-type:
 * application/grpc`, the gRPC status its HTTP status maps to (16
 * UNAUTHENTICATED for 401, 7 PERMISSION_DENIED for 403, ...) and the
 * error's description as `grpc-message`, beside the same `WWW-Authenticate`
 * challenge, as a Trailers-Only response: one HEADERS frame that ends the
 * stream. Refusals of any other request are unchanged.
 *
 * @see https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md
 * @see https://github.com/grpc/grpc/blob/master/doc/http-grpc-status-mapping.md
 */

/** gRPC status codes this file answers with (grpc/status.proto). */
export const GrpcStatus = {
  INTERNAL: 13,
  UNKNOWN: 2,
  UNAUTHENTICATED: 16,
  PERMISSION_DENIED: 7,
  UNIMPLEMENTED: 12,
  UNAVAILABLE: 14,
  RESOURCE_EXHAUSTED: 8,
  DEADLINE_EXCEEDED: 4,
  INVALID_ARGUMENT: 3,
} as const

/** True for a gRPC request: content-type `application/grpc` or `application/grpc+proto` (`;` parameters allowed). */
export function isGrpcRequest(req: IncomingMessage | undefined): boolean {
  const type = req?.headers['content-type']
  if (type === undefined || type.length < 16) return false
  const lower = type.toLowerCase()
  if (!lower.startsWith('application/grpc')) return false
  const next = lower.charCodeAt(16)
  // End, `+codec`, or `;` parameters: not `application/grpc-web` (a different framing) nor `application/grpcx`.
  return Number.isNaN(next) || next === 43 /* + */ || next === 59 /* ; */
}

/**
 * The gRPC status of a refusal, after gRPC's own HTTP mapping, except that
 * bearward speaks for the service here, so a 400 is the caller's fault
 * (INVALID_ARGUMENT, not INTERNAL), and a 400 about the credentials (a
 * malformed token: RFC 6750 `invalid_request` with a challenge) is
 * UNAUTHENTICATED, which is what makes a client fetch a new token.
 */
export function grpcStatusOf(httpStatus: number, credentialsRefused = false): number {
  switch (httpStatus) {
    case 400:
      return credentialsRefused ? GrpcStatus.UNAUTHENTICATED : GrpcStatus.INVALID_ARGUMENT
    case 401:
      return GrpcStatus.UNAUTHENTICATED
    case 403:
      return GrpcStatus.PERMISSION_DENIED
    case 404:
    case 405:
      return GrpcStatus.UNIMPLEMENTED
    case 408:
    case 504:
      return GrpcStatus.DEADLINE_EXCEEDED
    case 413:
    case 431:
      return GrpcStatus.RESOURCE_EXHAUSTED
    case 429:
    case 502:
    case 503:
      return GrpcStatus.UNAVAILABLE
    default:
      return GrpcStatus.UNKNOWN
  }
}

/**
 * `grpc-message` is percent-encoded UTF-8: everything but printable ASCII
 * other than `%` is escaped, so no value can break out of the field.
 */
export function grpcMessage(text: string): string {
  let out = ''
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/**
 * The Trailers-Only answer's fields for `err`: the grpc-* fields beside the
 * headers its HTTP answer would carry (`answerHeaders`: the challenge,
 * no-store). reply.ts renders those and calls this, so this file needs
 * nothing of it.
 */
export function grpcRefusalHeaders(err: OAuthError, answerHeaders: Readonly<Record<string, string>>, requestId: string): Record<string, string> {
  const description = err.description ?? (err.error || 'A bearer access token is required')
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(answerHeaders)) {
    // Hop-by-hop or framing fields have no place in an HTTP/2 answer.
    if (name !== 'connection' && name !== 'content-length') headers[name] = value
  }
  headers['content-type'] = 'application/grpc'
  headers['grpc-status'] = String(grpcStatusOf(err.status, 'www-authenticate' in answerHeaders))
  headers['grpc-message'] = grpcMessage(err.error ? `${err.error}: ${description}` : description)
  headers['x-request-id'] = requestId
  return headers
}

/**
 * Answer a gRPC request with `err` as a Trailers-Only response. Over
 * HTTP/2 that is one HEADERS frame with END_STREAM (node:http2's
 * compatibility API would send an empty DATA frame to end the stream, after
 * which a gRPC client finds no status); over HTTP/1.1 (no gRPC client
 * speaks it, but a refusal must still be whole) the same fields and no body.
 */
export function sendGrpcError(res: ServerResponse, requestId: string, err: OAuthError, answerHeaders: Readonly<Record<string, string>>): void {
  const headers = grpcRefusalHeaders(err, answerHeaders, requestId)
  const h2 = res as unknown as Http2ServerResponse
  if (h2.stream !== undefined && typeof h2.stream.respond === 'function') {
    if (h2.stream.destroyed || h2.stream.headersSent) return
    // The compatibility response is finished with the stream; its status is what the access line reports.
    res.statusCode = 200
    h2.stream.respond({ ':status': 200, ...headers }, { endStream: true })
    return
  }
  res.writeHead(200, { ...headers, 'content-length': '0' })
  res.end()
}
