/**
 * Finding the access token in a protected request (RFC 6750 2): the
 * Authorization header always; the form body (2.2) and the query (2.3) only
 * where the route allows them, since tokens there leak into logs and
 * caches. A token sent more than one way, or twice, is invalid_request
 * (RFC 6750 3.1); no token at all is a bare challenge (RFC 6750 3).
 */
import type { IncomingMessage } from 'node:http'
import type { RouteConfig } from '../config/validated-config.js'
import { MissingToken, UnsupportedMediaType } from '../errors.js'
import { isFormContentType, readBody } from '../http/body.js'
import { http2HasBody, isHttp2 } from '../http/http2-request.js'
import { isB64token, malformedCredentials as malformed, tokenFromHeader } from '../http/authorization.js'

/** Where the token came from and what to forward instead of the raw request parts. */
export interface ExtractedToken {
  readonly token: string
  /** The query to forward: without `access_token` when the token came from it. */
  readonly query: string
  /** The form body read to find the token, without its `access_token` (what is forwarded), or null when the body was not read. */
  readonly body: Buffer | null
  /**
   * The token was checked against the b64token grammar here. A header token
   * is not: the Authenticator checks it unless it already validated that
   * exact token (see `checkBearerGrammar`).
   */
  readonly grammarChecked: boolean
  /** Sent as `Authorization: DPoP <token>` (RFC 9449 7.1): a proof must come with it. */
  readonly dpop: boolean
}

/** application/x-www-form-urlencoded decoding of one name or value; undefined when the escapes are malformed. */
function formDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return undefined
  }
}

function checkTokenValue(token: string, where: string): void {
  if (!isB64token(token)) throw malformed(`The access_token ${where} parameter is malformed`, `access_token ${where} grammar`)
}

/**
 * Take `access_token` out of a raw query string (RFC 6750 2.3). Returns the
 * token (null when absent or empty) and the query without it, the other
 * parameters byte for byte as sent.
 */
export function takeQueryToken(rawQuery: string): { token: string | null; query: string } {
  if (rawQuery === '') return { token: null, query: rawQuery }
  let token: string | null = null
  let found = 0
  const kept: string[] = []
  for (const part of rawQuery.split('&')) {
    const eq = part.indexOf('=')
    // Other parameters are the upstream's business: kept as sent, even when we cannot decode them.
    if (formDecode(eq === -1 ? part : part.slice(0, eq)) !== 'access_token') {
      kept.push(part)
      continue
    }
    found++
    const value = eq === -1 ? '' : formDecode(part.slice(eq + 1))
    if (value === undefined) throw malformed('The access_token query parameter is malformed', 'bad percent-encoding in access_token')
    if (value !== '') token = value
  }
  if (found === 0) return { token: null, query: rawQuery }
  if (found > 1) throw malformed('The access_token parameter is repeated', 'repeated access_token in query')
  if (token !== null) checkTokenValue(token, 'query')
  return { token, query: kept.join('&') }
}

/**
 * RFC 6750 2.2: a body token is considered only for a single-part
 * application/x-www-form-urlencoded body, on a method whose body has
 * defined semantics (never GET), over HTTP/1.1 and HTTP/2 alike.
 */
export function mayCarryFormToken(req: IncomingMessage): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return false
  if (!isFormContentType(req.headers['content-type'])) return false
  if (req.headers['transfer-encoding'] !== undefined) return true
  const length = req.headers['content-length']
  if (length !== undefined) return length !== '0'
  // HTTP/2 frames a body itself, with or without a length (RFC 9113 8.1.1):
  // one left unread here would carry its token to the upstream unjudged.
  return isHttp2(req) && http2HasBody(req)
}

/**
 * Take `access_token` out of a raw form body (RFC 6750 2.2), as
 * {@link takeQueryToken} does for the query: the token (null when absent or
 * empty) and the body without it, every other parameter the bytes the client
 * sent, in order (split on the `&` byte, so bytes that are not UTF-8 pass
 * unchanged). The upstream never receives the token: with `upstream_token`
 * it gets a credential of its own, with passthrough only the Authorization
 * header the client sent, and only with `forward_authorization`.
 */
export function takeBodyToken(body: Buffer): { token: string | null; body: Buffer } {
  let token: string | null = null
  let found = 0
  const kept: Buffer[] = []
  let start = 0
  while (start <= body.length) {
    let end = body.indexOf(AMPERSAND, start)
    if (end === -1) end = body.length
    const part = body.subarray(start, end)
    start = end + 1
    const eq = part.indexOf(EQUALS)
    // The name is decoded as URLSearchParams would, so what is taken out is what was judged.
    if (formDecode(part.subarray(0, eq === -1 ? part.length : eq).toString('utf8')) !== 'access_token') {
      kept.push(part)
      continue
    }
    found++
    const value = eq === -1 ? '' : formDecode(part.subarray(eq + 1).toString('utf8'))
    if (value === undefined) throw malformed('The access_token body parameter is malformed', 'bad percent-encoding in access_token')
    if (value !== '') token = value
  }
  if (found === 0) return { token: null, body }
  if (found > 1) throw malformed('The access_token parameter is repeated', 'repeated access_token in body')
  if (token !== null) checkTokenValue(token, 'body')
  const joined: Buffer[] = []
  for (const [i, part] of kept.entries()) {
    if (i > 0) joined.push(AMPERSAND_BYTES)
    joined.push(part)
  }
  return { token, body: Buffer.concat(joined) }
}

const AMPERSAND = 0x26
const EQUALS = 0x3d
const AMPERSAND_BYTES = Buffer.from('&')

/**
 * Read the form body (at most `limit` bytes, else 413) and take its
 * `access_token` out (null when absent or empty): the body returned is the
 * one to forward, without the token ({@link takeBodyToken}).
 */
async function readBodyToken(req: IncomingMessage, limit: number): Promise<{ token: string | null; body: Buffer }> {
  return takeBodyToken(await readBody(req, limit))
}

/**
 * The token of a request to `route`, from exactly one place. `allowBody` is
 * false for upgrades (no body to read). Throws MissingToken (401 with a bare
 * challenge) when there is none, InvalidRequest (400) when it is malformed,
 * repeated or sent more than one way, UnsupportedMediaType (400) for a
 * content-encoded form body, PayloadTooLarge (413) for a form body over
 * `max_body`. Synchronous unless a form body has to be read.
 */
export function extractToken(req: IncomingMessage, route: RouteConfig, rawQuery: string, allowBody: boolean): ExtractedToken | Promise<ExtractedToken> {
  const header = tokenFromHeader(req)
  let token = header === null ? null : header.token
  const dpop = header?.dpop === true
  // A header token's grammar is the Authenticator's to check; a query token's was checked here.
  let grammarChecked = false
  let ways = token === null ? 0 : 1
  let query = rawQuery
  if (route.tokenInQuery) {
    const fromQuery = takeQueryToken(rawQuery)
    query = fromQuery.query
    if (fromQuery.token !== null) {
      token = fromQuery.token
      grammarChecked = true
      ways++
    }
  } else if ((rawQuery.includes('access_token') || rawQuery.includes('%')) && takeQueryToken(rawQuery).query !== rawQuery) {
    // `%` too: `%61ccess_token` is the same parameter name once decoded.
    // A token in the URL where the route does not take one is refused rather
    // than ignored: ignoring it would forward the token to the upstream (and
    // its logs), and a header token beside it is "more than one method".
    throw malformed('Access tokens are not accepted in the query string of this route', 'access_token in query, not enabled')
  }
  // Only a form body is read (asynchronously); everything else is decided now.
  if (allowBody && route.tokenInBody && mayCarryFormToken(req)) return withBodyToken(req, route, token, ways, query, grammarChecked, dpop)
  return found(token, ways, query, null, grammarChecked, dpop)
}

/**
 * A form body under a Content-Encoding (RFC 9110 8.4) other than `identity`
 * is bytes the gateway cannot read for a token while the upstream, once it
 * decodes them, may find one: refused rather than forwarded unjudged.
 */
function refuseEncodedForm(req: IncomingMessage): void {
  const encoding = req.headers['content-encoding']
  if (encoding === undefined) return
  for (const coding of encoding.split(',')) {
    const c = coding.trim().toLowerCase()
    if (c !== '' && c !== 'identity') throw new UnsupportedMediaType('A form body that may carry an access token must not be content-encoded')
  }
}

async function withBodyToken(
  req: IncomingMessage,
  route: RouteConfig,
  token: string | null,
  ways: number,
  query: string,
  grammarChecked: boolean,
  dpop: boolean,
): Promise<ExtractedToken> {
  refuseEncodedForm(req)
  const fromBody = await readBodyToken(req, route.maxBodyBytes)
  if (fromBody.token !== null) return found(fromBody.token, ways + 1, query, fromBody.body, true, false)
  return found(token, ways, query, fromBody.body, grammarChecked, dpop)
}

/** A query or body token is a Bearer token; only the header's can be DPoP (then it is the only one: `ways` is 1). */
function found(token: string | null, ways: number, query: string, body: Buffer | null, grammarChecked: boolean, dpop: boolean): ExtractedToken {
  if (ways > 1) throw malformed('The access token was sent in more than one way', 'token in more than one place')
  if (token === null) throw new MissingToken()
  return { token, query, body, grammarChecked, dpop }
}
