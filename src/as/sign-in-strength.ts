/**
 * How a person proved who they are, and how strong that is: the `amr`
 * (RFC 8176 method names) and `acr` a sign-in earns, which the session keeps
 * and every token of the grant carries (id_token, access token, introspection).
 *
 * bearward's own `acr` values and how a requested one is met are in
 * src/tokens/acr.ts. A sign-in at an upstream identity provider (or an
 * ID-JAG, or a trusted issuer's token exchanged here) carries the provider's
 * `acr` mapped to ours by its `acr_values`; a value the map does not name
 * keeps its spelling, which meets exactly that value, unless it is spelt like
 * one of ours: then it is left out, since another issuer's `mfa` says nothing
 * bearward can rank (docs/step-up.md).
 *
 * @see https://www.rfc-editor.org/rfc/rfc8176#section-2
 * @see https://openid.net/specs/openid-connect-core-1_0.html#IDToken
 */

/** What a session, a code, a grant and a token record carry about the sign-in. */
export interface SignInStrength {
  /** RFC 8176 method names, in no particular order; empty when nothing is known. */
  amr: string[]
  /** The authentication context class, or absent when nothing is known (an upstream sign-in that did not say). */
  acr?: string
}

/** A password alone. */
export function passwordSignIn(): SignInStrength {
  return { amr: ['pwd'], acr: 'pwd' }
}

/**
 * The RFC 8176 method of a passkey: a synced passkey (WebAuthn
 * "multi-device", backup eligible: its private key in a password manager's
 * cloud) is a software-secured key, `swk`; a device-bound one, `hwk`.
 */
function passkeyMethod(deviceType: 'singleDevice' | 'multiDevice'): 'swk' | 'hwk' {
  return deviceType === 'multiDevice' ? 'swk' : 'hwk'
}

/** A passkey alone, with user verification (always required here): the device's PIN or biometric is the second factor. */
export function passkeySignIn(deviceType: 'singleDevice' | 'multiDevice'): SignInStrength {
  return { amr: [passkeyMethod(deviceType), 'user', 'mfa'], acr: 'phr' }
}

/**
 * A password, then a passkey as the second factor (user verification
 * preferred, not required: the password is the other factor). A passkey took
 * part, so it is phishing-resistant: `phr`.
 */
export function passwordAndPasskey(deviceType: 'singleDevice' | 'multiDevice'): SignInStrength {
  return { amr: ['pwd', passkeyMethod(deviceType), 'mfa'], acr: 'phr' }
}

import { meetsAcr, OWN_ACR_VALUES } from '../tokens/acr.js'

/** Longest amr list, and longest method name or acr, taken from an upstream id_token. */
const MAX_AMR = 10
const MAX_VALUE_LENGTH = 200
const PRINTABLE = /^[\x21-\x7e]+$/

function upstreamValue(v: unknown): v is string {
  return typeof v === 'string' && v.length <= MAX_VALUE_LENGTH && PRINTABLE.test(v)
}

/**
 * Another issuer's `acr` as ours: the value `acrValues` maps it to; else the
 * value itself, unless it is spelt like one of ours (then undefined: left
 * out, so it can never be ranked as bearward's own level).
 */
function foreignAcr(value: string, acrValues: Readonly<Record<string, string>>): string | undefined {
  if (Object.hasOwn(acrValues, value)) return acrValues[value]
  return (OWN_ACR_VALUES as readonly string[]).includes(value) ? undefined : value
}

/**
 * What an upstream provider's id_token (or an ID-JAG, or a trusted issuer's
 * access token) says about its sign-in: its `amr` (when an array of short
 * printable strings) and `acr` (when a short printable string, through
 * {@link foreignAcr} with the provider's `acr_values`). Anything else is
 * dropped, never guessed at: the token then carries no acr, which meets no
 * requested value.
 */
export function upstreamSignIn(idToken: Readonly<Record<string, unknown>>, acrValues: Readonly<Record<string, string>>): SignInStrength {
  const amr = Array.isArray(idToken.amr) && idToken.amr.length <= MAX_AMR && idToken.amr.every(upstreamValue) ? [...new Set(idToken.amr)] : []
  const acr = upstreamValue(idToken.acr) ? foreignAcr(idToken.acr, acrValues) : undefined
  return acr === undefined ? { amr } : { amr, acr }
}

/**
 * Whether a sign-in used two factors, as `mfa.required` and a client's
 * `require_mfa` need: our `mfa` or above (a provider's acr counts only as its
 * `acr_values` maps it), or a provider that says so in its amr (docs/people.md).
 */
export function twoFactorSignIn(strength: SignInStrength): boolean {
  return meetsAcr(strength, ['mfa']) || strength.amr.includes('mfa')
}

/** The strength of a record stored before sign-ins were recorded: nothing known. */
export function strengthOf(record: { amr?: string[]; acr?: string }): SignInStrength {
  return { amr: record.amr === undefined ? [] : [...record.amr], ...(record.acr === undefined ? {} : { acr: record.acr }) }
}

/** The `amr`/`acr` claims of a token or an introspection answer (none when nothing is known). */
export function strengthClaims(strength: SignInStrength | undefined): { amr?: string[]; acr?: string } {
  if (strength === undefined) return {}
  return { ...(strength.amr.length === 0 ? {} : { amr: [...strength.amr] }), ...(strength.acr === undefined ? {} : { acr: strength.acr }) }
}
