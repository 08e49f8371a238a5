/**
 * The RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers-11,
 * sections 2 and 3): each a Structured Fields List (RFC 9651 3.1) of policy
 * items, a String naming the policy with Integer parameters: `q` (quota
 * units) and `w` (window, seconds) in the policy, `r` (remaining) and `t`
 * (seconds until the quota resets) in the current state.
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/
 */

/** The field names, lower case as node:http writes them. */
export const POLICY_FIELD = 'ratelimit-policy'
export const STATE_FIELD = 'ratelimit'

/**
 * A policy name as an sf-string (RFC 9651 3.3.3): `"` and `\` escaped, and
 * anything outside printable ASCII (a tool name may hold it) percent-encoded,
 * which an sf-string cannot carry.
 */
export function policyName(name: string): string {
  let out = '"'
  for (const ch of name) {
    const code = ch.codePointAt(0) ?? 0
    if (ch === '"' || ch === '\\') out += '\\' + ch
    else if (code < 0x20 || code > 0x7e || ch === '%') out += encodeURIComponent(ch)
    else out += ch
  }
  return out + '"'
}

/** One RateLimit-Policy item: `"name";q=100;w=60`. */
export function policyItem(name: string, quota: number, windowSec: number): string {
  return `${name};q=${quota};w=${windowSec}`
}

/** One RateLimit item: `"name";r=42;t=30`. */
export function stateItem(name: string, remaining: number, resetSec: number): string {
  return `${name};r=${remaining};t=${resetSec}`
}

/**
 * Put the route's fields into an answer's header list in place of any the
 * upstream sent under the same names (its own limits are not the ones the
 * gateway enforces on this client).
 */
export function replaceFields(headers: string[], fields: readonly string[]): void {
  for (let i = headers.length - 2; i >= 0; i -= 2) {
    const name = (headers[i] as string).toLowerCase()
    if (name === POLICY_FIELD || name === STATE_FIELD) headers.splice(i, 2)
  }
  headers.push(...fields)
}
