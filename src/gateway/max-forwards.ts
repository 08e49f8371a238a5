/**
 * Max-Forwards (RFC 9110 7.6.2): a TRACE or OPTIONS request that reaches the
 * gateway with `Max-Forwards: 0` must not be forwarded; the gateway answers
 * as the final recipient. Other values are decremented on the way upstream
 * (headers.ts). Only requests a route admitted get here: TRACE on a route
 * that does not allow it was refused with 405 first, and a protected route's
 * token was checked like any other method's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RouteConfig } from '../config/validated-config.js'
import type { RequestContext } from '../context.js'
import { canonicalHeaderName } from './header-names.js'
import { parseMaxForwards } from './headers.js'

/**
 * Fields a TRACE echo leaves out (RFC 9110 9.3.8: the final recipient SHOULD
 * exclude fields likely to hold sensitive data): credentials and cookies.
 */
const NOT_ECHOED: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie', 'dpop'])

/** What Allow lists for an OPTIONS answered here on a route that takes any method. */
const ANY_METHOD = 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT'

/** True for a TRACE or OPTIONS request whose Max-Forwards is 0. */
export function isLastHop(req: IncomingMessage): boolean {
  const method = req.method
  if (method !== 'TRACE' && method !== 'OPTIONS') return false
  const value = req.headers['max-forwards']
  return value !== undefined && parseMaxForwards(value) === 0
}

/**
 * Answer a last-hop request ourselves: TRACE gets its request message back
 * as `message/http` (RFC 9110 9.3.8) without credentials or cookies; OPTIONS
 * gets 200 with the route's Allow (RFC 9110 9.3.7).
 */
export function answerAsFinalRecipient(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, route: RouteConfig): void {
  const headers: Record<string, string> = { 'x-request-id': ctx.id, 'cache-control': 'no-store' }
  if (req.method === 'OPTIONS') {
    const methods = route.match.methods
    headers.allow = methods === null ? (route.allowTrace ? `${ANY_METHOD}, TRACE` : ANY_METHOD) : methods.join(', ')
    headers['content-length'] = '0'
    res.writeHead(200, headers)
    res.end()
    return
  }
  let text = `${req.method} ${req.url ?? '/'} HTTP/${req.httpVersion}\r\n`
  const raw = req.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (NOT_ECHOED.has(canonicalHeaderName(name))) continue
    text += `${name}: ${raw[i + 1] as string}\r\n`
  }
  const body = Buffer.from(text + '\r\n', 'latin1')
  headers['content-type'] = 'message/http'
  headers['content-length'] = String(body.length)
  res.writeHead(200, headers)
  res.end(body)
}
