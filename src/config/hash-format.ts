/**
 * The one stored form of client secrets and user passwords, written by
 * `bearward hash-secret` (src/crypto/secret.ts):
 * `scrypt$N$r$p$<salt base64url>$<hash base64url>`. Only the shape is checked
 * here; verification happens at authentication time.
 */

const B64URL = /^[A-Za-z0-9_-]+$/

/** A reason the value is not a usable hash, or undefined when it is. */
export function checkSecretHashShape(value: string): string | undefined {
  const hint = "expected the output of `printf '%s' SECRET | bearward hash-secret` (`scrypt$16384$8$1$<salt>$<hash>`)"
  const parts = value.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return `not a secret hash; ${hint}`
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string]
  if (!/^\d+$/.test(n) || !/^\d+$/.test(r) || !/^\d+$/.test(p)) return `scrypt parameters N, r, p must be integers; ${hint}`
  const cost = Number(n)
  if (cost < 2 || (cost & (cost - 1)) !== 0) return `scrypt N must be a power of two greater than 1; ${hint}`
  if (Number(r) < 1 || Number(p) < 1) return `scrypt r and p must be at least 1; ${hint}`
  if (!B64URL.test(salt) || salt.length < 11) return `the salt must be base64url (at least 8 bytes); ${hint}`
  if (!B64URL.test(hash) || hash.length < 22) return `the hash must be base64url (at least 16 bytes); ${hint}`
  return undefined
}
