/**
 * check-config warns about a route scope no client of bearward's own server
 * can be granted (issue #42): a typo like `inventory:raed` otherwise passes
 * load and refuses every token at run time with insufficient_scope. Only
 * routes that take bearward's own tokens (`issuers` holds `self`) are
 * judged: another issuer's clients are not known here.
 */
import { isMap, isSeq, type Node } from 'yaml'
import type { Reader } from './reader.js'
import type { AuthorizationServerConfig, RouteConfig } from './validated-config.js'

/** Every scope some client can be granted: configured clients, registration and metadata documents. */
function grantable(as: AuthorizationServerConfig): Set<string> {
  const scopes = new Set<string>()
  for (const c of as.clients) for (const s of c.scopes) scopes.add(s)
  for (const s of as.registration?.scopes ?? []) scopes.add(s)
  for (const s of as.clientIdMetadataDocuments?.scopes ?? []) scopes.add(s)
  return scopes
}

function routeNode(routesNode: Node | undefined, index: number): Node | undefined {
  if (!isSeq(routesNode)) return routesNode
  const item = routesNode.items[index]
  if (!isMap(item)) return routesNode
  return (item.get('scopes', true) as Node | undefined) ?? (item as Node)
}

export function warnUnreachableScopes(r: Reader, routesNode: Node | undefined, routes: readonly RouteConfig[], as: AuthorizationServerConfig): void {
  const can = grantable(as)
  routes.forEach((route, i) => {
    if (!route.issuers.includes('self')) return
    const needed = new Set(Object.values(route.scopes).flat())
    for (const scope of needed) {
      if (can.has(scope)) continue
      r.warn(
        routeNode(routesNode, i),
        `routes[${i}].scopes`,
        `no client can be granted \`${scope}\` (no client's \`scopes\`, nor registration's or metadata documents', lists it): every token of bearward's own is refused on route \`${route.name}\`; a typo?`,
      )
    }
  })
}
