/**
 * The codes an authenticator app shows, computed here for the tests that
 * type them: TOTP (RFC 6238) as src/as/totp/codes.ts checks them, HMAC-SHA-1,
 * 6 digits, 30-second steps.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6238
 */
import * as OTPAuth from 'otpauth'

/** The code of the base32 `secret` at `ms` (milliseconds since the epoch). */
export function codeAt(secret: string, ms: number): string {
  return OTPAuth.TOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), timestamp: ms, algorithm: 'SHA1', digits: 6, period: 30 })
}

/**
 * A code for now the server has not seen: this step's or, when that is the
 * one `used` (the same step), the next step's, which the server accepts too
 * (a step before or after its own, src/as/totp/codes.ts WINDOW). A code is
 * accepted once per person and step, so a sign-in after the one that typed
 * `used` needs another.
 */
export function nextCode(secret: string, used: string): string {
  const now = Date.now()
  const code = codeAt(secret, now)
  return code !== used ? code : codeAt(secret, now + 30_000)
}
