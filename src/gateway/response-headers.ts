import { connectionNamed, canonicalHeaderName } from './header-names.js'
import type { FlatHeaders } from './flat-headers.js'
import { responseHeaderName, responseHeaderValue } from './header-text.js'

/**
 * Response headers never passed to the client: hop-by-hop ones (RFC 9110
 * 7.6.1) and X-Request-Id, which the gateway writes itself (it is the id our
 * logs carry). `Trailer` stays: it announces the trailer fields the client is
 * about to receive.
 */
const RESPONSE_DROPPED: ReadonlySet<string> = new Set([
  'x-request-id',
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'transfer-encoding',
  'upgrade',
])

/**
 * The response headers to pass to the client, from the upstream's raw
 * header list (undici gives the bytes as received): everything but
 * hop-by-hop headers, those the upstream's Connection header names, and
 * X-Request-Id, which the gateway writes itself (it is the id our logs
 * carry). Names keep the upstream's case and order; repeated headers (several
 * Set-Cookie) stay separate lines. Bytes are read as latin1, the encoding
 * node:http writes header strings in, so every byte reaches the client as
 * the upstream sent it (header-text.ts decodes them).
 */
export function responseHeaderList(raw: readonly (Buffer | string)[] | null): FlatHeaders {
  const out: FlatHeaders = []
  if (raw === null) return out
  let connection: string | undefined
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = responseHeaderName(raw[i] as Buffer | string)
    if (RESPONSE_DROPPED.has(name.lower)) {
      if (name.lower === 'connection') {
        const value = responseHeaderValue(name, raw[i + 1] as Buffer | string)
        connection = connection === undefined ? value : `${connection}, ${value}`
      }
      // A dropped header's value is never decoded.
      continue
    }
    out.push(name.text, responseHeaderValue(name, raw[i + 1] as Buffer | string))
  }
  const named = connectionNamed(connection)
  if (named === null) return out
  const kept: FlatHeaders = []
  for (let i = 0; i < out.length; i += 2) {
    const name = out[i] as string
    if (!named.has(canonicalHeaderName(name))) kept.push(name, out[i + 1] as string)
  }
  return kept
}
