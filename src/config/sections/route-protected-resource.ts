import { isScalar } from 'yaml'
import type { ProtectedResourceConfig } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { checkHttpUrl } from '../values.js'
import { keysAt } from '../contract.js'
import type { RouteContext } from './route-context.js'

export const PROTECTED_RESOURCE_KEYS = keysAt('#/$defs/route/properties/protected_resource')

/**
 * `protected_resource` (RFC 9728): on by default for a protected route,
 * `false` hides it, a mapping names it. The resource identifier defaults to
 * public_url plus the route's path, the URL a client is given to connect to.
 */
export function readProtectedResource(r: Reader, m: MapView, ctx: RouteContext, isPublic: boolean, path: string | undefined): ProtectedResourceConfig | null {
  const node = m.get('protected_resource')
  const fallback = (): string => (path === undefined || path === '/' ? ctx.publicUrl : `${ctx.publicUrl}${path}`)
  if (node === undefined) return isPublic ? null : { resource: fallback(), name: null, documentation: null }
  const where = m.pathOf('protected_resource')
  const resolved = r.resolve(node)
  if (isScalar(resolved) && typeof resolved.value === 'boolean') {
    if (!resolved.value) return null
    if (isPublic) {
      r.problem(node, where, 'a public route takes no token, so it has no protected resource metadata; remove `protected_resource`')
      return null
    }
    return { resource: fallback(), name: null, documentation: null }
  }
  const pr = r.map(node, where, PROTECTED_RESOURCE_KEYS)
  if (pr === undefined) return null
  if (isPublic) {
    r.problem(node, where, 'a public route takes no token, so it has no protected resource metadata; remove `protected_resource`')
    return null
  }
  const resource = pr.opt('resource', r.str({ check: checkResourceIdentifier }), fallback())
  return {
    resource,
    name: pr.maybe('name', r.str()) ?? null,
    documentation: pr.maybe('documentation', r.str({ check: (v) => checkHttpUrl(v, { query: true }) })) ?? null,
  }
}

/** RFC 9728 1.2 / RFC 8707 2: an absolute http(s) URI without a fragment. */
function checkResourceIdentifier(value: string): string | undefined {
  const reason = checkHttpUrl(value, { query: true })
  return reason === undefined ? undefined : `${reason} (a resource identifier is an absolute https URL, RFC 9728 1.2)`
}
