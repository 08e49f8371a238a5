/**
 * The `auth_req_id` of a backchannel authentication request (OpenID CIBA Core 1.0 7.3):
 * `<approval id>.<secret>.<expiry>`, the secret 32 random bytes base64url.
 *
 * - The approval id names the record (the store looks it up directly); the secret is what makes
 *   the value a credential. The approval keeps only a hash of the secret with the client id (its
 *   `binding`), so another client presenting the value, or anyone who saw the approval page's URL
 *   (which carries the approval id alone), matches nothing.
 * - The expiry travels in the clear, as a device code's does, so that a request whose record the
 *   store has forgotten still answers `expired_token` rather than `invalid_grant`. Tampering with
 *   it changes only which of the two errors an unknown value gets.
 */
import { timingSafeEqual } from 'node:crypto'
import { randomToken } from '../../crypto/random.js'
import { hashToken } from '../../store/hash.js'

const SHAPE = /^([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{43})\.(\d{1,12})$/

/** A new secret for an auth_req_id. */
export function newAuthReqSecret(): string {
  return randomToken()
}

/** The auth_req_id of the approval `approvalId` whose binding holds `secret`, expiring at `expiresAt` (epoch seconds). */
export function authReqIdOf(approvalId: string, secret: string, expiresAt: number): string {
  return `${approvalId}.${secret}.${expiresAt}`
}

/** What the approval record keeps of an auth_req_id: its secret's hash, bound to the client it was issued to. */
export function authReqBinding(clientId: string, secret: string): string {
  return hashToken(`ciba\u0000${clientId}\u0000${secret}`)
}

/** Constant-time comparison of two bindings (both base64url SHA-256). */
export function sameBinding(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** The parts of an auth_req_id, or null when it is not one of ours. */
export function parseAuthReqId(value: string): { approvalId: string; secret: string; expiresAt: number } | null {
  const m = SHAPE.exec(value)
  if (m?.[1] === undefined || m[2] === undefined || m[3] === undefined) return null
  return { approvalId: m[1], secret: m[2], expiresAt: Number(m[3]) }
}
