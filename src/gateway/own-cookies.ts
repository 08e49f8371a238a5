import { isOwnCookieName } from '../http/cookies.js'
import type { Logger } from '../log.js'
import type { FlatHeaders } from './flat-headers.js'

/**
 * bearward's own cookies (http/cookies.ts, OWN_COOKIES) stay between the
 * browser and the authorization server. The authorization server sets them
 * on `public_url`'s origin with `Path=/`, so a browser sends them with every
 * request to a route on that origin: forwarded, they would give the route's
 * upstream the person's sign-in session (their account page, consent, second
 * factors). The other way, an upstream's `Set-Cookie` under one of those
 * names would sign the person into a session the upstream chose (session
 * fixation). The gateway removes them in both directions, on every route.
 */

/** Cheap test first: a Cookie line without `bw_` in any case holds none of ours. */
const MAY_HOLD_OWN = /bw_/i

/**
 * One Cookie field (RFC 6265 5.4: `name=value` pairs separated by `;`)
 * without bearward's own cookies. The pairs kept are the bytes the client
 * sent, in order; null when nothing is left (the field is then dropped).
 * Each field is filtered on its own, so several Cookie lines, or HTTP/2's
 * split `cookie` fields (RFC 9113 8.2.3), are filtered alike.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6265#section-5.4
 */
export function withoutOwnCookies(field: string): string | null {
  if (!MAY_HOLD_OWN.test(field)) return field
  const parts = field.split(';')
  const kept = parts.filter((pair) => {
    const eq = pair.indexOf('=')
    return !isOwnCookieName(eq === -1 ? pair : pair.slice(0, eq))
  })
  if (kept.length === parts.length) return field
  // The separator's space around a removed first or last pair is not part of a cookie.
  const out = kept.join(';').replace(/^[ \t]+|[ \t]+$/g, '')
  return out.replace(/[ \t;]/g, '') === '' ? null : out
}

/**
 * The own cookie a Set-Cookie line would set in the browser, or null. The
 * name is what precedes the first `=` of the name-value pair; a pair with no
 * name (`=bw_session=x`, or no `=` at all) is sent back by browsers as its bare
 * value, `bw_session=x`, so its value is read as a pair in turn.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6265bis#section-5.7 (draft-ietf-httpbis-rfc6265bis, nameless cookies)
 */
export function ownCookieSetBy(setCookie: string): string | null {
  const semi = setCookie.indexOf(';')
  const pair = semi === -1 ? setCookie : setCookie.slice(0, semi)
  const eq = pair.indexOf('=')
  const name = eq === -1 ? '' : pair.slice(0, eq)
  if (isOwnCookieName(name)) return name.trim()
  if (name.trim() !== '') return null
  const value = eq === -1 ? pair : pair.slice(eq + 1)
  const inner = value.indexOf('=')
  const sent = inner === -1 ? value : value.slice(0, inner)
  return isOwnCookieName(sent) ? sent.trim() : null
}

/**
 * Remove, in place, every upstream `Set-Cookie` in `headers` that would set
 * one of bearward's own cookies, each logged at warn with its name (never
 * its value): an upstream that tries is misconfigured or hostile.
 *
 * @param logs where the logger is read, only when a cookie is dropped: a
 *   request's Context builds its child logger on first use, and building one
 *   per response was a measurable share of a proxied request.
 */
export function dropOwnSetCookies(headers: FlatHeaders, logs: { readonly log: Logger }, route: string | null): void {
  let to = 0
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string
    const value = headers[i + 1] as string
    if (name.length === 10 && name.toLowerCase() === 'set-cookie') {
      const own = ownCookieSetBy(value)
      if (own !== null) {
        logs.log.warn({ route, cookie_name: own }, 'upstream set-cookie for a bearward cookie dropped')
        continue
      }
    }
    headers[to++] = name
    headers[to++] = value
  }
  headers.length = to
}
