/**
 * The per-route RFC 9396 step: a route's `authorization_details: { type }`
 * (the token must hold an entry of that type) and
 * `identity_headers.authorization_details` (the entries, as compact JSON,
 * in a header of the route's choice). Built once per route (plan/build.ts),
 * null where the route configures neither.
 *
 * RFC 9396 defines no resource server error. A token without an entry of
 * the type gets 403 `insufficient_authorization_details` (the code
 * draft-zehavi-oauth-rar-metadata proposes, in RFC 6750 3's challenge) with
 * the type needed as `authorization_details_type`: `insufficient_scope` would
 * send the client to ask for a scope, which cannot help.
 *
 * Entries that do not fit the header bound are refused the same way rather
 * than dropped: an upstream that relies on the header never sees a request
 * without it (docs/authorization-details.md).
 */
import { InsufficientAuthorizationDetails } from '../errors.js'
import type { TokenIdentity } from './token-identity.js'

/** The header's largest value, in bytes: below every common upstream's header limit, with room for the rest. */
export const MAX_AUTHORIZATION_DETAILS_HEADER_BYTES = 4096

/** JSON escapes for everything outside printable ASCII: a header value is bytes, and a control character must never reach one. */
const NOT_PRINTABLE_ASCII = /[^\x20-\x7e]/g

/** Compact JSON that is printable ASCII: every other character as `\uXXXX` (the JSON it decodes to is the same). */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(NOT_PRINTABLE_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The entries of a token's `authorization_details` claim of `type` (every entry for null); null when the claim is not an array of typed objects. */
function entriesOf(claim: unknown, type: string | null): Array<Record<string, unknown>> | null {
  if (!Array.isArray(claim)) return null
  const out: Array<Record<string, unknown>> = []
  for (const entry of claim) {
    if (!isObject(entry) || typeof entry.type !== 'string') return null
    if (type === null || entry.type === type) out.push(entry)
  }
  return out
}

export class AuthorizationDetailsStep {
  /** The type a token must hold an entry of; null: none is demanded (only the header is written). */
  readonly type: string | null
  /** Whether the entries go upstream (`identity_headers.authorization_details` is set). */
  readonly #forward: boolean
  readonly #missing: InsufficientAuthorizationDetails | null
  readonly #tooLarge: InsufficientAuthorizationDetails

  constructor(type: string | null, forward: boolean) {
    this.type = type
    this.#forward = forward
    this.#missing = type === null ? null : new InsufficientAuthorizationDetails(type)
    this.#tooLarge = new InsufficientAuthorizationDetails(
      type,
      `The access token's authorization details are larger than the ${MAX_AUTHORIZATION_DETAILS_HEADER_BYTES} bytes this route forwards`,
    )
  }

  /**
   * The refusal, or the header's value for the upstream (null: nothing to
   * send). Reads the claim of the verified token, or of the introspection
   * answer (RFC 9396 9.1, 9.2), alike.
   */
  judge(identity: TokenIdentity): InsufficientAuthorizationDetails | string | null {
    const entries = entriesOf(identity.claims.authorization_details, this.type)
    if (this.#missing !== null && (entries === null || entries.length === 0)) return this.#missing
    if (!this.#forward || entries === null || entries.length === 0) return null
    const value = asciiJson(entries)
    return value.length > MAX_AUTHORIZATION_DETAILS_HEADER_BYTES ? this.#tooLarge : value
  }
}
