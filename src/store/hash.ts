import { createHash } from 'node:crypto'

/** SHA-256 of a token value, base64url: the only form in which a token reaches the store or a cache. */
export function hashToken(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url')
}
