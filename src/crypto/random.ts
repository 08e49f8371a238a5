/**
 * The random values both faces hand out: tokens (refresh, opaque access,
 * device codes, sessions, CSRF, code) and identifiers (jti, grant id). One
 * definition, so a token's size and alphabet, and the shape check done
 * before any store lookup, cannot drift between the places that mint and
 * the places that check.
 */
import { randomBytes, randomFillSync } from 'node:crypto'

/**
 * Bytes come from the CSPRNG 4 KiB at a time, because one call per value
 * costs as much as the rest of a token response but the signature
 * (docs/performance.md, "Random values are drawn in batches"); each byte is
 * handed out once and zeroed as it goes.
 */
const POOL_BYTES = 4096
const pool = Buffer.alloc(POOL_BYTES)
let next = POOL_BYTES

/** `bytes` fresh random bytes, base64url (no padding). */
export function randomBase64url(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes <= 0) throw new RangeError('bytes must be a positive integer')
  if (bytes > POOL_BYTES) return randomBytes(bytes).toString('base64url')
  if (next + bytes > POOL_BYTES) {
    randomFillSync(pool)
    next = 0
  }
  const value = pool.toString('base64url', next, next + bytes)
  pool.fill(0, next, next + bytes)
  next += bytes
  return value
}

/**
 * 32 random bytes, base64url: 43 characters, 256 bits.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-10.10
 * @see https://www.rfc-editor.org/rfc/rfc9700#section-4.1.1
 */
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
