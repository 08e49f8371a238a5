/**
 * JWK thumbprints (RFC 7638) as DPoP uses them: `cnf.jkt` in access tokens,
 * `dpop_jkt` on authorization requests (RFC 9449 6.1, 10), and `ath`, the
 * hash of the access token a proof is presented with (RFC 9449 4.2).
 */
import { hash } from 'node:crypto'

/** The members RFC 7638 3.2 hashes, per key type, in lexicographic order. */
const REQUIRED_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
  OKP: ['crv', 'kty', 'x'],
}

/** A SHA-256 JWK thumbprint is 32 bytes: 43 base64url characters. */
export const JKT = /^[A-Za-z0-9_-]{43}$/

/**
 * The SHA-256 thumbprint of a public JWK, base64url (RFC 7638 3, RFC 9449
 * 6.1), or undefined when the key lacks a required member or one is not a
 * string. Only the required members are hashed, in order, without
 * whitespace, so equal keys always give equal thumbprints.
 * @see https://www.rfc-editor.org/rfc/rfc7638#section-3
 */
export function jwkThumbprint(jwk: Readonly<Record<string, unknown>>): string | undefined {
  const kty = jwk.kty
  const members = typeof kty === 'string' ? REQUIRED_MEMBERS[kty] : undefined
  if (members === undefined) return undefined
  const parts: string[] = []
  for (const name of members) {
    const value = jwk[name]
    if (typeof value !== 'string') return undefined
    // JSON.stringify of a string is exactly the JSON string RFC 7638 wants.
    parts.push(`${JSON.stringify(name)}:${JSON.stringify(value)}`)
  }
  return hash('sha256', `{${parts.join(',')}}`, 'base64url')
}

/**
 * `ath`: base64url of the SHA-256 of the access token's ASCII octets.
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-4.2
 */
export function accessTokenHash(accessToken: string): string {
  return hash('sha256', accessToken, 'base64url')
}
