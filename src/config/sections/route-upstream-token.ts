import type { Node } from 'yaml'
import type { IdentityHeaders, RouteConfig, UpstreamTokenConfig } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { HTTP_TOKEN } from '../values.js'
import { enumAt, keysAt } from '../contract.js'
import type { RouteContext } from './route-context.js'
import { scopeName } from './route-scopes.js'

const UPSTREAM_TOKEN_MODES = enumAt<'passthrough' | UpstreamTokenConfig['mode']>('#/$defs/route/properties/upstream_token')
export const UPSTREAM_ASSERTION_KEYS = keysAt('#/$defs/route/properties/upstream_assertion')

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

/** A header name as an upstream may read it: lower case, `_` as `-` (src/gateway/header-names.ts). */
const headerKey = (name: string): string => name.toLowerCase().replaceAll('_', '-')

export type RouteSoFar = Pick<RouteConfig, 'public' | 'forwardAuthorization' | 'scopes' | 'mcp' | 'identityHeaders' | 'audiences' | 'issuers'> & {
  upstream: string | undefined
}

/**
 * `upstream_token` and its keys (`upstream_audience`, `upstream_scopes`,
 * `upstream_token_lifetime`, `upstream_assertion`): null for `passthrough`.
 * The signed modes need the authorization server's keys, a token to speak
 * for (not a public route), and the client's own Authorization never
 * forwarded beside them. The route trusts bearward's own tokens only: what
 * is signed names the subject under bearward's `iss`, so another issuer's
 * `sub` (`alice` at an IdP) would come out as bearward's own `alice`.
 */
export function readUpstreamToken(r: Reader, m: MapView, ctx: RouteContext, route: RouteSoFar): UpstreamTokenConfig | null {
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
  const foreign = route.issuers.filter((id) => id !== 'self')
  if (foreign.length > 0) {
    r.problem(
      m.get('issuers') ?? at,
      m.has('issuers') ? m.pathOf('issuers') : where,
      `\`upstream_token: ${mode}\` signs the subject under bearward's own \`iss\`, so a token of \`${foreign[0]}\` would pass for one of bearward's own subjects at the upstream; trust only \`self\` on this route, or use \`passthrough\``,
    )
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
  const scopeToken = scopeName(r)
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
export function checkUpstreamAudiences(r: Reader, routes: ReadonlyArray<{ route: RouteConfig; node: Node | undefined; path: string }>): void {
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
