/**
 * Who a person signed in at an upstream provider is at bearward: their `sub`,
 * the claims the provider's mapping keeps, and whether `allowed` lets them in.
 */
import type { IdentityProviderAllowed, IdentityProviderConfig } from '../../config/validated-config.js'

/** OIDC Core 2: a `sub` is at most 255 ASCII characters; printable only, as it reaches HTTP headers. */
const UPSTREAM_SUB = /^[\x21-\x7e]{1,255}$/

/**
 * The bearward `sub` of a person the provider `providerId` calls `upstreamSub`:
 * `<provider id>:<upstream sub>`. The provider id has no `:`, so two providers
 * never share a `sub`; the config refuses local users in this form, so a
 * local user never does either. Null when the upstream `sub` is not printable
 * ASCII of at most 255 characters.
 */
export function upstreamSubject(providerId: string, upstreamSub: string): string | null {
  return UPSTREAM_SUB.test(upstreamSub) ? `${providerId}:${upstreamSub}` : null
}

/** The provider id of an upstream `sub`, or null for a local one. */
export function providerOfSubject(sub: string, providers: { has(id: string): boolean }): string | null {
  const i = sub.indexOf(':')
  if (i <= 0) return null
  const id = sub.slice(0, i)
  return providers.has(id) ? id : null
}

/** Every upstream claim the provider's config reads (mapping and `allowed`). */
export function neededUpstreamClaims(config: IdentityProviderConfig): string[] {
  const names = new Set(Object.values(config.claims))
  if (config.allowed?.emailDomains) names.add('email')
  if (config.allowed?.claim) names.add(config.allowed.claim.name)
  return [...names]
}

/** bearward claims from the upstream ones, by the provider's `claims` mapping; missing upstream claims are left out. */
export function mapClaims(config: IdentityProviderConfig, upstream: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [ours, theirs] of Object.entries(config.claims)) {
    if (Object.hasOwn(upstream, theirs) && upstream[theirs] !== undefined && upstream[theirs] !== null) out[ours] = upstream[theirs]
  }
  return out
}

export type AllowedVerdict = { allowed: true } | { allowed: false; reason: string }

/**
 * `allowed`: every rule given must hold. An email domain needs an `email`
 * claim at that domain that the provider has not marked unverified
 * (`email_verified: false`); a claim rule needs the claim (a string or a
 * list of strings) to hold one of the values.
 */
export function checkAllowed(allowed: IdentityProviderAllowed | null, upstream: Readonly<Record<string, unknown>>): AllowedVerdict {
  if (allowed === null) return { allowed: true }
  if (allowed.emailDomains !== null) {
    const email = upstream.email
    if (typeof email !== 'string' || !email.includes('@')) return { allowed: false, reason: 'no email address' }
    if (upstream.email_verified === false) return { allowed: false, reason: 'email address not verified' }
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase()
    if (!allowed.emailDomains.includes(domain)) return { allowed: false, reason: 'email domain not allowed' }
  }
  if (allowed.claim !== null) {
    const value = upstream[allowed.claim.name]
    const held = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
    if (!held.some((v) => allowed.claim?.values.includes(v))) return { allowed: false, reason: `claim ${allowed.claim.name} has none of the allowed values` }
  }
  return { allowed: true }
}
