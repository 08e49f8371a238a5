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

/** Serialize an HttpOnly cookie. `maxAgeSec: 0` deletes it. */
export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  const parts = [`${name}=${encodeURIComponent(value)}`, `Path=${o.path ?? '/'}`, 'HttpOnly', `SameSite=${o.sameSite ?? 'Lax'}`]
  if (o.maxAgeSec !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(o.maxAgeSec))}`)
  if (o.secure) parts.push('Secure')
  return parts.join('; ')
}
