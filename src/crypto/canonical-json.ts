/**
 * The JSON Canonicalization Scheme (RFC 8785) of a value JSON.parse made: what an MCP tool
 * call's approval is bound to (docs/approvals.md), and what RFC 9396 authorization details are
 * compared and remembered by (docs/authorization-details.md). Key order and whitespace do not
 * matter, and neither do the spellings of one value: `1`, `1.0` and `1e0` are one number,
 * `"\u0061"` and `"a"` one string. Any change of a value does.
 *
 * Callers read their JSON strictly before (gateway/mcp/json.ts: UTF-8, no repeated or
 * `__proto__` member), so no other parser reads another object. What RFC 8785 leaves to I-JSON (RFC 7493) is refused here
 * rather than canonicalized into something an upstream reads otherwise: a string with a lone
 * surrogate, an integer beyond 2^53 (an upstream with big integers would read digits the IEEE
 * double lost, so two calls would share one approval), nesting deeper than MAX_DEPTH, and a
 * `__proto__` member (an upstream that merges the object would read it as its prototype).
 *
 * @see https://www.rfc-editor.org/rfc/rfc8785
 */

/** Why a value has no canonical form here. */
export class NotCanonicalizable extends Error {
  override readonly name = 'NotCanonicalizable'
}

/** Deeper than this is no tool's arguments (and would cost the stack). */
export const MAX_DEPTH = 64

/**
 * RFC 8785 3.2.2.2: strings as ECMAScript's JSON.stringify writes them (which escapes only `"`, `\`
 * and the controls, lower-case hex); 3.2.2.3: numbers as ECMAScript's Number-to-String (JSON.stringify
 * again, -0 as 0); 3.2.3: members sorted by their names' UTF-16 code units.
 */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_DEPTH) throw new NotCanonicalizable('nested too deeply')
  if (value === null || typeof value === 'boolean') return JSON.stringify(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new NotCanonicalizable('a number out of range')
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) throw new NotCanonicalizable('an integer beyond 2^53')
    return JSON.stringify(value)
  }
  if (typeof value === 'string') return canonicalString(value)
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`
  if (typeof value === 'object') {
    const o = value as Record<string, unknown>
    // JSON.parse makes it an own member; a reader that assigns members (Object.assign, merges) makes it the prototype.
    if (Object.hasOwn(o, '__proto__')) throw new NotCanonicalizable('a __proto__ member')
    // Plain `<` compares UTF-16 code units, as RFC 8785 3.2.3 asks (not the locale, not code points).
    const keys = Object.keys(o).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${keys.map((k) => `${canonicalString(k)}:${canonicalJson(o[k], depth + 1)}`).join(',')}}`
  }
  throw new NotCanonicalizable('not a JSON value')
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

function canonicalString(s: string): string {
  if (LONE_SURROGATE.test(s)) throw new NotCanonicalizable('a string with a lone surrogate')
  return JSON.stringify(s)
}
