/** Printable ASCII and tabs, not starting or ending with whitespace: a value no proxy or upstream can read two ways. */
const SAFE_HEADER_VALUE = /^[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?$/

function scalarHeaderText(value: unknown): string | null {
  const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : null
  return text !== null && SAFE_HEADER_VALUE.test(text) ? text : null
}

/**
 * A token claim as a header value (`identity_headers.claims`): a string,
 * number or boolean as text, a list of them joined with ", "; null (no
 * header) for an absent claim, an object, or anything holding characters
 * outside printable ASCII, CR and LF above all: a claim comes from a person's
 * profile at an identity provider and must not be able to add a header line.
 */
export function claimHeaderValue(value: unknown): string | null {
  if (!Array.isArray(value)) return scalarHeaderText(value)
  if (value.length === 0) return null
  const parts: string[] = []
  for (const item of value) {
    const text = scalarHeaderText(item)
    if (text === null) return null
    parts.push(text)
  }
  return parts.join(', ')
}
