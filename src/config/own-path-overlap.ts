/**
 * A route must not hide one of bearward's own paths (issue #42): the
 * authorization server answers its exact paths before any route is looked
 * at, so a route on `/account` or `/token` would be dead there while
 * check-config said nothing. A route on an own path, or on a prefix above
 * one (`/assets` above `/assets/bearward.css`), is refused naming both. A
 * route on the issuer's own prefix (`/`, or `/auth` for an issuer
 * `https://h/auth`) is the usual catch-all: bearward's paths are taken out
 * of it, as documented, and it is not refused.
 */
import { isMap, isSeq, type Node } from 'yaml'
import { describeOwnEndpoint, issuerBasePath, type OwnPath } from './own-paths.js'
import type { Reader } from './reader.js'
import type { RouteConfig } from './validated-config.js'

/** Whether a route on prefix `prefix` would take requests for `path` (segment boundaries, as the gateway matches). */
function covers(prefix: string, path: string, caseInsensitive: boolean): boolean {
  const p = caseInsensitive ? prefix.toLowerCase() : prefix
  const q = caseInsensitive ? path.toLowerCase() : path
  return p === q || p === '/' || q.startsWith(`${p}/`)
}

function matchPathNode(routesNode: Node | undefined, index: number): Node | undefined {
  if (!isSeq(routesNode)) return routesNode
  const item = routesNode.items[index]
  if (!isMap(item)) return routesNode
  const match = item.get('match', true)
  if (!isMap(match)) return item as Node
  return (match.get('path', true) as Node | undefined) ?? (match as Node)
}

/** A problem for every route whose path hides one of `own` (the issuer's own paths). */
export function refuseRoutesOverOwnPaths(
  r: Reader,
  routesNode: Node | undefined,
  routes: readonly RouteConfig[],
  issuer: string,
  own: readonly OwnPath[],
): void {
  const base = issuerBasePath(issuer) || '/'
  routes.forEach((route, i) => {
    const prefix = route.match.path
    if (prefix === base) return
    const hidden = own.find((o) => covers(prefix, o.path, route.match.caseInsensitive))
    if (hidden === undefined) return
    const what = hidden.path === prefix ? `is ${describeOwnEndpoint(hidden.endpoint)}` : `holds ${describeOwnEndpoint(hidden.endpoint)} (\`${hidden.path}\`)`
    r.problem(
      matchPathNode(routesNode, i),
      `routes[${i}].match.path`,
      `route \`${route.name}\` on \`${prefix}\` overlaps bearward's own paths: \`${prefix}\` ${what}, which bearward answers itself, so the route would never see it; move the route (e.g. under \`/api${prefix}\`)`,
    )
  })
}
