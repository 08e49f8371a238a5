/**
 * Checks for single config values that several sections share: URLs,
 * origins, header names, scope names, IP ranges.
 */
import { isIP } from 'node:net'

/** RFC 6749 3.3 scope-token: 1*( %x21 / %x23-5B / %x5D-7E ). */
export const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** RFC 9110 5.6.2 token (header field names, methods). */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** A parsed URL, or undefined when `value` is not an absolute URL. */
export function parseAbsoluteUrl(value: string): URL | undefined {
  try {
    return new URL(value)
  } catch {
    return undefined
  }
}

/**
 * An http(s) URL with no query or fragment (base URLs, endpoints). Returns a
 * reason it is not, or undefined.
 */
export function checkHttpUrl(value: string, opts: { query?: boolean } = {}): string | undefined {
  const url = parseAbsoluteUrl(value)
  if (url === undefined || url.host === '') return `\`${value}\` is not an absolute URL; write e.g. \`https://host.example.com\``
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `\`${url.protocol}\` URLs are not supported here; use http:// or https://`
  if (url.username !== '' || url.password !== '') return 'credentials in the URL are not allowed here'
  if (!opts.query && url.search !== '') return 'the URL must not have a query string'
  if (url.hash !== '' || value.includes('#')) return 'the URL must not have a fragment'
  return undefined
}

/**
 * `value` without trailing slashes (`http://h/` → `http://h`). Textual, so
 * the rest stays exactly as written: an issuer identifier is compared as a
 * string (RFC 8414 3.3).
 */
export function stripTrailingSlash(value: string): string {
  return value.replace(/\/+$/, '')
}

/** A browser origin: scheme, host and optional port; nothing else. */
export function checkOrigin(value: string): string | undefined {
  const url = parseAbsoluteUrl(value)
  if (url === undefined || url.origin === 'null') return `\`${value}\` is not an origin; write \`https://app.example.com\` (scheme, host, optional port)`
  if (url.origin !== value) return `an origin has no path, query or trailing slash; write \`${url.origin}\``
  return undefined
}

/** An IP address or CIDR range (`10.0.0.0/8`, `::1`, `fd00::/8`). */
export function checkIpRange(value: string): string | undefined {
  const [address = '', prefix, extra] = value.split('/')
  const family = isIP(address)
  const bad = `\`${value}\` is not an IP address or CIDR range like \`10.0.0.0/8\``
  if (family === 0 || extra !== undefined) return bad
  if (prefix === undefined) return undefined
  const max = family === 4 ? 32 : 128
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return bad
  return undefined
}
