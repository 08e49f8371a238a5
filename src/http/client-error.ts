/**
 * The answer to a request Node's parser refused before any handler saw it
 * (the server's 'clientError' event). Node knows why; the answer says so
 * instead of a blanket 400:
 *
 * - a header section over the size limit: 431 (RFC 6585 5), or 414 (RFC 9110
 *   15.5.15) when the request line itself never ended: Node counts the
 *   request target against the same limit and reports both as
 *   HPE_HEADER_OVERFLOW;
 * - a request head not complete within `client_timeouts.headers`
 *   (slowloris): 408 (RFC 9110 15.5.9);
 * - anything else (HPE_INVALID_*, a bad chunk, a lone CR ...): 400.
 */
import { InvalidRequest, RequestHeaderFieldsTooLarge, RequestTimeout, UriTooLong, type OAuthError } from '../errors.js'

/** What 'clientError' hands over: an errno-style error, with the bytes llhttp was parsing. */
export interface ParserError extends Error {
  code?: string
  rawPacket?: Buffer
  bytesParsed?: number
}

/** `METHOD SP` at the start of a chunk: where a request line begins. */
const REQUEST_LINE_START = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ /

/** True when the chunk being parsed starts a request line that had not ended where parsing stopped. */
function requestLineUnfinished(err: ParserError): boolean {
  const packet = err.rawPacket
  if (packet === undefined) return false
  const head = packet.subarray(0, Math.min(packet.length, 64)).toString('latin1')
  if (!REQUEST_LINE_START.test(head)) return false
  const end = packet.indexOf('\r\n')
  return end === -1 || end >= (err.bytesParsed ?? packet.length)
}

/** The error family's answer for a parser error. */
export function clientErrorAnswer(err: ParserError): OAuthError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return requestLineUnfinished(err) ? new UriTooLong() : new RequestHeaderFieldsTooLarge()
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return new RequestTimeout()
    default:
      return new InvalidRequest('The request could not be parsed', { headers: { connection: 'close' } })
  }
}
