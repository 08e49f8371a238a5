/**
 * `routes[]`: what the gateway protects (RFC 6750) and where it forwards.
 * Cross-checks: issuer ids exist, each issuer can validate the route's token
 * kind, scope rules name methods the route matches.
 */
import type { Node } from 'yaml'
import type { RouteConfig, RouteTokenKind, UpstreamTokenConfig } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { UniqueSet } from '../unique.js'
import { AUTHORIZATION_DETAILS_TYPE } from './authorization-details-types.js'
import { checkRealm, readIdentityHeaders } from './gateway.js'
import { enumAt, keysAt } from '../contract.js'
import { readAuthentication } from './route-authentication.js'
import { readConcurrency } from './route-concurrency.js'
import { SELF, type RouteContext } from './route-context.js'
import { readRouteIssuers } from './route-issuers.js'
import { readMatch } from './route-match.js'
import { checkMcpStepUps, readMcp } from './route-mcp.js'
import { readProtectedResource } from './route-protected-resource.js'
import { readRouteLimits } from './route-rate-limits.js'
import { readScopeRules } from './route-scopes.js'
import { H2C, readRouteUpstream } from './route-upstreams.js'
import { checkUpstreamAudiences, readUpstreamToken } from './route-upstream-token.js'

export const ROUTE_KEYS = keysAt('#/$defs/route')

const TOKEN_KINDS = enumAt<RouteTokenKind>('#/$defs/route/properties/token')
const STORE_UNAVAILABLE = enumAt<RouteConfig['storeUnavailable']>('#/$defs/route/properties/store_unavailable')
const DPOP_MODES = enumAt<RouteConfig['dpop']>('#/$defs/route/properties/dpop')
const SENDER_CONSTRAINTS = enumAt<RouteConfig['senderConstraint']>('#/$defs/route/properties/sender_constraint')
export const TIMEOUT_KEYS = keysAt('#/$defs/route/properties/timeouts')

const ROUTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
const DEFAULT_MAX_BODY = 10 * 1024 * 1024
/** Upstream response headers and the gap between body chunks (`timeouts.headers`, `timeouts.idle`). */
const DEFAULT_READ_TIMEOUT_MS = 60_000

export function readRoutes(r: Reader, node: Node, path: string, ctx: RouteContext): RouteConfig[] {
  const routes: RouteConfig[] = []
  const names = new UniqueSet(r, 'route name')
  const seen: Array<{ route: RouteConfig; node: Node | undefined; path: string }> = []
  for (const item of r.items(node, path) ?? []) {
    const m = r.map(item.node, item.path, ROUTE_KEYS)
    if (m === undefined) continue
    const { name, route } = readRoute(r, m, ctx)
    if (name !== undefined) names.add(name, m.get('name'), m.pathOf('name'))
    if (route === undefined) continue
    warnOverlap(r, seen, route, m.get('match') ?? m.node, item.path)
    seen.push({ route, node: m.node, path: item.path })
    routes.push(route)
  }
  checkUpstreamAudiences(r, seen)
  return routes
}

function readRoute(r: Reader, m: MapView, ctx: RouteContext): { name: string | undefined; route: RouteConfig | undefined } {
  const name = m.req('name', r.str({ check: (v) => (ROUTE_NAME.test(v) ? undefined : 'a route name is letters, digits, `.`, `_` and `-`') }))
  const match = readMatch(r, m)
  const { upstream, pool: upstreamPool } = readRouteUpstream(r, m)
  const isPublic = m.opt('public', r.bool(), false)
  const token = m.opt('token', r.oneOf(TOKEN_KINDS, { what: 'a token kind' }), 'jwt')
  const issuers = readRouteIssuers(r, m, ctx, isPublic, token)
  const scopes = readScopeRules(r, m, isPublic, match?.methods ?? null)
  const authentication = readAuthentication(r, m, isPublic, match?.methods ?? null, issuers.includes(SELF))
  const upstreamCaFile = m.isNull('upstream_ca') ? null : (m.maybe('upstream_ca', r.filePath()) ?? null)
  if (upstreamCaFile !== null && upstream !== undefined && !upstream.startsWith('https:')) {
    r.problem(m.get('upstream_ca'), m.pathOf('upstream_ca'), '`upstream_ca` only applies to https:// upstreams')
  }
  const h2c = upstream?.startsWith(H2C) === true
  const http2 = m.opt('http2', r.bool(), h2c)
  if (upstream !== undefined && !h2c && http2 && !upstream.startsWith('https:')) {
    r.problem(m.get('http2'), m.pathOf('http2'), '`http2: true` is for https:// upstreams (ALPN); for cleartext HTTP/2 write `h2c://host:port`')
  }
  if (h2c && !http2) r.problem(m.get('http2'), m.pathOf('http2'), 'an `h2c://` upstream always speaks HTTP/2; remove `http2: false` or use http://')
  const timeouts = r.map(m.get('timeouts'), m.pathOf('timeouts'), TIMEOUT_KEYS)
  const audience = m.opt('audience', r.str(), ctx.publicUrl)
  const protectedResource = readProtectedResource(r, m, ctx, isPublic, match?.path)
  const tokenInBody = m.opt('token_in_body', r.bool(), false)
  const mcp = readMcp(r, m, isPublic, tokenInBody, ctx.publicUrl)
  checkMcpStepUps(r, m, authentication, mcp, issuers.includes(SELF))
  const authorizationDetails = readRouteAuthorizationDetails(r, m, isPublic)
  const route = {
    audience,
    audiences: [...new Set([audience, ...(protectedResource === null ? [] : [protectedResource.resource])])],
    protectedResource,
    mcp,
    token,
    issuers,
    scopes,
    authentication,
    public: isPublic,
    stripPrefix: m.opt('strip_prefix', r.bool(), false),
    tokenInBody,
    tokenInQuery: m.opt('token_in_query', r.bool(), false),
    passPreflight: m.opt('pass_preflight', r.bool(), false),
    preserveHost: m.opt('preserve_host', r.bool(), false),
    forwardAuthorization: m.opt('forward_authorization', r.bool(), false),
    identityHeaders: readIdentityHeaders(r, m.get('identity_headers'), m.pathOf('identity_headers'), ctx.gateway.identityHeaders),
    // Headers and idle default to one value (nginx's proxy_read_timeout, 60s,
    // covers both too): undici refreshes a connection's timer when the next
    // phase has the same timeout, and otherwise allocates a new one per phase
    // per request, which it keeps until its next tick, so into the old
    // generation (docs/performance.md).
    timeouts: {
      connectMs: timeouts?.opt('connect', r.millis({ min: 1 }), 5000) ?? 5000,
      headersMs: timeouts?.opt('headers', r.millis({ min: 1 }), DEFAULT_READ_TIMEOUT_MS) ?? DEFAULT_READ_TIMEOUT_MS,
      idleMs: timeouts?.opt('idle', r.millis({ min: 1 }), DEFAULT_READ_TIMEOUT_MS) ?? DEFAULT_READ_TIMEOUT_MS,
    },
    maxBodyBytes: m.opt('max_body', r.bytes(), DEFAULT_MAX_BODY),
    upstreamCaFile,
    upstreamHttp2: http2,
    upstreamPool,
    storeUnavailable: m.opt('store_unavailable', r.oneOf(STORE_UNAVAILABLE, { what: 'a store_unavailable policy' }), 'closed'),
    realm: m.opt('realm', r.str({ check: checkRealm }), ctx.gateway.realm),
    dpop: m.opt('dpop', r.oneOf(DPOP_MODES, { what: 'a DPoP mode' }), 'allowed'),
    senderConstraint: m.opt('sender_constraint', r.oneOf(SENDER_CONSTRAINTS, { what: 'a sender constraint' }), 'optional'),
    allowTrace: m.opt('allow_trace', r.bool(), false) || (match?.methods?.includes('TRACE') ?? false),
    upstreamToken: null as UpstreamTokenConfig | null,
    limits: readRouteLimits(r, m, { isPublic, mcp }),
    concurrency: readConcurrency(r, m, isPublic),
    ...(authorizationDetails === undefined ? {} : { authorizationDetails }),
  }
  route.upstreamToken = readUpstreamToken(r, m, ctx, { ...route, upstream })
  if (isPublic && m.has('dpop')) r.problem(m.get('dpop'), m.pathOf('dpop'), '`dpop` has no effect on a public route (no token is checked); remove it')
  if (isPublic && m.has('sender_constraint')) {
    r.problem(m.get('sender_constraint'), m.pathOf('sender_constraint'), '`sender_constraint` has no effect on a public route (no token is checked); remove it')
  }
  if (route.dpop === 'required' && (route.tokenInBody || route.tokenInQuery)) {
    r.problem(
      m.get('dpop'),
      m.pathOf('dpop'),
      'a DPoP-bound token travels in the Authorization header only (RFC 9449 7.1): remove `token_in_body` / `token_in_query`, or `dpop: required`',
    )
  }
  if (name === undefined || match === undefined || upstream === undefined) return { name, route: undefined }
  return { name, route: { name, match, upstream, ...route } }
}

/**
 * Two routes with the same normalized path and host and a common method:
 * only the first can ever serve those requests. Prefixes that shadow one
 * another are normal (longest prefix wins) and not reported.
 */
function warnOverlap(r: Reader, earlier: ReadonlyArray<{ route: RouteConfig; path: string }>, route: RouteConfig, node: Node | undefined, path: string): void {
  for (const other of earlier) {
    if (other.route.match.path !== route.match.path || other.route.match.host !== route.match.host) continue
    const a = other.route.match.methods
    const b = route.match.methods
    const common = a === null ? (b ?? ['every method']) : b === null ? a : a.filter((x) => b.includes(x))
    if (common.length === 0) continue
    const where = route.match.host === null ? route.match.path : `${route.match.host}${route.match.path}`
    r.warn(
      node,
      path,
      `route \`${route.name}\` matches the same requests as route \`${other.route.name}\` (${other.path}) for ${common.join(', ')} ${where}; only one of them can serve them`,
    )
  }
}

const ROUTE_AUTHORIZATION_DETAILS_KEYS = keysAt('#/$defs/route/properties/authorization_details')

/** `authorization_details: { type }` (RFC 9396): a type the token must hold an entry of; a public route has no token to hold one. */
function readRouteAuthorizationDetails(r: Reader, m: MapView, isPublic: boolean): { type: string } | undefined {
  const node = m.get('authorization_details')
  if (node === undefined) return undefined
  if (isPublic) {
    r.problem(node, m.pathOf('authorization_details'), '`authorization_details` has no effect on a public route (no token is checked); remove it')
    return undefined
  }
  const d = r.map(node, m.pathOf('authorization_details'), ROUTE_AUTHORIZATION_DETAILS_KEYS)
  const type = d?.req(
    'type',
    r.str({ check: (v) => (AUTHORIZATION_DETAILS_TYPE.test(v) ? undefined : 'an authorization details type is printable characters without spaces') }),
  )
  return type === undefined ? undefined : { type }
}
