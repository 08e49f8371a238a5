/**
 * How a person proved who they are, and how strong that is: the `amr`
 * (RFC 8176 method names) and `acr` a sign-in earns, which the session keeps
 * and every token of the grant carries (id_token, access token, introspection).
 *
 * bearward's own `acr` values, weakest first (docs/people.md):
 * - `pwd`: one factor, a password.
 * - `mfa`: two factors (a password and a second factor), or a passkey with
 *   user verification (the device's PIN or biometric is the second factor).
 * - `phr`: phishing-resistant: a passkey took part in the sign-in (and so it is `mfa` too).
 * A requested value is met by a sign-in at that level or above. A sign-in
 * at an upstream identity provider carries the provider's own `acr`, which
 * meets exactly that value (bearward cannot rank it).
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

/** bearward's acr values, weakest first. */
export const OWN_ACR_VALUES = ['pwd', 'mfa', 'phr'] as const
export type OwnAcr = (typeof OWN_ACR_VALUES)[number]

function ownLevel(acr: string | undefined): number {
  return acr === undefined ? -1 : (OWN_ACR_VALUES as readonly string[]).indexOf(acr)
}

/** A password alone. */
export function passwordSignIn(): SignInStrength {
  return { amr: ['pwd'], acr: 'pwd' }
}

/**
 * A passkey alone, with user verification (always required here). A synced
 * passkey (WebAuthn "multi-device", its private key in a password manager's
 * cloud) is a software-secured key, `swk`; a device-bound one, `hwk`.
 */
export function passkeySignIn(deviceType: 'singleDevice' | 'multiDevice'): SignInStrength {
  return { amr: [deviceType === 'multiDevice' ? 'swk' : 'hwk', 'user', 'mfa'], acr: 'phr' }
}

/** Longest amr list, and longest method name or acr, taken from an upstream id_token. */
const MAX_AMR = 10
const MAX_VALUE_LENGTH = 200
const PRINTABLE = /^[\x21-\x7e]+$/

function upstreamValue(v: unknown): v is string {
  return typeof v === 'string' && v.length <= MAX_VALUE_LENGTH && PRINTABLE.test(v)
}

/**
 * What an upstream provider's id_token says about its sign-in: its `amr`
 * (when an array of short printable strings) and `acr` (when a short
 * printable string). Anything else is dropped, never guessed at: the token
 * then carries no acr, which meets no requested value.
 */
export function upstreamSignIn(idToken: Readonly<Record<string, unknown>>): SignInStrength {
  const amr = Array.isArray(idToken.amr) && idToken.amr.length <= MAX_AMR && idToken.amr.every(upstreamValue) ? [...new Set(idToken.amr)] : []
  return upstreamValue(idToken.acr) ? { amr, acr: idToken.acr } : { amr }
}

/**
 * Whether a sign-in meets one of the requested acr values (OIDC `acr_values`,
 * RFC 9470 `acr_values`): one of ours at its level or above, or any value
 * exactly equal.
 */
export function meetsAcr(strength: SignInStrength, requested: readonly string[]): boolean {
  const level = ownLevel(strength.acr)
  return requested.some((want) => want === strength.acr || (level >= 0 && ownLevel(want) >= 0 && level >= ownLevel(want)))
}

/** Whether any requested value is one this server can bring about by asking the person (one of its own). */
export function ownAcrRequested(requested: readonly string[]): boolean {
  return requested.some((want) => ownLevel(want) >= 0)
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
