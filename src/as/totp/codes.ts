/**
 * Authenticator-app codes (TOTP, RFC 6238: HMAC-SHA-1, 6 digits, 30-second
 * steps, what every authenticator app speaks) and recovery codes.
 *
 * A code is accepted in its own step and the one before or after (clock
 * drift between a phone and the server); the step it matched is returned so
 * the caller can refuse it a second time (`store.singleUse.use` per person and
 * step). Recovery codes are 10 random groups a person can type, shown once
 * and stored as scrypt hashes (src/crypto/secret.ts).
 *
 * @see https://www.rfc-editor.org/rfc/rfc6238#section-5.2
 */
import { randomInt } from 'node:crypto'
import * as OTPAuth from 'otpauth'

export const TOTP_PERIOD_SEC = 30
const DIGITS = 6
/** Steps either side of now a code may come from (RFC 6238 5.2: at most one is recommended). */
const WINDOW = 1

/** A new shared secret: 20 random bytes (RFC 4226 4 recommends 160 bits), base32. */
export function newTotpSecret(): string {
  return new OTPAuth.Secret({ size: 20 }).base32
}

function totp(secret: string, label: string, issuer: string): OTPAuth.TOTP {
  return new OTPAuth.TOTP({ issuer, label, algorithm: 'SHA1', digits: DIGITS, period: TOTP_PERIOD_SEC, secret: OTPAuth.Secret.fromBase32(secret) })
}

/** The `otpauth://` URI an authenticator app scans (the QR code's content). */
export function totpUri(secret: string, label: string, issuer: string): string {
  return totp(secret, label, issuer).toString()
}

/** What a person types: six digits, spaces and dashes ignored; anything else is not a code. */
export function readTotpCode(typed: string | undefined): string | null {
  const code = (typed ?? '').replace(/[\s-]/g, '')
  return /^\d{6}$/.test(code) ? code : null
}

/** The time step (a number of 30-second periods since the epoch) the code belongs to, or null when it is wrong. */
export function totpStep(secret: string, code: string, nowMs: number): number | null {
  const delta = OTPAuth.TOTP.validate({
    token: code,
    secret: OTPAuth.Secret.fromBase32(secret),
    algorithm: 'SHA1',
    digits: DIGITS,
    period: TOTP_PERIOD_SEC,
    timestamp: nowMs,
    window: WINDOW,
  })
  return delta === null ? null : Math.floor(nowMs / 1000 / TOTP_PERIOD_SEC) + delta
}

/** The QR code of `uri` as SVG markup: plain elements and attributes, no script or style, so the pages' CSP allows it inline. */
export async function qrSvg(uri: string): Promise<string> {
  // Loaded on first use: a start, and a server where nobody enrols an app, does not pay for it.
  const { default: QRCode } = await import('qrcode')
  return QRCode.toString(uri, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' })
}

/** How many recovery codes a person gets. */
export const RECOVERY_CODES = 10
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'

/** Ten codes of 10 characters (about 49 bits each, uniformly drawn) in two groups, from an alphabet without look-alikes. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => {
    const chars = Array.from({ length: 10 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)])
    return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`
  })
}

/** A typed recovery code in its stored form (lower case, one dash), or null when it cannot be one. */
export function readRecoveryCode(typed: string | undefined): string | null {
  const plain = (typed ?? '').toLowerCase().replace(/[\s-]/g, '')
  if (plain.length !== 10 || ![...plain].every((c) => RECOVERY_ALPHABET.includes(c))) return null
  return `${plain.slice(0, 5)}-${plain.slice(5)}`
}
