/**
 * bearward's own `acr` values and how a requested value is met, for every
 * place that judges one: the authorization server at /authorize, the gateway's
 * step-up rules, and the config reader that checks a route's requirement.
 *
 * Weakest first (docs/people.md): `pwd` one factor, a password; `mfa` two
 * factors, or a passkey with user verification; `phr` phishing-resistant, a
 * passkey took part. A requested value is met by a sign-in at that level or
 * above; any other issuer's value is met only by itself (bearward cannot rank
 * it).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9470#section-3
 * @see https://openid.net/specs/openid-connect-core-1_0.html#IDToken
 */

/** bearward's acr values, weakest first. */
export const OWN_ACR_VALUES = ['pwd', 'mfa', 'phr'] as const
export type OwnAcr = (typeof OWN_ACR_VALUES)[number]

function ownLevel(acr: string | undefined): number {
  return acr === undefined ? -1 : (OWN_ACR_VALUES as readonly string[]).indexOf(acr)
}

/**
 * Whether a sign-in meets one of the requested acr values (OIDC `acr_values`,
 * RFC 9470 `acr_values`): one of ours at its level or above, or any value
 * exactly equal.
 */
export function meetsAcr(strength: { readonly amr?: readonly string[]; readonly acr?: string }, requested: readonly string[]): boolean {
  const level = ownLevel(strength.acr)
  return requested.some((want) => want === strength.acr || (level >= 0 && ownLevel(want) >= 0 && level >= ownLevel(want)))
}

/** Whether any requested value is one this server can bring about by asking the person (one of its own). */
export function ownAcrRequested(requested: readonly string[]): boolean {
  return requested.some((want) => ownLevel(want) >= 0)
}
