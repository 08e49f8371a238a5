import type { FlatHeaders } from './flat-headers.js'

/**
 * What the client's protocol can carry of an upstream's response fields
 * (response-headers.ts already dropped the hop-by-hop ones). node:http2
 * refuses to send a field HTTP/2 forbids (RFC 9113 8.2.2: connection-specific
 * fields), a name that is not a token (pseudo-header names among them: the
 * upstream's are not ours to send), and a second value of a field Node holds
 * to one value; for trailers it throws from inside a native callback, where
 * no handler's `try` reaches, and the process exits. node:http validates
 * HTTP/1.1 trailers the same way, and one bad field lost them all. So each
 * field is judged here, and what the client cannot be sent is dropped, alone.
 */

/** RFC 9110 5.1 field-name (token); a pseudo-header's `:` is not a token character. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** RFC 9110 5.5 field-value as node:http checks it: no NUL, CR, LF or other control but HTAB. */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/

/**
 * Connection-specific fields (RFC 9113 8.2.2), which node:http2 refuses, and
 * HTTP2-Settings (RFC 7540 3.2.1), which means something only on an
 * HTTP/1.1 connection being upgraded.
 */
const CONNECTION_SPECIFIC: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'http2-settings',
])

/**
 * Fields node:http2 sends with one value at most (its `kSingleValueHeaders`,
 * lib/internal/http2/util.js): a second one throws. The first is kept, as
 * a client that reads one value would read it.
 */
const SINGLE_VALUE: ReadonlySet<string> = new Set([
  'access-control-allow-credentials',
  'access-control-max-age',
  'access-control-request-method',
  'age',
  'authorization',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-md5',
  'content-range',
  'content-type',
  'date',
  'dnt',
  'etag',
  'expires',
  'from',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'range',
  'referer',
  'retry-after',
  'tk',
  'upgrade-insecure-requests',
  'user-agent',
  'x-content-type-options',
])

/**
 * Fields a trailer section must not carry on either protocol: the message's
 * framing is decided by then (RFC 9110 6.5.1), and node:http2 would send a
 * Content-Length that contradicts the body it framed.
 */
const NOT_IN_TRAILERS: ReadonlySet<string> = new Set(['content-length', 'transfer-encoding', 'trailer', 'host'])

/**
 * The fields of `flat` an HTTP/2 client can be sent (`http2`) or an
 * HTTP/1.1 one, as a head or (`trailers`) a trailer section. Order, case
 * and repeats of everything kept stay as they were.
 * @see https://www.rfc-editor.org/rfc/rfc9113#section-8.2.2
 */
export function clientFields(flat: FlatHeaders, http2: boolean, trailers: boolean): FlatHeaders {
  const out: FlatHeaders = []
  let seen: Set<string> | null = null
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = flat[i] as string
    const value = flat[i + 1] as string
    if (!TOKEN.test(name) || INVALID_VALUE.test(value)) continue
    const lower = name.toLowerCase()
    if (trailers && NOT_IN_TRAILERS.has(lower)) continue
    if (http2) {
      if (CONNECTION_SPECIFIC.has(lower)) continue
      if (SINGLE_VALUE.has(lower)) {
        seen ??= new Set()
        if (seen.has(lower)) continue
        seen.add(lower)
      }
    }
    out.push(name, value)
  }
  return out
}
