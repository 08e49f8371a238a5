import type { IncomingMessage } from 'node:http'
import { InvalidRequest, UriTooLong } from '../errors.js'
import { headerCount } from './header-count.js'
import { hostOf } from './request-target.js'

/**
 * RFC 9112 3.2: a request with more than one Host header MUST be answered
 * 400. Node keeps the first; a proxy in front may use the last, so the two
 * would route the same request differently.
 * @see https://www.rfc-editor.org/rfc/rfc9112#section-3.2
 */
export function assertSingleHost(req: IncomingMessage): void {
  if (headerCount(req, 'host') > 1) throw new InvalidRequest('The Host header is repeated')
}

/**
 * RFC 9112 3.2 and RFC 9113 8.3.1: Host (and `:authority`, which an HTTP/2
 * request's Host is made of) is `uri-host [":" port]`, without the userinfo
 * a URI may carry. One with `user@` is refused (400): the upstream would be
 * told of a host (X-Forwarded-Host) the client never had to name, and
 * servers that split at `@` and those that do not read two hosts.
 * @see https://www.rfc-editor.org/rfc/rfc9113#section-8.3.1
 */
export function assertHostWithoutUserinfo(req: IncomingMessage): void {
  if (req.headers.host?.includes('@') === true) throw new InvalidRequest('The Host header or :authority carries userinfo')
}

/**
 * RFC 9112 3.2.2: an absolute-form target names its own host, and Host must
 * then agree with it; a request whose two hosts differ would be routed by
 * one and served by the other, so it is refused (400).
 * @see https://www.rfc-editor.org/rfc/rfc9112#section-3.2.2
 */
export function assertTargetAgreesWithHost(req: IncomingMessage, targetHost: string | null | undefined): void {
  if (targetHost === null || targetHost === undefined) return
  const header = hostOf(req.headers.host)
  if (header !== null && header !== targetHost) throw new InvalidRequest('The request target and Host disagree')
}

/**
 * Longest request target read (8 KiB, nginx's default line buffer). Node
 * counts the target against its 16 KiB header limit; below that the
 * dispatcher applies this bound, above it the parser's overflow is answered
 * 414 too (http/client-error.ts).
 */
export const MAX_TARGET_LENGTH = 8 * 1024

/**
 * A target longer than we read is 414.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-15.5.15
 */
export function assertTargetLength(req: IncomingMessage): void {
  if ((req.url?.length ?? 0) > MAX_TARGET_LENGTH) throw new UriTooLong()
}

/**
 * The only upgrade served is a WebSocket handshake (RFC 6455 4.1). Any other
 * (the h2c upgrade of RFC 7540 3.2 among them: HTTP/2 without TLS is taken
 * with prior knowledge, `http2.cleartext`) is answered 400, saying so,
 * rather than the connection closed without a word.
 */
export function assertWebSocketUpgrade(req: IncomingMessage): void {
  const protocol = req.headers.upgrade?.trim().toLowerCase()
  if (protocol === 'websocket') {
    if (req.method === 'GET') return
    throw new InvalidRequest('A WebSocket handshake is a GET request')
  }
  if (protocol?.startsWith('h2c') === true) {
    throw new InvalidRequest('Upgrade to h2c is not supported: speak HTTP/2 with prior knowledge, or HTTP/1.1 without Upgrade')
  }
  throw new InvalidRequest('Only WebSocket upgrades are supported')
}
