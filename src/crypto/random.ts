import { randomBytes, randomFillSync } from 'node:crypto'

/**
 * Random values for tokens and identifiers, from the CSPRNG in batches.
 * Every issued token needs fresh random bytes (a jti, a refresh token, an
 * opaque token); one `randomBytes` call per value costs a few microseconds of
 * call overhead, as much as everything else in a token response but the
 * signature. So bytes are drawn 4 KiB at a time, each byte handed out once,
 * and zeroed as it is handed out (Node's randomUUID batches the same way).
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
