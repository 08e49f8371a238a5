/**
 * The access token of an `Authorization` header, for both faces: the
 * gateway's routes and the authorization server's UserInfo endpoint parse it
 * here, so a malformed or repeated header gets the same answer at both.
 *
 * RFC 6750 2.1: credentials = "Bearer" 1*SP b64token (RFC 9449 7.1: DPoP, the
 * same token grammar). A value that breaks the grammar (`Bearer a b`, a bare
 * `Bearer`) or a repeated header is a malformed request: 400 invalid_request
 * with a Bearer challenge (RFC 6750 2.1, 3.1; docs/architecture.md "Bearer credentials").
 * Another scheme (Basic) is not a bearer token: no token at all.
 */
import type { IncomingMessage } from 'node:http'
import { InvalidRequest } from '../errors.js'
import { headerCount } from './header-count.js'

/** RFC 6750 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

const BEARER = 'bearer'
const DPOP = 'dpop'

/**
 * A 400 about the credentials carries the Bearer challenge with error="invalid_request".
 * @see https://www.rfc-editor.org/rfc/rfc6750#section-3.1
 */
export function malformedCredentials(description: string, cause: string): InvalidRequest {
  return new InvalidRequest(description, { challenge: 'Bearer', cause })
}

/**
 * Whether `token` is a b64token.
 * @see https://www.rfc-editor.org/rfc/rfc6750#section-2.1
 */
export function isB64token(token: string): boolean {
  return B64TOKEN.test(token)
}

/**
 * Case-insensitive check for a scheme at the start of the header value
 * (RFC 9110 11.1: the scheme ends at whitespace).
 */
function hasScheme(value: string, scheme: string): boolean {
  if (value.length < scheme.length) return false
  for (let i = 0; i < scheme.length; i++) {
    if ((value.charCodeAt(i) | 0x20) !== scheme.charCodeAt(i)) return false
  }
  const next = value.charCodeAt(scheme.length)
  return value.length === scheme.length || next === 0x20 || next === 0x09
}

/** What the Authorization header carries: a token and whether its scheme is DPoP. */
export interface HeaderToken {
  readonly token: string
  readonly dpop: boolean
}

/**
 * The b64token grammar of an Authorization header token (RFC 6750 2.1);
 * invalid_request outside it. Separate from `tokenFromHeader` because the
 * regex over a JWT of hundreds of characters costs more than the cache
 * lookup that proves a token was seen, and checked, before: the gateway's
 * Authenticator runs it only for tokens it has not validated.
 * @see https://www.rfc-editor.org/rfc/rfc6750#section-2.1
 */
export function checkBearerGrammar(token: string): void {
  if (!B64TOKEN.test(token)) throw malformedCredentials('The Authorization header is not a valid Bearer credential', 'bearer grammar')
}

/**
 * The access token of the Authorization header with the Bearer (RFC 6750
 * 2.1) or DPoP (RFC 9449 7.1) scheme, or null when there is none or it uses
 * another scheme. A repeated header, or the scheme not followed by 1*SP and
 * a token, is invalid_request. The token's own grammar is left to
 * `checkBearerGrammar` (see there why).
 * @see https://www.rfc-editor.org/rfc/rfc6750#section-2.1
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-7.1
 */
export function tokenFromHeader(req: IncomingMessage): HeaderToken | null {
  const value = req.headers.authorization
  if (value === undefined) return null
  // Node keeps only the first Authorization header; a second one must not
  // slip past us to an upstream (or a check) that reads the last.
  if (headerCount(req, 'authorization') > 1) throw malformedCredentials('The Authorization header is repeated', 'repeated authorization header')
  const dpop = !hasScheme(value, BEARER)
  if (dpop && !hasScheme(value, DPOP)) return null
  const schemeLength = dpop ? DPOP.length : BEARER.length
  let start = schemeLength
  while (value.charCodeAt(start) === 0x20) start++
  if (start === schemeLength || start === value.length) {
    throw malformedCredentials(`The Authorization header is not a valid ${dpop ? 'DPoP' : 'Bearer'} credential`, 'bearer grammar')
  }
  return { token: value.slice(start), dpop }
}

/** The header token with its grammar checked: for callers without a cache of validated tokens (UserInfo). */
export function checkedTokenFromHeader(req: IncomingMessage): HeaderToken | null {
  const found = tokenFromHeader(req)
  if (found !== null) checkBearerGrammar(found.token)
  return found
}
