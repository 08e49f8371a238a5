/**
 * `routes[]`: what the gateway protects (RFC 6750) and where it forwards.
 * Cross-checks: issuer ids exist, each issuer can validate the route's token
 * kind, scope rules name methods the route matches.
 */
import { isMap, isScalar, type Node } from 'yaml'
import type { AuthenticationRequirement, GatewayConfig, IssuerConfig, McpRouteConfig, ProtectedResourceConfig, RouteConfig, RouteTokenKind } from '../validated-config.js'
import type { IdentityHeaders, UpstreamTokenConfig } from '../validated-config.js'
import { childPath, type Located, type MapView, type Reader } from '../reader.js'
import { checkRoutePath } from '../route-path.js'
import { isHostname } from '../listen.js'
import { suggest } from '../suggest.js'
import { UniqueSet } from '../unique.js'
import { checkHttpUrl, checkOrigin, HTTP_TOKEN, SCOPE_TOKEN, stripTrailingSlash } from '../values.js'
import { checkRealm, readIdentityHeaders } from './gateway.js'
import { meetsAcr } from '../../tokens/acr.js'
import { enumAt, keysAt } from '../contract.js'

export const ROUTE_KEYS = keysAt('#/$defs/route')

const TOKEN_KINDS = enumAt<RouteTokenKind>('#/$defs/route/properties/token')
const STORE_UNAVAILABLE = enumAt<RouteConfig['storeUnavailable']>('#/$defs/route/properties/store_unavailable')
const DPOP_MODES = enumAt<RouteConfig['dpop']>('#/$defs/route/properties/dpop')
const UPSTREAM_TOKEN_MODES = enumAt<'passthrough' | UpstreamTokenConfig['mode']>('#/$defs/route/properties/upstream_token')
export const UPSTREAM_ASSERTION_KEYS = keysAt('#/$defs/route/properties/upstream_assertion')

export const PROTECTED_RESOURCE_KEYS = keysAt('#/$defs/route/properties/protected_resource')
export const MCP_KEYS = keysAt('#/$defs/route/properties/mcp')
/** `{ acr, max_age }`: a step-up requirement (RFC 9470). */
export const AUTHENTICATION_KEYS = keysAt('#/$defs/authenticationRequirement')
/** An MCP rule written as a mapping: `{ scopes, authentication }`. */
export const MCP_RULE_KEYS = keysAt('#/$defs/mcpRule')

export const MATCH_KEYS = keysAt('#/$defs/route/properties/match')
export const TIMEOUT_KEYS = keysAt('#/$defs/route/properties/timeouts')

/** The built-in authorization server's issuer id. */
export const SELF = 'self'

const ROUTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
const DEFAULT_MAX_BODY = 10 * 1024 * 1024
/** How much of a JSON-RPC body an MCP route reads to judge it (`mcp.max_body`). */
const DEFAULT_MCP_MAX_BODY = 1024 * 1024
/** An MCP protocol revision: a date (MCP versioning). */
const PROTOCOL_REVISION = /^\d{4}-\d{2}-\d{2}$/
/** Upstream response headers and the gap between body chunks (`timeouts.headers`, `timeouts.idle`). */
const DEFAULT_READ_TIMEOUT_MS = 60_000

export interface RouteContext {
  /** The built-in AS's access token format, or null when there is no AS. */
  selfTokenFormat: 'jwt' | 'opaque' | null
  /** Issuers that validated completely, by id. */
  issuers: ReadonlyMap<string, IssuerConfig>
  /** Every issuer id defined, including those whose section has problems. */
  issuerIds: ReadonlySet<string>
  publicUrl: string
  gateway: GatewayConfig
}

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

/** The scheme of a cleartext HTTP/2 upstream (prior knowledge, RFC 9113 3.3). */
const H2C = 'h2c://'

/** An http(s):// upstream, or `h2c://` with the same shape as http://. */
function checkUpstreamUrl(value: string): string | undefined {
  if (!value.startsWith(H2C)) return checkHttpUrl(value)
  return checkHttpUrl(`http://${value.slice(H2C.length)}`)?.replace('http://', H2C)
}

function readRoute(r: Reader, m: MapView, ctx: RouteContext): { name: string | undefined; route: RouteConfig | undefined } {
  const name = m.req('name', r.str({ check: (v) => (ROUTE_NAME.test(v) ? undefined : 'a route name is letters, digits, `.`, `_` and `-`') }))
  const match = readMatch(r, m)
  const upstream = m.req('upstream', r.str({ check: checkUpstreamUrl }))
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
    storeUnavailable: m.opt('store_unavailable', r.oneOf(STORE_UNAVAILABLE, { what: 'a store_unavailable policy' }), 'closed'),
    realm: m.opt('realm', r.str({ check: checkRealm }), ctx.gateway.realm),
    dpop: m.opt('dpop', r.oneOf(DPOP_MODES, { what: 'a DPoP mode' }), 'allowed'),
    allowTrace: m.opt('allow_trace', r.bool(), false) || (match?.methods?.includes('TRACE') ?? false),
    upstreamToken: null as UpstreamTokenConfig | null,
  }
  route.upstreamToken = readUpstreamToken(r, m, ctx, { ...route, upstream })
  if (isPublic && m.has('dpop')) r.problem(m.get('dpop'), m.pathOf('dpop'), '`dpop` has no effect on a public route (no token is checked); remove it')
  if (route.dpop === 'required' && (route.tokenInBody || route.tokenInQuery)) {
    r.problem(
      m.get('dpop'),
      m.pathOf('dpop'),
      'a DPoP-bound token travels in the Authorization header only (RFC 9449 7.1): remove `token_in_body` / `token_in_query`, or `dpop: required`',
    )
  }
  if (name === undefined || match === undefined || upstream === undefined) return { name, route: undefined }
  return { name, route: { name, match, upstream: stripTrailingSlash(upstream), ...route } }
}

function readMatch(r: Reader, m: MapView): RouteConfig['match'] | undefined {
  const node = m.get('match')
  if (node === undefined) {
    r.problem(m.node, m.pathOf('match'), 'missing required key `match` (e.g. `match: { path: /orders }`)')
    return undefined
  }
  const match = r.map(node, m.pathOf('match'), MATCH_KEYS)
  if (match === undefined) return undefined
  const path = match.req('path', r.str({ check: checkRoutePath }))
  const host = match.isNull('host')
    ? null
    : (match.maybe(
        'host',
        r.str({
          check: (v) =>
            /:\d+$/.test(v) && !v.startsWith('[')
              ? `match a host without its port: \`${v.replace(/:\d+$/, '')}\``
              : isHostname(v.replace(/^\[(.*)\]$/, '$1'))
                ? undefined
                : `\`${v}\` is not a host name`,
        }),
      ) ?? null)
  const methods = match.has('methods')
    ? match.maybe(
        'methods',
        r.list(r.str({ check: (v) => (HTTP_TOKEN.test(v) ? undefined : `\`${v}\` is not an HTTP method`) }), {
          nonEmpty: true,
          emptyMessage: 'list at least one method, or remove `methods` to match every method',
        }),
      )
    : null
  const caseInsensitive = match.opt('case_insensitive', r.bool(), false)
  if (path === undefined || methods === undefined) return undefined
  return {
    path,
    host: host === null ? null : host.toLowerCase(),
    methods: methods === null ? null : [...new Set(methods.map((x) => x.toUpperCase()))],
    caseInsensitive,
  }
}

/**
 * `protected_resource` (RFC 9728): on by default for a protected route,
 * `false` hides it, a mapping names it. The resource identifier defaults to
 * public_url plus the route's path, the URL a client is given to connect to.
 */
function readProtectedResource(r: Reader, m: MapView, ctx: RouteContext, isPublic: boolean, path: string | undefined): ProtectedResourceConfig | null {
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

/**
 * `mcp`: the route fronts an MCP server (Streamable HTTP). `tools`,
 * `resources` and `prompts` name (or match, `*` globs) the extra scopes a
 * call, read or get of each needs; lists are filtered by the same rules
 * (`filter_lists`). `protocol_versions` limits the revisions accepted;
 * `allowed_origins` the browser origins (default: public_url's). The gateway
 * reads the JSON body itself, so a form token in the body (`token_in_body`)
 * cannot be combined.
 */
function readMcp(r: Reader, m: MapView, isPublic: boolean, tokenInBody: boolean, publicUrl: string): McpRouteConfig | null {
  const node = m.get('mcp')
  if (node === undefined) return null
  const where = m.pathOf('mcp')
  const mcp = r.map(node, where, MCP_KEYS)
  if (mcp === undefined) return null
  if (isPublic) {
    r.problem(node, where, 'a public route takes no token, so it cannot require scopes per tool; remove `mcp` or `public: true`')
    return null
  }
  if (tokenInBody) {
    r.problem(node, where, 'an MCP route reads its JSON-RPC body itself, so it cannot also take `token_in_body`; remove one of them')
    return null
  }
  const scopeToken = r.str({ check: (v) => (SCOPE_TOKEN.test(v) ? undefined : `\`${v}\` is not a valid scope name (RFC 6749 3.3)`) })
  const stepUps: McpRouteConfig['authentication'] = { tools: {}, resources: {}, prompts: {} }
  const rules = (key: 'tools' | 'resources' | 'prompts', what: string): Record<string, string[]> => {
    const out: Record<string, string[]> = {}
    const rulesNode = mcp.get(key)
    for (const e of rulesNode === undefined ? [] : (r.entries(rulesNode, mcp.pathOf(key)) ?? [])) {
      if (e.key === '') {
        r.problem(e.keyNode, e.path, `an empty ${what} name matches nothing; write a name or a pattern with \`*\``)
        continue
      }
      const rule = readMcpRule(r, e.value, e.path, what, scopeToken)
      if (rule === undefined) continue
      if (rule.scopes.length > 0) out[e.key] = rule.scopes
      if (rule.authentication !== null) stepUps[key][e.key] = rule.authentication
    }
    return out
  }
  const tools = rules('tools', 'tool')
  const resources = rules('resources', 'resource')
  const prompts = rules('prompts', 'prompt')
  const version = r.str({
    check: (v) => (PROTOCOL_REVISION.test(v) ? undefined : `\`${v}\` is not an MCP protocol revision; write a date like \`2025-11-25\``),
  })
  const versions = mcp.maybe(
    'protocol_versions',
    r.list(version, { nonEmpty: true, emptyMessage: 'list the MCP revisions this route accepts, or remove the key' }),
  )
  const origins = mcp.maybe('allowed_origins', r.list(r.str({ check: checkOrigin })))
  return {
    tools,
    resources,
    prompts,
    authentication: stepUps,
    maxBodyBytes: mcp.opt('max_body', r.bytes({ min: 1 }), DEFAULT_MCP_MAX_BODY),
    filterLists: mcp.opt('filter_lists', r.bool(), true),
    protocolVersions: versions === undefined ? null : [...new Set(versions)],
    allowedOrigins: origins === undefined ? [new URL(publicUrl).origin] : [...new Set(origins)],
  }
}

/**
 * One MCP rule: a list of scopes (the form every rule had first), or
 * `{ scopes, authentication }` when calling the tool also needs a step-up
 * (RFC 9470). undefined when refused (the problem is recorded).
 */
function readMcpRule(
  r: Reader,
  node: Node,
  path: string,
  what: string,
  scopeToken: ReturnType<Reader['str']>,
): { scopes: string[]; authentication: AuthenticationRequirement | null } | undefined {
  const resolved = r.resolve(node)
  if (!isMap(resolved)) {
    const scopes = r.list(scopeToken, { nonEmpty: true, emptyMessage: `list the scopes this ${what} needs, or remove it` })(node, path)
    return scopes === undefined ? undefined : { scopes: [...new Set(scopes)], authentication: null }
  }
  const rule = r.map(node, path, MCP_RULE_KEYS)
  if (rule === undefined) return undefined
  const scopes = rule.maybe('scopes', r.list(scopeToken))
  const authentication = rule.has('authentication') ? readRequirement(r, rule.get('authentication'), rule.pathOf('authentication')) : null
  if ((rule.has('scopes') && scopes === undefined) || authentication === undefined) return undefined
  if ((scopes ?? []).length === 0 && authentication === null) {
    r.problem(node, path, `name the \`scopes\` or the \`authentication\` this ${what} needs, or remove it`)
    return undefined
  }
  return { scopes: [...new Set(scopes ?? [])], authentication }
}

function readRouteIssuers(r: Reader, m: MapView, ctx: RouteContext, isPublic: boolean, token: RouteTokenKind): string[] {
  const hasSelf = ctx.selfTokenFormat !== null
  if (!m.has('issuers')) {
    if (hasSelf) return [SELF]
    if (!isPublic) {
      r.problem(
        m.node,
        m.pathOf('issuers'),
        'missing required key `issuers`: there is no `authorization_server`, so name the ids of `issuers[]` this route trusts',
      )
    }
    return []
  }
  const listed: Array<Located<string>> = m.opt('issuers', r.located(r.str(), { nonEmpty: !isPublic }), [])
  const out: string[] = []
  for (const { value: id, node, path } of listed) {
    if (out.includes(id)) continue
    if (id === SELF) {
      if (!hasSelf) {
        r.problem(node, path, '`self` is the built-in authorization server, but there is no `authorization_server` section')
        continue
      }
      if (!isPublic && token === 'jwt' && ctx.selfTokenFormat === 'opaque') {
        r.problem(
          node,
          path,
          '`self` issues opaque access tokens (`authorization_server.access_token.format: opaque`); use `token: introspect` or `token: any` on this route',
        )
        continue
      }
      out.push(id)
      continue
    }
    const issuer = ctx.issuers.get(id)
    if (issuer === undefined && ctx.issuerIds.has(id)) continue // its own section reports the problem
    if (issuer === undefined) {
      const known = [...(hasSelf ? [SELF] : []), ...ctx.issuerIds]
      const guess = suggest(id, known)
      const help =
        guess !== undefined
          ? `did you mean \`${guess}\`?`
          : known.length > 0
            ? `known issuers: ${known.map((k) => `\`${k}\``).join(', ')}`
            : 'define it under `issuers`'
      r.problem(node, path, `unknown issuer \`${id}\`; ${help}`)
      continue
    }
    if (!isPublic && token === 'jwt' && issuer.jwksUri === null) {
      r.problem(node, path, `issuer \`${id}\` has no \`jwks_uri\`, so its JWTs cannot be verified; add one, or use \`token: introspect\``)
      continue
    }
    if (!isPublic && token === 'introspect' && issuer.introspection === null) {
      r.problem(node, path, `issuer \`${id}\` has no \`introspection\` endpoint; add one, or use \`token: jwt\``)
      continue
    }
    out.push(id)
  }
  return out
}

function readScopeRules(r: Reader, m: MapView, isPublic: boolean, methods: string[] | null): Record<string, string[]> {
  const node = m.get('scopes')
  if (node === undefined) return {}
  if (isPublic) {
    r.problem(node, m.pathOf('scopes'), 'a public route takes no token, so it has no scopes; remove `scopes` or `public: true`')
    return {}
  }
  const rules: Record<string, string[]> = {}
  const keys = new UniqueSet(r, 'method')
  const scopeToken = r.str({ check: (v) => (SCOPE_TOKEN.test(v) ? undefined : `\`${v}\` is not a valid scope name (RFC 6749 3.3)`) })
  for (const e of r.entries(node, m.pathOf('scopes')) ?? []) {
    if (e.key !== '*' && !HTTP_TOKEN.test(e.key)) {
      r.problem(e.keyNode, e.path, `\`${e.key}\` is not an HTTP method or \`"*"\` (any method)`)
      continue
    }
    const method = e.key === '*' ? '*' : e.key.toUpperCase()
    if (!keys.add(method, e.keyNode, e.path)) continue
    if (method !== '*' && methods !== null && !methods.includes(method)) {
      r.problem(e.keyNode, e.path, `this rule can never apply: the route only matches ${methods.join(', ')}`)
      continue
    }
    const scopes = r.list(scopeToken)(e.value, e.path)
    if (scopes !== undefined) rules[method] = [...new Set(scopes)]
  }
  return rules
}

/**
 * Whether a token whose acr is `value` meets every list: exactly, or (for
 * the built-in issuer, `ranked`) by its own ranking, `pwd` < `mfa` < `phr`
 * (src/gateway/step-up.ts).
 */
function acceptedByAll(value: string, lists: ReadonlyArray<readonly string[]>, ranked: boolean): boolean {
  return lists.every((list) => list.includes(value) || (ranked && meetsAcr({ amr: [], acr: value }, list)))
}

/**
 * An MCP rule's `acr` must share a value with the route's rule for POST
 * (the one a tools/call meets first): no token could meet both otherwise,
 * and the client would be sent round between the two challenges.
 */
function checkMcpStepUps(r: Reader, m: MapView, authentication: Record<string, AuthenticationRequirement>, mcp: McpRouteConfig | null, ranked: boolean): void {
  if (mcp === null) return
  const listed = Object.entries(authentication).filter(([method]) => method !== '*')
  const post = authentication.POST ?? authentication['*']
  const routeLists = (post !== undefined ? [post] : listed.map(([, rule]) => rule)).flatMap((rule) => (rule.acr === null ? [] : [rule.acr]))
  if (routeLists.length === 0) return
  for (const kind of ['tools', 'resources', 'prompts'] as const) {
    for (const [name, rule] of Object.entries(mcp.authentication[kind])) {
      if (rule.acr === null) continue
      const both = [rule.acr, ...routeLists]
      if (both.flat().some((v) => acceptedByAll(v, both, ranked))) continue
      r.problem(
        m.get('mcp'),
        `${childPath(childPath(m.pathOf('mcp'), kind), name)}.authentication.acr`,
        `no value here is one the route's \`authentication\` accepts for POST, so no token could call it; list a value of both`,
      )
    }
  }
}

/** `upstream_assertion.header` when none is written: named like the assertion headers identity-aware proxies send. */
const DEFAULT_ASSERTION_HEADER = 'x-bearward-assertion'
/** Longest `upstream_token_lifetime`: what is signed for an upstream is meant to be short-lived. */
const MAX_UPSTREAM_LIFETIME_SEC = 300
/**
 * Request headers an assertion may not travel in: those the gateway writes
 * or drops itself, and those that carry credentials or framing.
 */
const RESERVED_ASSERTION_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'dpop',
  'cookie',
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'content-type',
  'expect',
  'forwarded',
  'max-forwards',
  'traceparent',
  'tracestate',
  'x-request-id',
])

/** A header name as an upstream may read it: lower case, `_` as `-` (src/gateway/headers.ts). */
const headerKey = (name: string): string => name.toLowerCase().replaceAll('_', '-')

type RouteSoFar = Pick<RouteConfig, 'public' | 'forwardAuthorization' | 'scopes' | 'mcp' | 'identityHeaders' | 'audiences'> & { upstream: string | undefined }

/**
 * `upstream_token` and its keys (`upstream_audience`, `upstream_scopes`,
 * `upstream_token_lifetime`, `upstream_assertion`): null for `passthrough`.
 * The signed modes need the authorization server's keys, a token to speak
 * for (not a public route), and the client's own Authorization never
 * forwarded beside them.
 */
function readUpstreamToken(r: Reader, m: MapView, ctx: RouteContext, route: RouteSoFar): UpstreamTokenConfig | null {
  const mode = m.opt('upstream_token', r.oneOf(UPSTREAM_TOKEN_MODES, { what: 'an upstream token mode' }), 'passthrough')
  const dependent = ['upstream_audience', 'upstream_scopes', 'upstream_token_lifetime', 'upstream_assertion'] as const
  if (mode === 'passthrough') {
    for (const key of dependent) {
      if (m.has(key)) r.problem(m.get(key), m.pathOf(key), `\`${key}\` applies with \`upstream_token: exchange\` or \`assertion\`; set one, or remove the key`)
    }
    return null
  }
  const at = m.get('upstream_token')
  const where = m.pathOf('upstream_token')
  let ok = true
  if (route.public) {
    r.problem(at, where, `a public route takes no token, so there is no one to sign an upstream ${mode} for; remove \`upstream_token\` or \`public: true\``)
    ok = false
  }
  if (ctx.selfTokenFormat === null) {
    r.problem(at, where, `\`upstream_token: ${mode}\` is signed with the authorization server's keys, and there is no \`authorization_server\` section`)
    ok = false
  }
  if (route.forwardAuthorization) {
    r.problem(
      m.get('forward_authorization'),
      m.pathOf('forward_authorization'),
      `with \`upstream_token: ${mode}\` the client's Authorization header is never forwarded; remove \`forward_authorization\``,
    )
    ok = false
  }
  if (mode === 'exchange' && m.has('upstream_assertion')) {
    r.problem(m.get('upstream_assertion'), m.pathOf('upstream_assertion'), '`upstream_assertion` applies with `upstream_token: assertion`; remove it')
    ok = false
  }
  const audience = m.opt('upstream_audience', r.str(), route.upstream === undefined ? '' : upstreamOrigin(route.upstream))
  if (m.has('upstream_audience') && isOwnAudience(audience, ctx.publicUrl, route.audiences)) {
    r.problem(
      m.get('upstream_audience'),
      m.pathOf('upstream_audience'),
      `\`${audience}\` is an audience of bearward itself: a token signed for the upstream would then be accepted here too; name the upstream`,
    )
    ok = false
  }
  const scopeToken = r.str({ check: (v) => (SCOPE_TOKEN.test(v) ? undefined : `\`${v}\` is not a valid scope name (RFC 6749 3.3)`) })
  const scopes = m.has('upstream_scopes') ? m.maybe('upstream_scopes', r.list(scopeToken)) : routeScopes(route)
  const lifetimeSec = m.opt('upstream_token_lifetime', r.seconds({ min: 1, max: MAX_UPSTREAM_LIFETIME_SEC }), mode === 'exchange' ? 60 : 30)
  const header = mode === 'exchange' ? 'authorization' : readAssertionHeader(r, m, route.identityHeaders)
  if (!ok || scopes === undefined || header === undefined || route.upstream === undefined) return null
  return { mode, audience, scopes: [...new Set(scopes)], lifetimeSec, header }
}

/** `upstream_assertion.header`: an HTTP field name the gateway does not write or drop itself. */
function readAssertionHeader(r: Reader, m: MapView, identity: IdentityHeaders): string | undefined {
  const node = m.get('upstream_assertion')
  if (node === undefined) return DEFAULT_ASSERTION_HEADER
  const a = r.map(node, m.pathOf('upstream_assertion'), UPSTREAM_ASSERTION_KEYS)
  if (a === undefined) return undefined
  const own = [identity.subject, identity.clientId, identity.scope, identity.issuer, ...Object.values(identity.claims)].filter((n) => n !== '').map(headerKey)
  const name = a.opt(
    'header',
    r.str({
      check: (v) => {
        if (!HTTP_TOKEN.test(v)) return `\`${v}\` is not an HTTP header name`
        const key = headerKey(v)
        if (RESERVED_ASSERTION_HEADERS.has(key) || key.startsWith('x-forwarded-')) {
          return `\`${v}\` is a header the gateway writes or drops itself; name another (e.g. \`X-Bearward-Assertion\`)`
        }
        if (own.includes(key)) return `\`${v}\` is one of this route's identity headers; name another`
        return undefined
      },
    }),
    DEFAULT_ASSERTION_HEADER,
  )
  return name?.toLowerCase()
}

/** The upstream's origin as http(s): the default audience of what is signed for it. */
function upstreamOrigin(upstream: string): string {
  const http = upstream.replace(/^(h2c|ws):\/\//, 'http://').replace(/^wss:\/\//, 'https://')
  try {
    return new URL(http).origin
  } catch {
    return upstream
  }
}

/** True when a token with `audience` would also be one for bearward (its public URL, a path under it, or one of the route's own audiences). */
function isOwnAudience(audience: string, publicUrl: string, audiences: readonly string[]): boolean {
  return audience === publicUrl || audience.startsWith(`${publicUrl}/`) || audiences.includes(audience)
}

/** Every scope the route requires for some request: its method rules and its MCP rules. */
function routeScopes(route: RouteSoFar): string[] {
  const all = Object.values(route.scopes).flat()
  if (route.mcp !== null) {
    for (const rules of [route.mcp.tools, route.mcp.resources, route.mcp.prompts]) all.push(...Object.values(rules).flat())
  }
  return [...new Set(all)]
}

/** No route may accept as its own a token signed for some route's upstream (its `upstream_audience`). */
function checkUpstreamAudiences(r: Reader, routes: ReadonlyArray<{ route: RouteConfig; node: Node | undefined; path: string }>): void {
  for (const { route, node, path } of routes) {
    const audience = route.upstreamToken?.audience
    if (audience === undefined) continue
    const other = routes.find((o) => o.route.audiences.includes(audience))
    if (other === undefined) continue
    r.problem(
      node,
      `${path}.upstream_audience`,
      `\`${audience}\` is an audience route \`${other.route.name}\` accepts: a token signed for this upstream would be accepted there too; set \`upstream_audience\` to another value`,
    )
  }
}

/** RFC 9470 3: an acr value travels space-separated in a quoted `acr_values`, so it has a scope token's grammar. */
const acrValue = (r: Reader): ReturnType<Reader['str']> =>
  r.str({ check: (v) => (SCOPE_TOKEN.test(v) ? undefined : `\`${v}\` is not an acr value (printable ASCII without spaces, \`"\` or \`\\\`)`) })

/**
 * One step-up requirement, `{ acr: [...], max_age: 5m }`, at least one of
 * the two. undefined when refused (the problem is recorded).
 */
function readRequirement(r: Reader, node: Node | undefined, path: string, allowEmpty = false): AuthenticationRequirement | undefined {
  const a = r.map(node, path, AUTHENTICATION_KEYS)
  if (a === undefined) return undefined
  if (allowEmpty && a.node !== undefined && r.entries(a.node, path)?.length === 0) return { acr: null, maxAgeSec: null }
  if (!a.has('acr') && !a.has('max_age')) {
    r.problem(node, path, 'name `acr` (the sign-in methods accepted), `max_age` (how recent the sign-in must be), or both')
    return undefined
  }
  const acr = a.maybe(
    'acr',
    r.list(acrValue(r), { nonEmpty: true, emptyMessage: 'list the acr values accepted, or remove `acr`: an empty list would accept no sign-in' }),
  )
  const maxAgeSec = a.maybe('max_age', r.seconds({ min: 0 }))
  if ((a.has('acr') && (acr === undefined || acr.length === 0)) || (a.has('max_age') && maxAgeSec === undefined)) return undefined
  return { acr: acr === undefined ? null : [...new Set(acr)], maxAgeSec: maxAgeSec ?? null }
}

/**
 * `authentication` (RFC 9470 step-up): `{ acr, max_age }` for every method,
 * or method (or `"*"`) to one, as `scopes` is written. A method without a
 * rule of its own takes `"*"`'s, else every listed rule at once (fail
 * closed, as scopes do), so their `acr` lists must share a value. A method
 * written `{}` needs no step-up (`"*": {}` lets the unlisted ones off).
 */
function readAuthentication(r: Reader, m: MapView, isPublic: boolean, methods: string[] | null, ranked: boolean): Record<string, AuthenticationRequirement> {
  const node = m.get('authentication')
  if (node === undefined) return {}
  const where = m.pathOf('authentication')
  if (isPublic) {
    r.problem(node, where, 'a public route takes no token, so it cannot demand a sign-in; remove `authentication` or `public: true`')
    return {}
  }
  const entries = r.entries(node, where)
  if (entries === undefined) return {}
  if (entries.length === 0 || entries.some((e) => AUTHENTICATION_KEYS.includes(e.key))) {
    const all = readRequirement(r, node, where)
    return all === undefined ? {} : { '*': all }
  }
  const rules: Record<string, AuthenticationRequirement> = {}
  const keys = new UniqueSet(r, 'method')
  for (const e of entries) {
    if (e.key !== '*' && !HTTP_TOKEN.test(e.key)) {
      r.problem(e.keyNode, e.path, `\`${e.key}\` is not \`acr\`, \`max_age\`, an HTTP method or \`"*"\` (any method)`)
      continue
    }
    const method = e.key === '*' ? '*' : e.key.toUpperCase()
    if (!keys.add(method, e.keyNode, e.path)) continue
    if (method !== '*' && methods !== null && !methods.includes(method)) {
      r.problem(e.keyNode, e.path, `this rule can never apply: the route only matches ${methods.join(', ')}`)
      continue
    }
    const rule = readRequirement(r, e.value, e.path, true)
    if (rule !== undefined) rules[method] = rule
  }
  const lists = Object.values(rules).flatMap((rule) => (rule.acr === null ? [] : [rule.acr]))
  if (rules['*'] === undefined && lists.length > 1 && !lists.flat().some((v) => acceptedByAll(v, lists, ranked))) {
    r.problem(
      node,
      where,
      'a method without a rule of its own must meet every rule listed here, and no acr value is in all of them; add a `"*"` rule for the other methods',
    )
  }
  return rules
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
