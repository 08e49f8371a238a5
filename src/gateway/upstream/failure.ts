import { BadGateway, ConcurrencyLimitReached, GatewayTimeout, PayloadTooLarge, type OAuthError } from '../../errors.js'
import { BodyTooLarge } from './body-limit.js'

/** undici error codes that mean "the upstream took too long" rather than "could not be reached". */
const TIMEOUT_CODES: ReadonlySet<string> = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'ETIMEDOUT'])

export function errorCode(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string') return code
    const name = (err as { name?: unknown }).name
    if (typeof name === 'string') return name
  }
  return 'unknown'
}

/** Map an upstream failure before the response started to the error the client sees. */
export function upstreamFailure(err: unknown): OAuthError {
  if (err instanceof BodyTooLarge) return new PayloadTooLarge()
  // The answer turned into an event stream with no stream slot free (exchange.ts): the streams' own 503.
  if (err instanceof ConcurrencyLimitReached) return err
  if (TIMEOUT_CODES.has(errorCode(err))) return new GatewayTimeout()
  return new BadGateway()
}
