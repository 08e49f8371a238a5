/**
 * Who may hold the admin scopes (`bearward:admin`, `bearward:admin:read`):
 * only the clients `admin_api.clients` lists, and, for a person's token,
 * only the people `admin_api.people` lists, signed in with a second factor
 * (`acr` mfa or better) when `mfa` is configured. Checked where every access
 * token is minted (issueAccessToken), so no grant type, refresh or exchange
 * can carry the scopes to anyone else.
 */
import type { AdminApiConfig } from '../config/validated-config.js'
import { ADMIN_SCOPES } from '../config/sections/admin-api.js'
import { InvalidScope } from '../errors.js'
import { meetsAcr } from '../tokens/acr.js'

export interface AdminScopeRequest {
  /** The granted scope, space separated. */
  scope: string
  clientId: string
  /** The person, or the client id for a client's own token. */
  sub: string
  /** How the person signed in; absent for a client's own token. */
  strength?: { readonly amr?: readonly string[]; readonly acr?: string }
}

/** The admin scopes `scope` names. */
export function adminScopesIn(scope: string): string[] {
  return scope.split(' ').filter((s) => ADMIN_SCOPES.includes(s))
}

/** Throws `invalid_scope` (naming the scope) when the request carries an admin scope it may not have. */
export function checkAdminScope(admin: AdminApiConfig | null | undefined, mfaConfigured: boolean, request: AdminScopeRequest): void {
  const asked = adminScopesIn(request.scope)
  if (asked.length === 0) return
  const named = asked.join(' ')
  if (!admin) throw new InvalidScope(`The scope ${named} is not available: the admin API is off`, { cause: 'admin scope, admin api off' })
  if (!admin.clients.includes(request.clientId)) {
    throw new InvalidScope(`The scope ${named} is not available to this client`, { cause: 'admin scope, client not in admin_api.clients' })
  }
  // A client's own token (client credentials) names the client itself.
  if (request.strength === undefined && request.sub === request.clientId) return
  if (!admin.peopleSubs.includes(request.sub)) {
    throw new InvalidScope(`The scope ${named} is not available to this person`, { cause: 'admin scope, person not in admin_api.people' })
  }
  if (mfaConfigured && !meetsAcr(request.strength ?? {}, ['mfa'])) {
    throw new InvalidScope(`The scope ${named} needs a sign-in with a second factor`, { cause: 'admin scope without mfa' })
  }
}
