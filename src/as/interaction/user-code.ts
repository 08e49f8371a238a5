/**
 * RFC 8628 6.1: people type user codes, so input is forgiving: case does not
 * matter, the dash is optional and spaces are ignored. The normalized form
 * (what the store keys on) is 8 upper-case characters.
 */
export function normalizeUserCode(input: string): string | null {
  const code = input.replace(/[\s-]/g, '').toUpperCase()
  return /^[A-Z0-9]{8}$/.test(code) ? code : null
}

/** The form shown to people: `ABCD-EFGH`. */
export function formatUserCode(normalized: string): string {
  return `${normalized.slice(0, 4)}-${normalized.slice(4)}`
}
