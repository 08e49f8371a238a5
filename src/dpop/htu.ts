/**
 * The `htu` comparison of RFC 9449 4.3 (check 9): the proof's URI and the
 * request's, both without query and fragment, compared after the syntax-
 * and scheme-based normalisation of RFC 3986 6.2.2 and 6.2.3 (case, percent-
 * encoding, dot segments, default port, empty path).
 *
 * The comparison is of scheme, host, port and path, so a URI that carries
 * anything else in its authority (userinfo: `https://x@api.example/`) or
 * that is not an RFC 3986 URI at all (spaces, tabs, backslashes, non-ASCII,
 * a broken percent-encoding: what a WHATWG URL parser would silently
 * rewrite) is refused: no normalisation can vouch that it names the request.
 * The parse is done here, not with `new URL()`, for that reason: WHATWG
 * parsing drops userinfo from `origin`, strips tabs and newlines, reads `\`
 * as `/` and turns `0x7f.1` into `127.0.0.1`, none of which RFC 3986 does.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-4.3
 * @see https://www.rfc-editor.org/rfc/rfc3986#section-6.2.2
 */

/** Every character an RFC 3986 URI may hold (unreserved, reserved, `%`). */
const URI_CHARS = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/
/** A `%` not followed by two hex digits. */
const BROKEN_PERCENT = /%(?![0-9A-Fa-f]{2})/
/** scheme "://" authority path (RFC 3986 3); query and fragment are ignored. */
const HTTP_URI = /^(https?):\/\/([^/?#]*)([^?#]*)/i
/** host [":" port], the host a reg-name or an IP literal (no userinfo: `@` is not in either class). */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::([0-9]{0,5}))?$/
const PERCENT_OCTET = /%([0-9A-Fa-f]{2})/g
const UNRESERVED = /^[A-Za-z0-9\-._~]$/
const DEFAULT_PORT: Readonly<Record<string, number>> = { http: 80, https: 443 }

/** RFC 3986 6.2.2.1-2: decode what needs no encoding, upper-case the hex of the rest. */
function normalizePercent(s: string): string {
  return s.replace(PERCENT_OCTET, (_, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16))
    return UNRESERVED.test(c) ? c : `%${hex.toUpperCase()}`
  })
}

/** RFC 3986 5.2.4 remove_dot_segments, for an absolute path. */
function removeDotSegments(path: string): string {
  const out: string[] = []
  const segments = path.split('/').slice(1)
  segments.forEach((seg, i) => {
    const last = i === segments.length - 1
    if (seg === '.' || seg === '..') {
      if (seg === '..' && out.length > 0) out.pop()
      // A trailing dot segment leaves the path ending in '/'.
      if (last) out.push('')
      return
    }
    out.push(seg)
  })
  return `/${out.join('/')}`
}

/**
 * `scheme://host[:port]path` of an http(s) URI, normalised, or undefined
 * when it is not one this comparison can vouch for (userinfo, characters
 * outside RFC 3986, no host, a port out of range).
 */
export function normalizeHtu(uri: string): string | undefined {
  if (!URI_CHARS.test(uri) || BROKEN_PERCENT.test(uri)) return undefined
  const m = HTTP_URI.exec(uri)
  if (m === null) return undefined
  const scheme = (m[1] as string).toLowerCase()
  const hostPort = HOST_PORT.exec(m[2] as string)
  if (hostPort === null) return undefined
  const host = normalizePercent(hostPort[1] as string)
    .toLowerCase()
    .replace(PERCENT_OCTET, (o) => o.toUpperCase())
  let authority = host
  const portText = hostPort[2]
  if (portText !== undefined && portText !== '') {
    const port = Number(portText)
    if (port > 65535) return undefined
    if (port !== DEFAULT_PORT[scheme]) authority = `${host}:${port}`
  }
  const rawPath = m[3] as string
  const path = rawPath === '' ? '/' : removeDotSegments(normalizePercent(rawPath))
  return `${scheme}://${authority}${path}`
}

/**
 * Whether the proof's `htu` names `expected` (an absolute URI without query).
 * The exact string is what clients send almost always, so it is tried first
 * (`expected` is built by this server and never holds userinfo).
 */
export function htuMatches(htu: string, expected: string): boolean {
  if (htu === expected) return true
  const a = normalizeHtu(htu)
  return a !== undefined && a === normalizeHtu(expected)
}
