import type { IncomingMessage } from 'node:http'
import type { Person } from '../claims.js'
import { ownCookieName, parseCookies, serializeCookie } from '../../http/cookies.js'
import { hashToken } from '../../store/hash.js'
import type { AsContext } from '../context.js'
import { isTokenShaped, randomToken } from '../../crypto/random.js'

/**
 * The known-browser cookie (OWASP's "device cookie"): a random token set at
 * each successful sign-in and remembered in the store (by hash) with the
 * `sub` it was issued for. A browser that presents one for the user it is
 * signing in as is judged by its own failure counter only (see
 * LoginThrottle), so an attack on the username from elsewhere cannot keep
 * the owner out of the browser they usually use.
 *
 * One browser may be used by several people: the cookie holds up to
 * {@link MAX_TOKENS} tokens, newest first, separated by `.`. It is HttpOnly
 * and SameSite=Strict (only our own login form needs it), `__Host-` prefixed
 * under https, and lives `rate_limit.known_browser_ttl`.
 */

const MAX_TOKENS = 4

/** Name of the known-browser cookie. */
export function knownBrowserCookieName(secure: boolean): string {
  return ownCookieName('bw_known', secure)
}

/** A token of the browser's cookie that the store knows for the user signing in. */
export interface KnownBrowser {
  token: string
  hash: string
  /** When it was last remembered (a complete sign-in), epoch ms; 0 when the store did not keep it. */
  rememberedAtMs: number
}

function tokensOf(req: IncomingMessage, as: AsContext): string[] {
  const value = parseCookies(req.headers.cookie).get(knownBrowserCookieName(as.secureCookies)) ?? ''
  return value.split('.').filter(isTokenShaped).slice(0, MAX_TOKENS)
}

/**
 * The browser's token issued for `user`, or null. The store is asked about
 * every token whether or not the username exists, so the time taken does not
 * tell which usernames do.
 */
export async function knownBrowserFor(req: IncomingMessage, as: AsContext, user: Person | undefined): Promise<KnownBrowser | null> {
  const tokens = tokensOf(req, as).map((token) => ({ token, hash: hashToken(token) }))
  const entries = await Promise.all(tokens.map((t) => as.store.knownBrowsers.remembered(t.hash)))
  const i = user === undefined ? -1 : entries.findIndex((e) => e?.sub === user.sub)
  const token = tokens[i]
  return token === undefined ? null : { ...token, rememberedAtMs: entries[i]?.atMs ?? 0 }
}

/**
 * After a successful sign-in: remember this browser for `user` (a new token,
 * or the one it already had, with its lifetime renewed) and return the
 * Set-Cookie that puts it first in the browser's cookie.
 */
export async function rememberBrowser(req: IncomingMessage, as: AsContext, user: Person, known: KnownBrowser | null): Promise<string> {
  const token = known?.token ?? randomToken()
  const ttlSec = as.as.rateLimit.knownBrowserTtlSec
  await as.store.knownBrowsers.put(hashToken(token), user.sub, ttlSec)
  const tokens = [token, ...tokensOf(req, as).filter((t) => t !== token)].slice(0, MAX_TOKENS)
  return serializeCookie('bw_known', tokens.join('.'), { secure: as.secureCookies, sameSite: 'Strict', maxAgeSec: ttlSec })
}
