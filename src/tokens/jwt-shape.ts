/**
 * A compact JWS has exactly two dots (RFC 7515 7.1). Both faces decide by
 * this whether a token is a JWT (verified by signature) or opaque (looked up
 * by its hash); a JWT-shaped value is never looked up as opaque. indexOf, not
 * split: this runs on every request with a token.
 */
export function looksLikeJwt(token: string): boolean {
  const first = token.indexOf('.')
  if (first === -1) return false
  const second = token.indexOf('.', first + 1)
  return second !== -1 && token.indexOf('.', second + 1) === -1
}
