/**
 * CAEP token-claims-change (§3.2): which of a person's grants have tokens
 * carrying a changed claim. What bearward can know: its access tokens carry
 * the claims `authorization_server.access_token.claims` names, a standard
 * OpenID claim only when the grant's scope releases it (src/as/claims.ts);
 * ID tokens and UserInfo answers release claims by scope. So a grant is
 * ended when a changed claim is one its scope or the access-token claim list
 * puts into something its client holds. The limit: a claim the provider
 * changed under another name than bearward maps it to (identity_providers[].claims)
 * is matched by bearward's name only when the transmitter uses that name.
 */
import { SCOPE_OF_CLAIM } from '../as/claims.js'
import type { GrantRecord } from '../store/types.js'

/** A grant selector for claims `changed`, given the access-token claim list. */
export function grantsCarrying(changed: readonly string[], accessTokenClaims: readonly string[]): (g: GrantRecord) => boolean {
  const inAccessTokens = new Set(accessTokenClaims)
  return (g) => {
    const scopes = new Set(g.scope.split(' '))
    return changed.some((name) => {
      const scope = SCOPE_OF_CLAIM.get(name)
      if (scope !== undefined) return scopes.has(scope)
      return inAccessTokens.has(name)
    })
  }
}
