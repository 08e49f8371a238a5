import { hash } from 'node:crypto'

/**
 * SHA-256 of a token value, base64url: the only form in which a token reaches
 * the store or a cache. One-shot `crypto.hash` (Node ≥ 20.12) costs half of
 * `createHash().update().digest()`, and the gateway hashes on every request.
 */
export function hashToken(value: string): string {
  return hash('sha256', value, 'base64url')
}
