import type { AsContext } from '../context.js'
import type { ScopeView } from '../views/consent.js'

/** The consent page's view of scopes: each with its configured description (`authorization_server.scopes`). */
export function describeScopes(as: AsContext, scopes: readonly string[]): ScopeView[] {
  return scopes.map((name) => ({
    name,
    description: Object.hasOwn(as.as.scopes, name) ? (as.as.scopes[name] ?? name) : name,
  }))
}
