/**
 * The `htu` comparison of RFC 9449 4.3 (check 9): the proof's URI and the
 * request's, both without query and fragment, compared after the syntax-
 * and scheme-based normalisation of RFC 3986 6.2.2 and 6.2.3 (lower-case
 * scheme and host, default port removed, dot segments resolved).
 */

/** `origin + pathname` of an http(s) URI, or undefined when it is not one. */
export function normalizeHtu(uri: string): string | undefined {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return undefined
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined
  // WHATWG URL parsing lower-cases scheme and host, drops a default port and
  // resolves dot segments; query and fragment are left out here.
  return url.origin + url.pathname
}

/**
 * Whether the proof's `htu` names `expected` (an absolute URI without query).
 * The exact string is what clients send almost always, so it is tried first.
 */
export function htuMatches(htu: string, expected: string): boolean {
  if (htu === expected) return true
  const a = normalizeHtu(htu)
  return a !== undefined && a === normalizeHtu(expected)
}
