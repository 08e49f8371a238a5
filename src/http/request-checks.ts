import type { IncomingMessage } from 'node:http'
import { InvalidRequest } from '../errors.js'

/**
 * RFC 9112 3.2: a request with more than one Host header MUST be answered
 * 400. Node keeps the first; a proxy in front may use the last, so the two
 * would route the same request differently.
 */
export function assertSingleHost(req: IncomingMessage): void {
  const raw = req.rawHeaders
  let seen = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === 4 && name.toLowerCase() === 'host' && ++seen > 1) {
      throw new InvalidRequest('The Host header is repeated')
    }
  }
}
