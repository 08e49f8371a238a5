/**
 * Which user claims a scope releases (OIDC Core 5.4), shared by the id_token
 * and /userinfo. A claim is released only when its scope was granted and the
 * user's config carries a value for it.
 */
import type { UserConfig } from '../config/validated-config.js'
import type { AsContext } from './context.js'
import { providerOfSubject } from './identity-providers/person.js'
import { configUserBySub } from './people/config-users.js'

import type { Person } from './people/person.js'

export type { Person }

/** OIDC Core 5.4: standard claims requested by each scope value. */
export const SCOPE_CLAIMS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  profile: [
    'name',
    'family_name',
    'given_name',
    'middle_name',
    'nickname',
    'preferred_username',
    'profile',
    'picture',
    'website',
    'gender',
    'birthdate',
    'zoneinfo',
    'locale',
    'updated_at',
  ],
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
})

/** Every claim a scope can release (for `claims_supported`). */
export function releasableClaims(): string[] {
  return Object.values(SCOPE_CLAIMS).flat()
}

/** The user claims the granted `scope` (space separated) allows. Never `sub`: the caller sets it. */
export function claimsForScope(user: Person, scope: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const s of scope.split(' ')) {
    for (const name of SCOPE_CLAIMS[s] ?? []) {
      if (Object.hasOwn(user.claims, name) && user.claims[name] !== undefined) out[name] = user.claims[name]
    }
  }
  return out
}

/** Which scope releases each standard claim (the inverse of SCOPE_CLAIMS). */
export const SCOPE_OF_CLAIM: ReadonlyMap<string, string> = new Map(
  Object.entries(SCOPE_CLAIMS).flatMap(([scope, names]) => names.map((n) => [n, scope] as const)),
)

/**
 * The person's claims an access token carries (`access_token.claims`): each
 * named claim the person has, a standard OpenID claim only when its scope was
 * granted (the client can read a JWT, and must not learn an email it was
 * not allowed), any other claim (groups, a department) always. Registered
 * token claims are refused at config load. One store read for a person who
 * signed in through a provider, none for a local user or when no claim is named.
 */
export async function accessTokenClaims(as: AsContext, sub: string, scope: string): Promise<Record<string, unknown> | undefined> {
  const names = as.as.accessToken.claims
  if (names.length === 0) return undefined
  const person = await findPersonBySub(as, sub)
  if (person === undefined) return undefined
  const granted = new Set(scope.split(' '))
  const out: Record<string, unknown> = {}
  for (const name of names) {
    const needs = SCOPE_OF_CLAIM.get(name)
    if (needs !== undefined && !granted.has(needs)) continue
    if (Object.hasOwn(person.claims, name) && person.claims[name] !== undefined) out[name] = person.claims[name]
  }
  return Object.keys(out).length === 0 ? undefined : out
}

/**
 * The configured user whose `sub` is `sub`. `sub` defaults to the username,
 * so the username map answers most lookups; a scan covers explicit subs
 * (the user list is config, and small).
 */
export function findUserBySub(as: AsContext, sub: string): UserConfig | undefined {
  return configUserBySub(as.users, sub)
}

/**
 * The person whose `sub` is `sub`: a configured user, else someone who
 * signed in through a still-configured identity provider, with the claims of
 * their latest sign-in (kept in the store). Rejects with StoreUnavailableError.
 */
export async function findPersonBySub(as: AsContext, sub: string): Promise<Person | undefined> {
  const local = await as.people.bySub(sub)
  if (local !== undefined) return local
  if (providerOfSubject(sub, as.upstream) === null) return undefined
  const record = await as.store.upstream.getPerson(sub)
  if (record === null) return undefined
  return { username: sub, sub, claims: record.claims }
}
