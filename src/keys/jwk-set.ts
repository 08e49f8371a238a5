/**
 * Public JWK Sets (RFC 7517 5): the keys a set holds that we can verify
 * with, for a set fetched from a trusted issuer or given inline, and the one
 * check that says whether an inline set is usable, shared by the config
 * reader and client registration (RFC 7591 2 `jwks`), so a set refused at one
 * door is refused at the other.
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto'
import type { JWK } from 'jose'
import type { VerificationKey } from '../tokens/verify-jwt.js'
import { publicMembers } from './keyset.js'

/** More keys than this is not a client's key set. */
export const MAX_JWKS_KEYS = 10

/** Members that only a private or symmetric JWK has (RFC 7518 6.2.2, 6.3.2, 6.4.1). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

/**
 * Why `doc` cannot be used as a set of public signature keys, or undefined.
 * A private member anywhere is refused outright: a private key pasted where
 * the public one belongs has leaked, and the owner must hear it.
 */
export function jwkSetProblem(doc: unknown): string | undefined {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return 'a JWK Set is an object `{ keys: [...] }`'
  const keys = (doc as { keys?: unknown }).keys
  if (!Array.isArray(keys) || keys.length === 0) return 'a JWK Set needs a non-empty `keys` list'
  if (keys.length > MAX_JWKS_KEYS) return `a JWK Set here holds at most ${MAX_JWKS_KEYS} keys`
  for (const key of keys) {
    if (typeof key !== 'object' || key === null || Array.isArray(key)) return 'each key of a JWK Set is a JWK object'
    if (PRIVATE_MEMBERS.some((m) => m in key))
      return 'a JWK Set here holds public keys only: a private or symmetric key (`d`, `k`, ...) must never be published'
  }
  const usable = parseJwks(doc)
  if (usable === undefined || usable.length === 0) return 'the JWK Set has no usable public signature key (RSA, EC or OKP, `use: sig` when `use` is given)'
  return undefined
}

/**
 * The usable keys of a JWK Set document, or undefined when it is not one.
 * Keys for encryption, of symmetric type, or that fail to import are left out.
 */
export function parseJwks(doc: unknown): VerificationKey[] | undefined {
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as { keys?: unknown }).keys)) return undefined
  const keys: VerificationKey[] = []
  for (const item of (doc as { keys: unknown[] }).keys) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) continue
    const jwk = item as JWK
    if (jwk.use !== undefined && jwk.use !== 'sig') continue
    if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) continue
    if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') continue
    if (jwk.kid !== undefined && typeof jwk.kid !== 'string') continue
    if (jwk.alg !== undefined && typeof jwk.alg !== 'string') continue
    try {
      const key = createPublicKey({ key: publicMembers(jwk) as JsonWebKey, format: 'jwk' })
      keys.push({ kid: jwk.kid, alg: jwk.alg, key })
    } catch {
      // A key we cannot import is a key we do not use.
    }
  }
  return keys
}
