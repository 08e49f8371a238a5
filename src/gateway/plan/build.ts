/**
 * The one builder of route plans (route-plan.ts), run at config load and at
 * every reload: each route's token step, MCP inspector, replies and upstream
 * step are compiled here, together, so a per-route feature is one more step
 * built in this file and read from the plan (CONTRIBUTING.md, "Adding a
 * per-route step").
 */
import { AuthorizationDetailsStep } from '../authorization-details.js'
import type { Pool } from 'undici'
import type { Config, RouteConfig } from '../../config/validated-config.js'
import { MethodNotAllowed } from '../../errors.js'
import type { ErrorReplyOptions } from '../../http/reply.js'
import { ClientAddress, type TrustedProxies } from '../../http/trusted-proxies.js'
import { ConcurrencyPlan, type ConcurrencyMetrics } from '../concurrency.js'
import { McpRule } from '../mcp/rule.js'
import { ScopeRule } from '../scope.js'
import { StepUpRule } from '../step-up.js'
import type { CredentialDeps } from '../upstream-token/credential.js'
import type { TrustedIssuer } from './issuers.js'
import type { RoutePlan, TokenPlan } from './route-plan.js'
import { planUpstreams } from './upstreams.js'
import { AddressBuckets, DEFAULT_IPV6_PREFIX } from '../../http/address-bucket.js'
import type { Balancer } from '../upstream/balancer.js'
import type { UpstreamTargets } from '../upstream/targets.js'
import { LimitPlan, type LimitDeps } from '../limits/plan.js'

/** What the builder reads besides the routes. */
export interface PlanSources {
  readonly config: Config
  /** The issuers of the config (issuers.ts), shared by the routes that trust them. */
  readonly issuers: ReadonlyMap<string, TrustedIssuer>
  /** A route's RFC 9728 metadata URL, named in its challenges; undefined when it publishes none. */
  readonly metadataUrlOf: (route: RouteConfig) => string | undefined
  /** The Runtime's one trusted-proxy matcher. */
  readonly trustedProxies: TrustedProxies
  /** What `upstream_token: exchange | assertion` signs with; null without the authorization server's keys. */
  readonly signing: CredentialDeps | null
  /** What traffic limits count with (store, metrics, client address); absent: no route may set limits. */
  readonly limits?: LimitDeps
  /** Where the routes' concurrency steps count their slots and refusals. */
  readonly metrics: ConcurrencyMetrics
  /** Where pooled routes take their targets from (kept across reloads); a private registry when absent. */
  readonly targets?: UpstreamTargets
}

/** Every route's plan, in config order, and the upstream pools they share (what closing releases). */
export interface RoutePlans {
  readonly plans: readonly RoutePlan[]
  readonly pools: readonly Pool[]
  /** Pooled routes' balancers, closed with the proxy. */
  readonly balancers: readonly Balancer[]
}

/** What Allow lists for a route that takes any method but TRACE. */
const ANY_BUT_TRACE: readonly string[] = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']

/**
 * Plan every route of `sources.config`.
 *
 * @throws Error when a route names an issuer the config does not define, its
 *   upstream URL is not http(s)/ws(s)/h2c, its CA file cannot be read, or it
 *   wants a signed upstream credential and there are no keys. Every check
 *   runs before the first pool is opened, so a refused build leaves none.
 */
export function buildRoutePlans(sources: PlanSources): RoutePlans {
  const { config } = sources
  const routes = config.routes
  const dpopAlgs = config.dpop.algs.join(' ')
  const tokens = routes.map((route) => (route.public ? null : planToken(route, sources.issuers)))
  const { upstreams, pools, balancers } = planUpstreams(routes, config.gateway, sources.trustedProxies, sources.signing, sources.targets)
  // Per-address concurrency keys bucket an IPv6 client by its network, as the rate limits and the AS's throttles do.
  const addresses = new AddressBuckets(new ClientAddress(sources.trustedProxies), config.authorizationServer?.rateLimit.ipv6Prefix ?? DEFAULT_IPV6_PREFIX)
  const plans = routes.map((route, i): RoutePlan => {
    const token = tokens[i] ?? null
    const upstream = upstreams[i]
    if (upstream === undefined) throw new Error(`route ${route.name}: no upstream step`)
    return Object.freeze({
      route,
      token,
      mcp: token !== null && route.mcp !== null ? new McpRule(route, token.scopes, token.stepUp) : null,
      traceRefusal: route.allowTrace ? null : new MethodNotAllowed(route.match.methods ?? ANY_BUT_TRACE),
      upstream,
      limits: planLimits(route, sources.limits),
      concurrency: route.concurrency === null ? null : new ConcurrencyPlan(route, route.concurrency, sources.metrics, addresses),
      authorizationDetails: token === null ? null : planAuthorizationDetails(route),
      ...replyOptions(route, token, sources.metadataUrlOf(route), dpopAlgs),
    })
  })
  return { plans, pools, balancers }
}

/** The limit step of a route with `rate_limits`, `quotas` or a tool's `rate_limit`; null for one without. */
function planLimits(route: RouteConfig, deps: LimitDeps | undefined): LimitPlan | null {
  if (route.limits === null || route.limits === undefined) return null
  if (deps === undefined) throw new Error(`route ${route.name}: traffic limits need a store`)
  return new LimitPlan(route, deps)
}

/**
 * The token step of a protected route: its trusted issuers, scope and
 * step-up rules and verified-token cache scope.
 *
 * @throws Error when it names an issuer the config does not define.
 */
export function planToken(route: RouteConfig, issuers: ReadonlyMap<string, TrustedIssuer>): TokenPlan {
  const trusted = route.issuers.map((id) => {
    const issuer = issuers.get(id)
    if (issuer === undefined) throw new Error(`route ${route.name}: issuer ${id} is not configured`)
    return issuer
  })
  const jwtIssuers = route.token === 'introspect' ? [] : trusted.flatMap((i) => (i.jwt === null ? [] : [i.jwt]))
  // The built-in issuer first: a store lookup sends the token nowhere.
  const opaque =
    route.token === 'jwt'
      ? []
      : trusted.flatMap((i) => (i.opaque === null ? [] : [i.opaque])).sort((a, b) => Number(b.issuerId === 'self') - Number(a.issuerId === 'self'))
  return Object.freeze({
    route,
    jwtIssuers,
    jwtIssuerByIss: new Map(jwtIssuers.map((i) => [i.issuer, i])),
    opaque,
    scopes: new ScopeRule(route.scopes),
    stepUp: Object.keys(route.authentication).length === 0 ? null : new StepUpRule(route.authentication),
    senderConstrained: route.senderConstraint === 'required',
    cacheScope: `\n${route.audiences.join(' ')}\n${route.token}\n${route.issuers.join(',')}`,
  })
}

/**
 * The reply options of each method of a route: realm, the RFC 9728
 * metadata URL, and the scopes the method needs (a 401's `scope`).
 *
 * @param dpopAlgs the DPoP algorithms a challenge offers (RFC 9449 7.1)
 */
function replyOptions(route: RouteConfig, token: TokenPlan | null, metadataUrl: string | undefined, dpopAlgs: string): Pick<RoutePlan, 'reply' | 'replies'> {
  // RFC 9449 7.1: a DPoP challenge, beside Bearer unless the route takes DPoP-bound tokens only.
  const dpop = token === null ? undefined : Object.freeze({ algs: dpopAlgs, bearer: route.dpop !== 'required', presented: false })
  const make = (required: readonly string[]): ErrorReplyOptions =>
    Object.freeze({
      realm: route.realm,
      ...(metadataUrl !== undefined ? { resourceMetadata: metadataUrl } : {}),
      ...(required.length > 0 ? { scope: required.join(' ') } : {}),
      ...(dpop !== undefined ? { dpop } : {}),
    })
  const replies = new Map<string, ErrorReplyOptions>()
  if (token === null) return { reply: make([]), replies }
  for (const method of Object.keys(route.scopes)) {
    if (method !== '*') replies.set(method, make(token.scopes.required(method)))
  }
  if (replies.has('GET') && !replies.has('HEAD')) replies.set('HEAD', make(token.scopes.required('HEAD')))
  // No real method is empty: this reads the fallback rule.
  return { reply: make(token.scopes.required('')), replies }
}

/** RFC 9396: the route's `authorization_details` rule and header, or null when it sets neither (it then pays nothing). */
function planAuthorizationDetails(route: RouteConfig): AuthorizationDetailsStep | null {
  const type = route.authorizationDetails?.type ?? null
  const forward = (route.identityHeaders.authorizationDetails ?? '') !== ''
  return type === null && !forward ? null : new AuthorizationDetailsStep(type, forward)
}
