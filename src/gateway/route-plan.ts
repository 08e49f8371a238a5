import type { RouteConfig } from '../config/validated-config.js'
import { MethodNotAllowed } from '../errors.js'
import type { ErrorReplyOptions } from '../http/reply.js'
import { buildPolicy, type RoutePolicy, type TrustedIssuer } from './route-policy.js'
import { McpRule } from './mcp/rule.js'

/** A route as the hot path needs it. */
export interface RoutePlan {
  readonly route: RouteConfig
  /** null for public routes. */
  readonly policy: RoutePolicy | null
  /** Reply options of a method without a scope rule of its own (and of non-token refusals). */
  readonly reply: ErrorReplyOptions
  /** Per method with a rule of its own: the challenge's `scope` differs. */
  readonly replies: ReadonlyMap<string, ErrorReplyOptions>
  /** Per-tool scopes of a route that fronts an MCP server, else null. */
  readonly mcp: McpRule | null
  /** The 405 a TRACE gets on this route; null when the route allows TRACE. */
  readonly traceRefusal: MethodNotAllowed | null
}

/** What Allow lists for a route that takes any method but TRACE. */
const ANY_BUT_TRACE: readonly string[] = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']

/**
 * The plan of one route, built once per Runtime: its validation policy, its
 * MCP rule, the 405 of a TRACE it does not allow, and its replies.
 *
 * @param metadataUrl the route's RFC 9728 metadata URL, named in its challenges
 * @param dpopAlgs the DPoP algorithms a challenge offers (RFC 9449 7.1)
 */
export function planRoute(route: RouteConfig, issuers: ReadonlyMap<string, TrustedIssuer>, metadataUrl: string | undefined, dpopAlgs: string): RoutePlan {
  const policy = route.public ? null : buildPolicy(route, issuers)
  const mcp = policy !== null && route.mcp !== null ? new McpRule(route, policy.scopes, policy.stepUp) : null
  const traceRefusal = route.allowTrace ? null : new MethodNotAllowed(route.match.methods ?? ANY_BUT_TRACE)
  return { route, policy, mcp, traceRefusal, ...replyOptions(route, policy, metadataUrl, dpopAlgs) }
}

/**
 * The reply options of each method of a route: realm, the RFC 9728
 * metadata URL, and the scopes the method needs (a 401's `scope`).
 */
function replyOptions(route: RouteConfig, policy: RoutePolicy | null, metadataUrl: string | undefined, dpopAlgs: string): Pick<RoutePlan, 'reply' | 'replies'> {
  // RFC 9449 7.1: a DPoP challenge, beside Bearer unless the route takes DPoP-bound tokens only.
  const dpop = policy === null ? undefined : Object.freeze({ algs: dpopAlgs, bearer: route.dpop !== 'required', presented: false })
  const make = (required: readonly string[]): ErrorReplyOptions =>
    Object.freeze({
      realm: route.realm,
      ...(metadataUrl !== undefined ? { resourceMetadata: metadataUrl } : {}),
      ...(required.length > 0 ? { scope: required.join(' ') } : {}),
      ...(dpop !== undefined ? { dpop } : {}),
    })
  const replies = new Map<string, ErrorReplyOptions>()
  if (policy === null) return { reply: make([]), replies }
  for (const method of Object.keys(route.scopes)) {
    if (method !== '*') replies.set(method, make(policy.scopes.required(method)))
  }
  if (replies.has('GET') && !replies.has('HEAD')) replies.set('HEAD', make(policy.scopes.required('HEAD')))
  // No real method is empty: this reads the fallback rule.
  return { reply: make(policy.scopes.required('')), replies }
}
