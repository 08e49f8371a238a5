/**
 * A route's plan: the gateway's central type (docs/architecture.md, "One
 * plan per route"). Compiled once per Runtime from the route's config by
 * build.ts, immutable, and carried by the request from the match to the
 * upstream and back: nothing is looked up again, by object or by name.
 *
 * A step the route does not configure is not in its plan (null): a public
 * route has no token step, so it runs no token, DPoP, step-up or MCP code; a
 * route without `mcp` runs no MCP code; a route without `authentication`
 * rules runs no step-up check.
 */
import type { AuthorizationDetailsStep } from '../authorization-details.js'
import type { RouteConfig } from '../../config/validated-config.js'
import type { MethodNotAllowed } from '../../errors.js'
import type { ErrorReplyOptions } from '../../http/reply.js'
import type { JwtIssuer } from '../../tokens/verify-jwt.js'
import type { OpaqueValidator } from '../introspection-client.js'
import type { ConcurrencyPlan } from '../concurrency.js'
import type { McpRule } from '../mcp/rule.js'
import type { ScopeRule } from '../scope.js'
import type { StepUpRule } from '../step-up.js'
import type { UpstreamPlan } from './upstreams.js'
import type { LimitPlan } from '../limits/plan.js'

/** The token step: how a protected route judges the token it is given (authenticate.ts). */
export interface TokenPlan {
  readonly route: RouteConfig
  /** The JWT issuers the route trusts; empty on a `token: introspect` route. */
  readonly jwtIssuers: readonly JwtIssuer[]
  /** By exact `iss`, to choose among several JWT issuers. */
  readonly jwtIssuerByIss: ReadonlyMap<string, JwtIssuer>
  /** Who knows its opaque tokens, the built-in issuer first; empty on a `token: jwt` route. */
  readonly opaque: readonly OpaqueValidator[]
  /** The scopes each method needs, HEAD following GET (decided at build). */
  readonly scopes: ScopeRule
  /** What the sign-in behind the token must be, per method (RFC 9470); null: the route has no such rule. */
  readonly stepUp: StepUpRule | null
  /** `sender_constraint: required`: only DPoP-bound or certificate-bound tokens (RFC 9449, RFC 8705). */
  readonly senderConstrained: boolean
  /**
   * Appended to the token hash in verified-token cache keys: what besides
   * the token decides a JWT's validity (audience and trusted issuers).
   */
  readonly cacheScope: string
}

/** Everything about one route that does not change per request. */
export interface RoutePlan {
  readonly route: RouteConfig
  /** null: a public route (no token is looked for). */
  readonly token: TokenPlan | null
  /** The MCP inspector and list filter of a route that fronts an MCP server; null: none. */
  readonly mcp: McpRule | null
  /** Reply options of a method without a scope rule of its own (and of non-token refusals). */
  readonly reply: ErrorReplyOptions
  /** Per method with a rule of its own: the challenge's `scope` differs. */
  readonly replies: ReadonlyMap<string, ErrorReplyOptions>
  /** The 405 a TRACE gets on this route; null when the route allows TRACE. */
  readonly traceRefusal: MethodNotAllowed | null
  /** Where and how the request goes: pool, path, header rules, body limit, upstream credential. */
  readonly upstream: UpstreamPlan
  /** Rate limits and quotas (docs/traffic.md); null: the route has none, and pays nothing for them. */
  readonly limits: LimitPlan | null
  /** `max_in_flight` / `max_streams` slots (concurrency.ts); null: the route sets neither, nothing is counted. */
  readonly concurrency: ConcurrencyPlan | null
  /** RFC 9396: the type a token must hold an entry of, and the header the entries go upstream in; null: the route sets neither. */
  readonly authorizationDetails: AuthorizationDetailsStep | null
}
