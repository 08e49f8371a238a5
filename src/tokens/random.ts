/**
 * The random values both faces hand out: tokens (refresh, opaque access,
 * device codes, sessions, CSRF, code) and identifiers (jti, grant id). One
 * definition, so a token's size and alphabet, and the shape check done
 * before any store lookup, cannot drift between the places that mint and
 * the places that check.
 */
import { randomBase64url } from '../crypto/random.js'

/** 32 random bytes, base64url: 43 characters, 256 bits (RFC 6749 10.10; RFC 9700 4.1.1). */
export function randomToken(): string {
  return randomBase64url(32)
}

/** A unique identifier (jti, grant id): 16 random bytes, base64url. */
export function randomId(): string {
  return randomBase64url(16)
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/

/** True when `value` could be one of our random tokens (checked before any store lookup). */
export function isTokenShaped(value: string | undefined): value is string {
  return value !== undefined && TOKEN_SHAPE.test(value)
}
