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
