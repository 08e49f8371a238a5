/** Parse a Cookie header into name → first value. Malformed pairs are skipped. */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>()
  if (!header) return out
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq <= 0) continue
    const name = part.slice(0, eq).trim()
    if (out.has(name)) continue
    let value = part.slice(eq + 1).trim()
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1)
    try {
      out.set(name, decodeURIComponent(value))
    } catch {
      // a cookie we cannot decode is not one of ours
    }
  }
  return out
}

export interface CookieOptions {
  maxAgeSec?: number
  path?: string
  secure: boolean
  /** Default Lax: the login cookie must survive the top-level redirect back from a client. */
  sameSite?: 'Lax' | 'Strict'
}

/**
 * Serialize one of our HttpOnly cookies, named `cookie` (`__Host-` prefixed
 * when `o.secure`, {@link ownCookieName}). `maxAgeSec: 0` deletes it. Only a
 * name in {@link OWN_COOKIES} can be set, so the gateway's list of what to
 * keep from upstreams cannot miss one.
 */
export function serializeCookie(cookie: OwnCookie, value: string, o: CookieOptions): string {
  const parts = [`${ownCookieName(cookie, o.secure)}=${encodeURIComponent(value)}`, `Path=${o.path ?? '/'}`, 'HttpOnly', `SameSite=${o.sameSite ?? 'Lax'}`]
  if (o.maxAgeSec !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(o.maxAgeSec))}`)
  if (o.secure) parts.push('Secure')
  return parts.join('; ')
}

/**
 * Every cookie the authorization server sets, by its base name: the sign-in
 * session, the pre-session CSRF token, the known-browser token and an
 * identity provider's pending-sign-in state; the admin pages' session and
 * pending sign-in (src/admin/pages/). The one list the gateway reads
 * to keep them from upstreams (gateway/own-cookies.ts): a cookie added to the
 * authorization server is named here or nowhere.
 */
export const OWN_COOKIES = ['bw_session', 'bw_csrf', 'bw_known', 'bw_upstream', 'bw_admin', 'bw_admin_flow'] as const

/** One of {@link OWN_COOKIES}. */
export type OwnCookie = (typeof OWN_COOKIES)[number]

const OWN_COOKIE_SET: ReadonlySet<string> = new Set(OWN_COOKIES)

/**
 * The name the authorization server sets `base` under: `__Host-` prefixed
 * under https (no Domain, Path=/, Secure), so a sibling subdomain cannot plant one.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6265bis#section-4.1.3.2 (draft-ietf-httpbis-rfc6265bis, `__Host-`)
 */
export function ownCookieName(base: OwnCookie, secure: boolean): string {
  return secure ? `__Host-${base}` : base
}

/**
 * Whether a cookie named `name` is, or could be read as, one of ours: any
 * case, surrounding whitespace, and a `__Host-` or `__Secure-` prefix in any
 * case (browsers match the prefixes case-insensitively). Wider than what the
 * authorization server reads, on purpose: a cookie under such a name is never
 * an upstream's own.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6265bis#section-4.1.3 (draft-ietf-httpbis-rfc6265bis, cookie name prefixes)
 */
export function isOwnCookieName(name: string): boolean {
  let n = name.trim().toLowerCase()
  for (;;) {
    if (n.startsWith('__host-')) n = n.slice('__host-'.length)
    else if (n.startsWith('__secure-')) n = n.slice('__secure-'.length)
    else break
  }
  return OWN_COOKIE_SET.has(n)
}
