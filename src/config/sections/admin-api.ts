/**
 * `admin_api`: the admin API under `/admin/v1/` (docs/admin.md). Off by
 * default. The two admin scopes are built in: the clients listed here get
 * them added to what they may ask for (no `scopes` entry), and the people
 * listed here are the only ones a token carrying them may name. A route
 * overlapping `public_path` is refused (it would hide the API, or be hidden).
 */
import type { Node } from 'yaml'
import type { AdminApiConfig, AuthorizationServerConfig, RouteConfig } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { keysAt } from '../contract.js'
import { checkRoutePath } from '../route-path.js'

export const ADMIN_API_KEYS = keysAt('#/properties/admin_api')

/** Full access to the admin API. */
export const ADMIN_SCOPE = 'bearward:admin'
/** Read-only access to the admin API (GET only). */
export const ADMIN_READ_SCOPE = 'bearward:admin:read'
export const ADMIN_SCOPES: readonly string[] = [ADMIN_SCOPE, ADMIN_READ_SCOPE]
/** The consent page's texts of the built-in admin scopes. */
export const ADMIN_SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  [ADMIN_SCOPE]: 'Administer this server: people, clients, grants',
  [ADMIN_READ_SCOPE]: 'Read this server’s people, clients and grants',
}

/** The admin API's path under public_url and admin_listen alike. */
export const ADMIN_API_BASE = '/admin/v1'

/** The section, or null when it is absent or `enabled: false`. */
export function readAdminApi(r: Reader, top: MapView, as: AuthorizationServerConfig | null, routes: readonly RouteConfig[]): AdminApiConfig | null {
  if (!top.has('admin_api') || top.isNull('admin_api')) return null
  const node = top.get('admin_api') as Node
  const path = top.pathOf('admin_api')
  const m = r.map(node, path, ADMIN_API_KEYS)
  if (m === undefined) return null
  const enabled = m.opt('enabled', r.bool(), false)
  const publicPath = m.maybe('public_path', r.str({ check: checkPublicPath })) ?? null
  const clients = m.maybe('clients', r.located(r.str({ check: nonEmpty }))) ?? []
  const people = m.maybe('people', r.located(r.str({ check: nonEmpty }))) ?? []
  if (!enabled) return null
  if (as === null) {
    r.problem(node, path, '`admin_api` needs `authorization_server`: its tokens are what the API accepts')
    return null
  }
  const known = new Map(as.clients.map((c) => [c.clientId, c]))
  for (const c of clients) {
    const client = known.get(c.value)
    if (client === undefined) r.problem(c.node, c.path, `no client \`${c.value}\` in \`authorization_server.clients\``)
    else if (!client.grantTypes.includes('client_credentials') && !client.grantTypes.includes('authorization_code')) {
      r.problem(c.node, c.path, `client \`${c.value}\` has neither client_credentials nor authorization_code: it could never get an admin token`)
    }
  }
  if (publicPath !== null) {
    for (const route of routes) {
      if (overlaps(route.match.path, publicPath)) {
        r.problem(
          m.get('public_path'),
          m.pathOf('public_path'),
          `route \`${route.name}\` (path \`${route.match.path}\`) overlaps \`admin_api.public_path\` \`${publicPath}\``,
        )
      }
    }
  }
  const usernames = new Map(as.users.map((u) => [u.username, u.sub]))
  return {
    publicPath,
    clients: [...new Set(clients.map((c) => c.value))],
    people: [...new Set(people.map((p) => p.value))],
    // A YAML person is named by username; the token carries their `sub`.
    peopleSubs: [...new Set(people.map((p) => usernames.get(p.value) ?? p.value))],
  }
}

function nonEmpty(v: string): string | undefined {
  return v.length > 0 ? undefined : 'must not be empty'
}

function checkPublicPath(v: string): string | undefined {
  if (v === '/') return '`public_path` cannot be `/`: it would hide every route'
  return checkRoutePath(v)
}

/** Two path prefixes overlap when one is the other or a segment-boundary prefix of it. */
export function overlaps(a: string, b: string): boolean {
  const under = (x: string, y: string): boolean => x === y || y === '/' || x.startsWith(`${y}/`)
  return under(a, b) || under(b, a)
}

/**
 * The config's clients with the admin scopes added to those `admin_api.clients`
 * lists: the scopes are built in, so these clients ask for them like any other.
 */
export function withAdminScopes(as: AuthorizationServerConfig, admin: AdminApiConfig): AuthorizationServerConfig {
  const listed = new Set(admin.clients)
  return {
    ...as,
    scopes: { ...as.scopes, ...ADMIN_SCOPE_DESCRIPTIONS },
    clients: as.clients.map((c) => (listed.has(c.clientId) ? { ...c, scopes: [...new Set([...c.scopes, ...ADMIN_SCOPES])] } : c)),
  }
}
