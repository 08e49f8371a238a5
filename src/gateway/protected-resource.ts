/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the gateway's routes.
 *
 * Every protected route publishes a document, unless it says
 * `protected_resource: false`: its resource identifier, the issuers it
 * trusts, the scopes its rules name and the ways it takes a token. The
 * document is served at the well-known URL derived from the identifier
 * (RFC 9728 3.1: `/.well-known/oauth-protected-resource` inserted between
 * the host and the path, so `/mcp` → `/.well-known/oauth-protected-resource/mcp`
 * and a route at `/` → the bare well-known path), and that URL is what every
 * Bearer challenge of the route names in `resource_metadata` (RFC 9728 5.1).
 *
 * Built once per Runtime: documents are rendered to bytes here, so serving
 * one is a map lookup and a write.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Config, RouteConfig } from '../config/validated-config.js'
import { MethodNotAllowed, type OAuthError } from '../errors.js'
import { hostOf } from '../http/request-target.js'

/** RFC 9728 3: the well-known URI suffix. */
export const WELL_KNOWN_PREFIX = '/.well-known/oauth-protected-resource'

/** A rendered document and which host it answers for (null: any host). */
interface Served {
  readonly host: string | null
  readonly body: Buffer
}

/** The metadata URL of a resource identifier (RFC 9728 3.1), and the path it is served at. */
export function metadataLocation(resource: string): { url: string; path: string } {
  const u = new URL(resource)
  const path = `${WELL_KNOWN_PREFIX}${u.pathname === '/' ? '' : u.pathname}`
  return { url: `${u.origin}${path}${u.search}`, path }
}

/**
 * The RFC 9728 2 document of the routes sharing one resource identifier
 * (routes split by method share their path, hence their identifier): the
 * union of what each accepts.
 */
export function metadataDocument(config: Config, routes: readonly RouteConfig[]): Record<string, unknown> {
  const first = routes[0]
  if (first === undefined || first.protectedResource === null) throw new Error('metadataDocument: no route publishes metadata')
  const issuerOf = (id: string): string => (id === 'self' ? config.publicUrl : (config.issuers.find((i) => i.id === id)?.issuer ?? id))
  const servers = new Set<string>()
  const scopes = new Set<string>()
  const methods = new Set<string>(['header'])
  let name: string | null = null
  let documentation: string | null = null
  for (const route of routes) {
    for (const id of route.issuers) servers.add(issuerOf(id))
    for (const list of Object.values(route.scopes)) for (const s of list) scopes.add(s)
    const mcp = route.mcp
    for (const rules of mcp === null ? [] : [mcp.tools, mcp.resources, mcp.prompts])
      for (const list of Object.values(rules)) for (const s of list) scopes.add(s)
    // RFC 9728 2: the RFC 6750 names of the ways a token is taken.
    if (route.tokenInBody) methods.add('body')
    if (route.tokenInQuery) methods.add('query')
    name ??= route.protectedResource?.name ?? null
    documentation ??= route.protectedResource?.documentation ?? null
  }
  const doc: Record<string, unknown> = {
    resource: first.protectedResource.resource,
    authorization_servers: [...servers],
    bearer_methods_supported: [...methods],
  }
  if (scopes.size > 0) doc.scopes_supported = [...scopes]
  if (name !== null) doc.resource_name = name
  if (documentation !== null) doc.resource_documentation = documentation
  // RFC 9728 2 / RFC 9449: every route takes DPoP proofs with these algorithms;
  // DPoP-bound tokens are required only when each route of the group says so.
  doc.dpop_signing_alg_values_supported = [...config.dpop.algs]
  doc.dpop_bound_access_tokens_required = routes.every((r) => r.dpop === 'required')
  return doc
}

/** Answer headers: public JSON any origin may read (browser-based MCP clients discover it too). */
const HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json',
  'cache-control': 'public, max-age=300',
  'access-control-allow-origin': '*',
})

/** The protected resource metadata of one Runtime: documents by well-known path, and each route's URL. */
export class ProtectedResources {
  readonly #byPath: ReadonlyMap<string, readonly Served[]>
  readonly #urlOf: ReadonlyMap<RouteConfig, string>

  constructor(config: Config) {
    // Group the routes by (well-known path, host): each group is one document.
    const groups = new Map<string, { path: string; host: string | null; routes: RouteConfig[] }>()
    const urlOf = new Map<RouteConfig, string>()
    for (const route of config.routes) {
      if (route.public || route.protectedResource === null) continue
      const { url, path } = metadataLocation(route.protectedResource.resource)
      urlOf.set(route, url)
      const key = `${path}\n${route.match.host ?? ''}\n${route.protectedResource.resource}`
      const group = groups.get(key)
      if (group === undefined) groups.set(key, { path, host: route.match.host, routes: [route] })
      else group.routes.push(route)
    }
    const byPath = new Map<string, Served[]>()
    for (const g of groups.values()) {
      const body = Buffer.from(JSON.stringify(metadataDocument(config, g.routes)))
      const list = byPath.get(g.path) ?? []
      list.push({ host: g.host, body })
      // A host-specific document wins over an any-host one, as with routes.
      list.sort((a, b) => Number(b.host !== null) - Number(a.host !== null))
      byPath.set(g.path, list)
    }
    this.#byPath = byPath
    this.#urlOf = urlOf
  }

  /** The `resource_metadata` URL of a route's challenges, or undefined when it publishes none. */
  urlOf(route: RouteConfig): string | undefined {
    return this.#urlOf.get(route)
  }

  get size(): number {
    return this.#byPath.size
  }

  /**
   * Serve the document for `rawPath` when there is one: true when answered,
   * an OAuthError for a method other than GET, HEAD or OPTIONS, false when
   * the path is not a metadata URL (the request goes on to the routes).
   */
  serve(req: IncomingMessage, res: ServerResponse, rawPath: string): boolean | OAuthError {
    const docs = this.#byPath.get(rawPath)
    if (docs === undefined) return false
    const host = docs.some((d) => d.host !== null) ? hostOf(req.headers.host) : null
    const doc = docs.find((d) => d.host === null || d.host === host)
    if (doc === undefined) return false
    const method = req.method ?? 'GET'
    if (method === 'OPTIONS') {
      res.writeHead(204, {
        ...HEADERS,
        'access-control-allow-methods': 'GET, HEAD, OPTIONS',
        'access-control-allow-headers': '*',
        'access-control-max-age': '600',
        'content-length': '0',
      })
      res.end()
      return true
    }
    if (method !== 'GET' && method !== 'HEAD') return new MethodNotAllowed(['GET', 'HEAD', 'OPTIONS'])
    res.writeHead(200, { ...HEADERS, 'content-length': String(doc.body.length) })
    res.end(method === 'HEAD' ? undefined : doc.body)
    return true
  }
}
