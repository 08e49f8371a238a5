/**
 * A resource URI (`resources/read`, `subscribe`, `unsubscribe`) as the MCP
 * server will read it. Both TypeScript SDKs look a resource up by
 * `new URL(uri).toString()` (WHATWG URL: scheme lower-cased, surrounding
 * spaces and controls and inner tabs and newlines removed, dot segments
 * resolved, a special scheme's host lower-cased and IDNA-mapped) and match
 * templates against that text; an RFC 3986 server also folds the host's
 * case and decodes percent-encoded unreserved characters (6.2.2). So the
 * gateway judges a URI only in a spelling every one of them reads alike: one
 * whose raw text is its own parsed form and its own RFC 3986 normal form.
 * Anything else is refused: there would be two readings, and the gateway
 * would judge one while the server served the other (issue #38.3).
 *
 * A canonical URI is then judged under its readings: itself, and its bare
 * form (scheme, host in lower case without a trailing dot, path: no
 * userinfo, port, query or fragment), which is what a server's template
 * callback reading `uri.hostname` or `uri.pathname` sees. A rule matching
 * either applies.
 *
 * @see https://url.spec.whatwg.org/#concept-basic-url-parser
 * @see https://www.rfc-editor.org/rfc/rfc3986#section-6.2.2
 */

/** The characters RFC 3986 allows in a URI (2.2 reserved, 2.3 unreserved, and `%` of 2.1). */
const URI_CHARACTERS = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/
/** RFC 3986 2.3: characters whose percent-encoding is equivalent to themselves. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/
/** A scheme at the start of a rule key (RFC 3986 3.1), lower-cased as WHATWG does. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/

/** Why `raw` is not a URI the gateway can judge; null when it is canonical. */
export function uriProblem(raw: string): string | null {
  if (!URI_CHARACTERS.test(raw)) return 'a resource URI with characters RFC 3986 does not allow (space, control, backslash, non-ASCII)'
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'a resource URI that does not parse as a URL'
  }
  if (url.href !== raw) return 'a resource URI that an MCP server reads as another (scheme case, dot segments, host spelling)'
  for (let i = raw.indexOf('%'); i !== -1; i = raw.indexOf('%', i + 1)) {
    const hex = raw.slice(i + 1, i + 3)
    if (!/^[0-9A-F]{2}$/.test(hex)) return 'a percent-encoding that is not two upper-case hex digits'
    if (UNRESERVED.test(String.fromCharCode(Number.parseInt(hex, 16)))) return 'a percent-encoded unreserved character'
  }
  // An opaque path (`orders:a/../b`) keeps its dot segments in WHATWG; RFC 3986 5.2.4 removes them.
  if (url.pathname.split('/').some((segment) => segment === '.' || segment === '..')) return 'a resource URI with a dot segment'
  return null
}

/**
 * The spellings a server may read `name` as (rule matching takes every one):
 * itself, its parsed form and its bare form; only itself when it does not
 * parse (a template in a completion ref, a listed name).
 */
export function uriReadings(name: string): readonly string[] {
  let url: URL
  try {
    url = new URL(name)
  } catch {
    return [name]
  }
  const href = url.href
  url.hash = ''
  url.search = ''
  if (url.host !== '') {
    url.username = ''
    url.password = ''
    url.port = ''
    url.hostname = url.hostname.toLowerCase().replace(/\.$/, '')
  }
  return [...new Set([name, href, url.href])]
}

/** The spellings a rule key stands for: itself and, for a key that parses, its parsed form; a pattern's scheme lower-cased. */
export function uriKeyForms(key: string): readonly string[] {
  if (key.includes('*')) return [...new Set([key, key.replace(SCHEME, (s) => s.toLowerCase())])]
  try {
    return [...new Set([key, new URL(key).href])]
  } catch {
    return [key]
  }
}
