/**
 * The rules for what a client states about itself that a browser later
 * carries or a page later shows: its redirect URIs and its texts (name,
 * software id, ...). One module for the three doors a client comes in by:
 * the config's `clients[]`, dynamic registration (RFC 7591) and Client ID
 * Metadata Documents, so a value refused at one is refused at all.
 *
 * Why these rules:
 * - A URI is ASCII (RFC 3986 2: anything else is percent-encoded). A raw CR,
 *   LF, NUL, U+2028 or any character above U+00FF cannot go into a Location
 *   header, so a redirect URI holding one made every authorization of its
 *   client fail with a 500; WHATWG URL parsing silently drops tabs and
 *   newlines, so `new URL()` alone never noticed.
 * - A text shown to people must show what it says: bidi overrides and
 *   isolates (U+202A-202E, U+2066-2069, U+061C, U+200E-200F) can make a
 *   name read as another one, zero-width characters hide differences
 *   between two names that look the same, and controls and line separators
 *   have no business in a name.
 *
 * @see https://www.rfc-editor.org/rfc/rfc3986#section-2
 * @see https://www.rfc-editor.org/rfc/rfc8252#section-7
 * @see https://www.rfc-editor.org/rfc/rfc9700#section-4.1.3
 */

/** The longest URI a client may state (a redirect URI is repeated in every authorization request). */
export const MAX_CLIENT_URI = 2000

/** U+0000-001F, U+007F-009F: C0, DEL and C1 controls. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
/** U+2028, U+2029: line and paragraph separators. */
const LINE_SEPARATOR = /[\u2028\u2029]/
/** Bidi embeddings, overrides and isolates; the Arabic letter mark; LRM and RLM. */
const BIDI = /[\u202a-\u202e\u2066-\u2069\u061c\u200e\u200f]/
/** Zero-width space, non-joiner, joiner, word joiner, BOM (zero-width no-break space). */
const ZERO_WIDTH = /[\u200b-\u200d\u2060\ufeff]/
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** `U+000D`, for messages. */
function codePoint(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
}

function firstMatch(value: string, pattern: RegExp): string | undefined {
  return pattern.exec(value)?.[0]
}

/**
 * Why `value` cannot be a client's text shown to people, or undefined:
 * controls, line separators, bidi controls, zero-width characters and
 * unpaired surrogates are refused.
 */
export function clientTextProblem(value: string): string | undefined {
  const control = firstMatch(value, CONTROL) ?? firstMatch(value, LINE_SEPARATOR)
  if (control !== undefined) return `the text contains a control or line-separator character (${codePoint(control)})`
  const bidi = firstMatch(value, BIDI)
  if (bidi !== undefined) return `the text contains a bidirectional-text control character (${codePoint(bidi)}), which can make it read as something else`
  const hidden = firstMatch(value, ZERO_WIDTH)
  if (hidden !== undefined) return `the text contains an invisible zero-width character (${codePoint(hidden)})`
  if (LONE_SURROGATE.test(value)) return 'the text contains an unpaired surrogate (not valid Unicode text)'
  return undefined
}

/**
 * Why `value` cannot be a URI a client states (redirect, post-logout, logo,
 * policy, terms), for its characters alone, or undefined: printable ASCII
 * only, no space (RFC 3986 2).
 */
export function uriCharacterProblem(value: string): string | undefined {
  const control = firstMatch(value, CONTROL) ?? firstMatch(value, LINE_SEPARATOR)
  if (control !== undefined) return `the URI contains a control or line-separator character (${codePoint(control)})`
  const other = firstMatch(value, /[^\x21-\x7e]/u)
  if (other !== undefined) {
    return other === ' '
      ? 'the URI contains a space; percent-encode it as %20 (RFC 3986 2.1)'
      : `the URI contains ${codePoint(other)}; a URI is ASCII, percent-encode it (RFC 3986 2.1)`
  }
  return undefined
}

/** Schemes that run code or read local data where a browser lands. */
const SCRIPT_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:'])

/** Loopback hosts an http redirect URI may name (RFC 8252 7.3; `localhost` as RFC 8252 8.3 tolerates for development). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])

/**
 * Why `uri` cannot be a redirect URI, or undefined. The same rule for every
 * client:
 * - absolute, printable ASCII, at most 2000 characters, no fragment
 *   (RFC 6749 3.1.2), no userinfo;
 * - `https:` with a host; `http:` only to a loopback host, any port
 *   (RFC 8252 7.3);
 * - or a private-use scheme that is a reversed domain name, so it holds a
 *   '.' (RFC 8252 7.1), never one that runs code where it lands.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8252#section-7.1
 * @see https://www.rfc-editor.org/rfc/rfc8252#section-7.3
 */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_CLIENT_URI) return `a redirect URI may be at most ${MAX_CLIENT_URI} characters`
  const chars = uriCharacterProblem(uri)
  if (chars !== undefined) return chars
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return `\`${uri}\` is not an absolute URI; redirect URIs are compared by exact string match (RFC 9700 4.1.3), so write the full URI`
  }
  if (uri.includes('#')) return 'a redirect URI must not contain a fragment (RFC 6749 3.1.2)'
  if (url.username !== '' || url.password !== '' || /^[a-z][a-z0-9+.-]*:\/\/[^/?]*@/i.test(uri)) {
    return 'a redirect URI must not contain credentials (userinfo)'
  }
  if (url.protocol === 'https:') return url.hostname === '' ? 'a redirect URI needs a host' : undefined
  if (url.protocol === 'http:') {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : 'http redirect URIs are only accepted on a loopback host (127.0.0.1, [::1], localhost; RFC 8252 7.3); use https'
  }
  if (SCRIPT_SCHEMES.has(url.protocol)) return `\`${url.protocol}\` cannot be a redirect URI`
  return url.protocol.slice(0, -1).includes('.')
    ? undefined
    : 'a private-use redirect scheme must be a reversed domain name, e.g. `com.example.app:/callback` (RFC 8252 7.1)'
}
