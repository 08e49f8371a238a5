import { randomInt } from 'node:crypto'

/**
 * Device-flow user codes (RFC 8628 6.1): minted by /device_authorization,
 * shown and typed on the device page. 8 characters from an alphabet without
 * look-alikes, shown as `XXXX-XXXX`.
 */

/**
 * RFC 8628 6.1: consonants only (no words can form), without look-alikes
 * (no vowels, so no 0/O or 1/I confusion). 20^8 ≈ 2^34.6 codes.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
export const USER_CODE_LENGTH = 8

/** A new code, in the normalized form the store keys on. */
export function newUserCode(): string {
  let code = ''
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]
  return code
}

/**
 * People type user codes, so input is forgiving: case does not matter, the
 * dash is optional and spaces are ignored. The normalized form (what the
 * store keys on) is 8 upper-case characters.
 */
export function normalizeUserCode(input: string): string | null {
  const code = input.replace(/[\s-]/g, '').toUpperCase()
  return /^[A-Z0-9]{8}$/.test(code) ? code : null
}

/** The form shown to people: `ABCD-EFGH`. */
export function formatUserCode(normalized: string): string {
  return `${normalized.slice(0, 4)}-${normalized.slice(4)}`
}
