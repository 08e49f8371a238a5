import { randomBytes } from 'node:crypto'

/** 32 random bytes, base64url: 43 characters, 256 bits (RFC 6749 10.10; RFC 9700 4.1.1). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url')
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/

/** True when `value` could be one of our random tokens (checked before any store lookup). */
export function isTokenShaped(value: string | undefined): value is string {
  return value !== undefined && TOKEN_SHAPE.test(value)
}
