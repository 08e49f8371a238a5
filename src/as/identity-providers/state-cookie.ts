/**
 * The browser's half of a pending upstream sign-in: a cookie holding the
 * `state` sent to the provider. The callback is accepted only from the
 * browser that started the sign-in (RFC 9700 4.7.1: no login CSRF), and the
 * store keeps only the state's hash. SameSite=Lax: the provider sends the
 * browser back with a top-level GET from its own site.
 */
import type { IncomingMessage } from 'node:http'
import { ownCookieName, parseCookies, serializeCookie } from '../../http/cookies.js'
import type { AsContext } from '../context.js'
import { isTokenShaped } from '../../crypto/random.js'

/** How long a person may take at the provider. */
export const UPSTREAM_LOGIN_TTL_SEC = 600

function cookieName(secure: boolean): string {
  return ownCookieName('bw_upstream', secure)
}

export function stateCookie(as: AsContext, state: string): string {
  return serializeCookie('bw_upstream', state, { secure: as.secureCookies, maxAgeSec: UPSTREAM_LOGIN_TTL_SEC })
}

export function clearStateCookie(as: AsContext): string {
  return serializeCookie('bw_upstream', '', { secure: as.secureCookies, maxAgeSec: 0 })
}

export function stateOfCookie(req: IncomingMessage, as: AsContext): string | null {
  const value = parseCookies(req.headers.cookie).get(cookieName(as.secureCookies))
  return isTokenShaped(value) ? value : null
}
