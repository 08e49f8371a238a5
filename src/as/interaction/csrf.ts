import type { IncomingMessage } from 'node:http'
import { safeEqual } from '../../crypto/secret.js'
import { ownCookieName, parseCookies, serializeCookie } from '../../http/cookies.js'
import type { AsContext } from '../context.js'
import { isTokenShaped, randomToken } from '../../crypto/random.js'

/**
 * Cross-site request forgery defences for the interaction forms.
 *
 * - Before login there is no session to bind a token to, so the login form
 *   uses a double-submit token: a random value in an HttpOnly, SameSite=Lax
 *   cookie that the form must echo. With https the cookie is `__Host-`
 *   prefixed, so a sibling subdomain cannot plant one (cookie tossing).
 * - After login, forms carry the session's own CSRF token (SessionRecord.csrf).
 * - Every POST with an `Origin` other than public_url's origin, or that the
 *   browser marks `Sec-Fetch-Site: cross-site`, is refused whatever the token.
 * Tokens are compared in constant time.
 */

/** Name of the pre-session CSRF cookie. */
export function csrfCookieName(secure: boolean): string {
  return ownCookieName('bw_csrf', secure)
}

/** The pre-session token for a login form, and the Set-Cookie to send when it is new. */
export interface PreSessionCsrf {
  token: string
  setCookie: string | null
}

/**
 * Reuse the browser's pre-session token when it has one (so two open login
 * tabs both work), else mint one. The cookie lasts for the browser session.
 */
export function preSessionCsrf(req: IncomingMessage, as: AsContext): PreSessionCsrf {
  const name = csrfCookieName(as.secureCookies)
  const existing = parseCookies(req.headers.cookie).get(name)
  if (isTokenShaped(existing)) return { token: existing, setCookie: null }
  const token = randomToken()
  return { token, setCookie: serializeCookie('bw_csrf', token, { secure: as.secureCookies }) }
}

/** True when the form's token equals the pre-session cookie. */
export function checkPreSessionCsrf(req: IncomingMessage, as: AsContext, formToken: string | undefined): boolean {
  const cookie = parseCookies(req.headers.cookie).get(csrfCookieName(as.secureCookies))
  return tokensMatch(cookie, formToken)
}

/** Constant-time comparison; a missing or malformed value never matches. */
export function tokensMatch(expected: string | undefined, given: string | undefined): boolean {
  if (!isTokenShaped(expected) || given === undefined) return false
  return safeEqual(expected, given)
}

/**
 * False when the request visibly comes from another site: an Origin header
 * that is not public_url's origin (including `null`), or Sec-Fetch-Site
 * `cross-site`. Requests without these headers (old browsers, tools) fall back
 * on the token check alone.
 */
export function isSameOrigin(req: IncomingMessage, as: AsContext): boolean {
  const origin = req.headers.origin
  if (origin !== undefined && origin !== new URL(as.issuer).origin) return false
  return req.headers['sec-fetch-site'] !== 'cross-site'
}
