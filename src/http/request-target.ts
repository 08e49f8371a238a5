/**
 * The request path the gateway judges and forwards. Routing on a path the
 * upstream would read differently is how `/public/../admin` reaches `/admin`
 * behind a gateway that only protects `/admin`; so the gateway normalizes
 * once (RFC 3986 6.2.2), matches on the result, and forwards exactly that.
 *
 * - percent-escapes of unreserved characters (ALPHA DIGIT `-` `.` `_` `~`)
 *   are decoded and every other escape is upper-cased (RFC 3986 6.2.2.1-2);
 * - dot segments are resolved, `%2e` included (RFC 3986 5.2.4);
 * - runs of `/` are merged;
 * - refused with 400 invalid_request: an encoded slash `%2f` or backslash
 *   `%5c`, a raw backslash, NUL, control or non-ASCII characters, a `#`, a
 *   raw `;`, a malformed escape, and a path that climbs above the root.
 *
 * The `;` is refused because Servlet containers (Tomcat, Jetty, Spring) cut
 * `;params` off each segment before they resolve dot segments: they read
 * `/public/..;/admin` as `/admin` while we would judge it under `/public`.
 * An encoded `%3B` is data to them, so it passes.
 */
import { InvalidRequest } from '../errors.js'

const SLASH = 0x2f
const DOT = 0x2e
const PERCENT = 0x25
const BACKSLASH = 0x5c
const HASH = 0x23
const SEMICOLON = 0x3b
const HEX_DIGITS = '0123456789ABCDEF'

/** A refusal of the request target itself; not about credentials, so no challenge. */
function badPath(): InvalidRequest {
  return new InvalidRequest('The request path is not acceptable')
}

/**
 * True when the path needs no work: it starts with `/` and holds no `%`, no
 * `\`, no `#`, no `;`, no control or non-ASCII character, and no segment that starts
 * with `.` or is empty. Most real paths take this branch and are returned
 * as they are, without allocating.
 */
function isPlain(path: string): boolean {
  if (path.charCodeAt(0) !== SLASH) return false
  let prev = SLASH
  for (let i = 1; i < path.length; i++) {
    const c = path.charCodeAt(i)
    if (c === PERCENT || c === BACKSLASH || c === HASH || c === SEMICOLON || c <= 0x20 || c >= 0x7f) return false
    if (prev === SLASH && (c === SLASH || c === DOT)) return false
    prev = c
  }
  return true
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  if (c >= 0x41 && c <= 0x46) return c - 0x37
  if (c >= 0x61 && c <= 0x66) return c - 0x57
  return -1
}

/** RFC 3986 2.3 unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~" */
function isUnreserved(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === DOT || c === 0x5f || c === 0x7e
}

/** Decode unreserved escapes, upper-case the others, refuse what must never pass. */
function decodeEscapes(path: string): string {
  let out = ''
  let runStart = 0
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i)
    if (c === PERCENT) {
      const hi = i + 2 < path.length ? hexValue(path.charCodeAt(i + 1)) : -1
      const lo = hi === -1 ? -1 : hexValue(path.charCodeAt(i + 2))
      if (lo === -1) throw badPath()
      const v = hi * 16 + lo
      // An encoded `/` or `\` would make one segment for us and two for an
      // upstream that decodes it; NUL truncates paths in C-based servers.
      if (v === SLASH || v === BACKSLASH || v === 0) throw badPath()
      out += path.slice(runStart, i)
      out += isUnreserved(v) ? String.fromCharCode(v) : '%' + HEX_DIGITS[hi] + HEX_DIGITS[lo]
      i += 2
      runStart = i + 1
    } else if (c === BACKSLASH || c === HASH || c === SEMICOLON || c <= 0x20 || c >= 0x7f) {
      throw badPath()
    }
  }
  return runStart === 0 ? path : out + path.slice(runStart)
}

/**
 * Normalize an origin-form path (RFC 9112 3.2.1) for matching and forwarding.
 * A trailing slash is kept (`/a/` and `/a` may differ upstream); `/a/..`
 * becomes `/`. Throws InvalidRequest (400) for what is listed above.
 * @see https://www.rfc-editor.org/rfc/rfc3986#section-6.2.2
 * @see https://www.rfc-editor.org/rfc/rfc3986#section-5.2.4
 */
export function normalizePath(path: string): string {
  if (isPlain(path)) return path
  if (path.charCodeAt(0) !== SLASH) throw badPath()
  const decoded = decodeEscapes(path)
  const parts = decoded.split('/')
  const out: string[] = []
  let trailingSlash = false
  for (let i = 1; i < parts.length; i++) {
    const segment = parts[i] as string
    const last = i === parts.length - 1
    if (segment === '' || segment === '.') {
      if (last) trailingSlash = true
      continue
    }
    if (segment === '..') {
      if (out.length === 0) throw badPath()
      out.pop()
      if (last) trailingSlash = true
      continue
    }
    out.push(segment)
  }
  if (out.length === 0) return '/'
  return '/' + out.join('/') + (trailingSlash ? '/' : '')
}

/**
 * Lower-cased host of a Host header or authority, without port or trailing dot; null when absent or empty.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-7.2
 */
export function hostOf(value: string | undefined): string | null {
  if (value === undefined || value === '') return null
  let end: number
  if (value.charCodeAt(0) === 0x5b) {
    // IPv6 literal: `[::1]:8080`
    const close = value.indexOf(']')
    end = close === -1 ? value.length : close + 1
  } else {
    const colon = value.indexOf(':')
    end = colon === -1 ? value.length : colon
  }
  if (end > 1 && value.charCodeAt(end - 1) === DOT) end -= 1
  const host = end === value.length ? value : value.slice(0, end)
  return host === '' ? null : host.toLowerCase()
}

/** A request target split once, for every face (RFC 9112 3.2). */
export interface RequestTarget {
  /**
   * The path as sent (not normalized), starting with `/` for origin-form and
   * absolute-form targets. Anything else (`*`, authority-form, garbage) is
   * kept as it came: no route or endpoint has such a path, and the gateway's
   * normalizePath refuses it with 400.
   */
  rawPath: string
  /** The query without `?`, or ''. */
  rawQuery: string
  /** Lower-cased host of an absolute-form target's authority; null for origin-form. */
  host: string | null
}

const ABSOLUTE_FORM = /^https?:\/\/([^/?#@]+)([^?#]*)(?:\?([^#]*))?$/i

/**
 * Split `req.url` into path, query and, for absolute-form
 * (`GET http://host/path`, which a server MUST accept, RFC 9112 3.2.2), the
 * target's host, which the caller checks against Host. Origin-form, the norm,
 * costs one indexOf. A malformed absolute-form target (userinfo, a path not
 * starting with `/`, another scheme) is kept whole as its raw path, which
 * matches nothing and which the gateway refuses with 400.
 * @see https://www.rfc-editor.org/rfc/rfc9112#section-3.2
 */
export function splitTarget(url: string): RequestTarget {
  if (url.charCodeAt(0) !== SLASH) {
    const m = ABSOLUTE_FORM.exec(url)
    const host = m === null ? null : hostOf(m[1])
    const path = m?.[2] ?? ''
    if (m !== null && host !== null && (path === '' || path.charCodeAt(0) === SLASH)) {
      return { rawPath: path === '' ? '/' : path, rawQuery: m[3] ?? '', host }
    }
  }
  const q = url.indexOf('?')
  return q === -1 ? { rawPath: url, rawQuery: '', host: null } : { rawPath: url.slice(0, q), rawQuery: url.slice(q + 1), host: null }
}
