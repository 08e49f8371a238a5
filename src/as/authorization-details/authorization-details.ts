/**
 * Rich authorization requests (RFC 9396): the `authorization_details`
 * parameter parsed, validated against the declared types' JSON Schemas, and
 * compared for narrowing. One module for every endpoint that takes it
 * (/authorize, /par, /token, /bc-authorize), so each applies the same rules.
 *
 * Entries are compared as canonical JSON (RFC 8785's rules: member names
 * sorted by UTF-16 code units, no whitespace, ECMAScript number forms, JSON
 * string escapes), so key order, whitespace, `1` vs `1.0` vs `1e0` and
 * `\u0041` vs `A` do not make two entries differ, and any change of a value
 * does.
 */
import { createHash } from 'node:crypto'
import { compileAuthorizationDetailsSchemas, type DetailsValidator } from '../../config/authorization-details-schemas.js'
import { canonicalJson, NotCanonicalizable } from '../../crypto/canonical-json.js'
import { InvalidAuthorizationDetails } from '../../errors.js'

/** One entry of `authorization_details`: a JSON object with a string `type` (RFC 9396 2). */
export interface AuthorizationDetail {
  readonly type: string
  readonly [member: string]: unknown
}

/** The parameter's value, parsed and validated: at least one entry. */
export type AuthorizationDetails = readonly AuthorizationDetail[]

/** The parameter's largest accepted size, in UTF-8 bytes (docs/authorization-details.md). */
export const MAX_AUTHORIZATION_DETAILS_BYTES = 8192

/** At most this many entries: each is shown on the consent page and carried in every token. */
export const MAX_AUTHORIZATION_DETAILS_ENTRIES = 16

/** A path or a validator's message in an error description is cut at this length: a description never echoes a big value. */
const MAX_DESCRIBED = 80

/**
 * The declared types (`authorization_server.authorization_details_types`),
 * each schema compiled once per Runtime.
 * @see https://www.rfc-editor.org/rfc/rfc9396#section-2
 */
export class AuthorizationDetailsTypes {
  readonly #validators: ReadonlyMap<string, DetailsValidator>

  constructor(schemas: Readonly<Record<string, unknown>> = {}) {
    this.#validators = compileAuthorizationDetailsSchemas(schemas)
  }

  /** The declared types, for `authorization_details_types_supported` (RFC 9396 10). */
  names(): string[] {
    return [...this.#validators.keys()]
  }

  has(type: string): boolean {
    return this.#validators.has(type)
  }

  /** Why `entry` (of a declared type) fails its schema: `path: message`, or null when it passes. */
  problem(entry: AuthorizationDetail): string | null {
    const validate = this.#validators.get(entry.type)
    if (validate === undefined) return 'its type is not declared'
    if (validate(entry)) return null
    const first = validate.errors?.[0]
    if (first === undefined) return 'it does not match the schema of its type'
    return `${cut(first.instancePath === '' ? '(the entry)' : first.instancePath)} ${cut(first.message ?? 'does not match the schema')}`
  }
}

function cut(text: string): string {
  return text.length <= MAX_DESCRIBED ? text : `${text.slice(0, MAX_DESCRIBED)}…`
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Parse and validate `authorization_details` as one endpoint received it:
 * a JSON array of objects, at most {@link MAX_AUTHORIZATION_DETAILS_BYTES}
 * bytes and {@link MAX_AUTHORIZATION_DETAILS_ENTRIES} entries, each with a
 * string `type` that is declared, allowed to the client (`allowed`: its
 * `authorization_details_types`; RFC 9396 10) and whose entry meets the
 * type's schema. Every refusal is `invalid_authorization_details` (RFC 9396
 * 5) naming the entry's index and, for a schema failure, the failing path.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9396#section-2
 * @see https://www.rfc-editor.org/rfc/rfc9396#section-5
 */
export function parseAuthorizationDetails(raw: string, types: AuthorizationDetailsTypes, allowed: readonly string[] | undefined): AuthorizationDetails {
  if (Buffer.byteLength(raw, 'utf8') > MAX_AUTHORIZATION_DETAILS_BYTES) {
    throw new InvalidAuthorizationDetails(`authorization_details is larger than ${MAX_AUTHORIZATION_DETAILS_BYTES} bytes`)
  }
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    throw new InvalidAuthorizationDetails('authorization_details is not JSON')
  }
  if (!Array.isArray(value)) throw new InvalidAuthorizationDetails('authorization_details is a JSON array of objects')
  if (value.length === 0) throw new InvalidAuthorizationDetails('authorization_details has no entries')
  if (value.length > MAX_AUTHORIZATION_DETAILS_ENTRIES) {
    throw new InvalidAuthorizationDetails(`authorization_details has more than ${MAX_AUTHORIZATION_DETAILS_ENTRIES} entries`)
  }
  const entries: AuthorizationDetail[] = []
  for (const [index, entry] of value.entries()) {
    const at = `authorization_details[${index}]`
    if (!isObject(entry)) throw new InvalidAuthorizationDetails(`${at} is not a JSON object`)
    if (typeof entry.type !== 'string') throw new InvalidAuthorizationDetails(`${at} has no string type`)
    const detail = entry as AuthorizationDetail
    if (!types.has(detail.type)) throw new InvalidAuthorizationDetails(`${at} has a type this server does not know`)
    if (!(allowed ?? []).includes(detail.type)) throw new InvalidAuthorizationDetails(`${at} has a type this client may not request`)
    const problem = types.problem(detail)
    if (problem !== null) throw new InvalidAuthorizationDetails(`${at}: ${problem}`)
    // Entries are compared by their canonical form (narrowing, remembered consent): one that has
    // none (a lone surrogate, an integer beyond 2^53, deep nesting) would be read otherwise elsewhere.
    try {
      canonicalJson(detail)
    } catch (err) {
      if (err instanceof NotCanonicalizable) throw new InvalidAuthorizationDetails(`${at} has no canonical JSON form (${err.message})`)
      throw err
    }
    entries.push(detail)
  }
  return entries
}

/** A short, stable name for one entry (SHA-256 of its canonical JSON, base64url): what remembered consent keeps. */
export function detailDigest(detail: AuthorizationDetail): string {
  return createHash('sha256').update(canonicalJson(detail), 'utf8').digest('base64url')
}

/**
 * The entries a token request may have (RFC 9396 6.1 at the code exchange,
 * 6.2 at refresh): each requested entry must be one of the granted entries,
 * compared as canonical JSON; anything else is `invalid_authorization_details`.
 * Nothing requested keeps every granted entry.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9396#section-6.1
 * @see https://www.rfc-editor.org/rfc/rfc9396#section-6.2
 */
export function narrowAuthorizationDetails(
  requested: AuthorizationDetails | null,
  granted: AuthorizationDetails | undefined,
): AuthorizationDetails | undefined {
  if (requested === null) return granted
  const held = new Set((granted ?? []).map(canonicalJson))
  for (const [index, entry] of requested.entries()) {
    if (!held.has(canonicalJson(entry))) {
      throw new InvalidAuthorizationDetails(`authorization_details[${index}] was not granted: a token request may only narrow to entries the grant holds`)
    }
  }
  // Duplicates collapse: the narrowed set, in the order requested.
  const seen = new Set<string>()
  return requested.filter((e) => {
    const c = canonicalJson(e)
    if (seen.has(c)) return false
    seen.add(c)
    return true
  })
}

/** Entries as a store record keeps them (written by this module's callers), typed again; entries without a string `type` are dropped. */
export function storedDetails(stored: readonly Record<string, unknown>[] | undefined): AuthorizationDetails | undefined {
  if (stored === undefined) return undefined
  return stored.filter((e): e is AuthorizationDetail => typeof e.type === 'string')
}

/**
 * `authorization_details` of a token request (RFC 9396 6), parsed with the
 * client's allowed types; null when not sent.
 */
export function requestedDetails(
  form: { get(name: string): string | undefined },
  types: AuthorizationDetailsTypes,
  allowed: readonly string[] | undefined,
): AuthorizationDetails | null {
  const raw = form.get('authorization_details')
  return raw === undefined ? null : parseAuthorizationDetails(raw, types, allowed)
}
