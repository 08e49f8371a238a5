/**
 * The authorization decision (RFC 6750 3.1 insufficient_scope): every scope
 * the route lists for the method must be in the token. The rule per method
 * and its 403 answer are built once per route.
 */
import type { RouteConfig } from '../config/validated-config.js'
import { InsufficientScope } from '../errors.js'

const NO_SCOPES: readonly string[] = Object.freeze([])

interface Rule {
  readonly required: readonly string[]
  /** The answer when the token lacks one of them; carries `scope="..."` for the challenge. */
  readonly refusal: InsufficientScope
}

/**
 * The scopes a route requires, per method: `scopes[METHOD]`, else
 * `scopes['*']`, else — when some methods are listed — every scope listed
 * for any method (fail closed: `{ GET: [read], POST: [write] }` must not let
 * a read-only token DELETE), else none (a route with no scope rule only
 * needs a valid token).
 * HEAD without a rule of its own takes GET's: it is GET without the body
 * (RFC 9110 9.3.2), and many upstreams run the GET handler for it, so a
 * token that may not GET must not learn the resource's headers either.
 */
export class ScopeRule {
  readonly #byMethod: ReadonlyMap<string, Rule>
  readonly #fallback: Rule

  constructor(scopes: RouteConfig['scopes']) {
    const rule = (required: readonly string[]): Rule => ({ required: Object.freeze([...required]), refusal: new InsufficientScope(required) })
    const byMethod = new Map<string, Rule>()
    for (const [method, required] of Object.entries(scopes)) {
      if (method !== '*') byMethod.set(method, rule(required))
    }
    const get = byMethod.get('GET')
    if (get !== undefined && !byMethod.has('HEAD')) byMethod.set('HEAD', get)
    this.#byMethod = byMethod
    const listed = [...new Set(Object.entries(scopes).flatMap(([method, required]) => (method === '*' ? [] : required)))]
    this.#fallback = rule(scopes['*'] ?? listed)
  }

  /** The scopes required for `method` (upper case). */
  required(method: string): readonly string[] {
    return (this.#byMethod.get(method) ?? this.#fallback).required
  }

  /** The 403 to answer when `granted` does not cover the method's rule, else null. */
  check(granted: readonly string[], method: string): InsufficientScope | null {
    const rule = this.#byMethod.get(method) ?? this.#fallback
    for (const scope of rule.required) {
      if (!granted.includes(scope)) return rule.refusal
    }
    return null
  }
}

/**
 * The granted scopes of a token: the `scope` claim, a space-separated string
 * (RFC 9068 2.2.3, RFC 7662 2.2), or `scp`, an array of strings (or a
 * string) as some issuers send. Returns null when the claim has the wrong type.
 */
export function grantedScopes(claims: Readonly<Record<string, unknown>>): readonly string[] | null {
  const scope = claims.scope ?? claims.scp
  if (scope === undefined || scope === null) return NO_SCOPES
  if (typeof scope === 'string') return scope.split(' ').filter((s) => s !== '')
  if (Array.isArray(scope) && scope.every((s): s is string => typeof s === 'string')) return scope
  return null
}
