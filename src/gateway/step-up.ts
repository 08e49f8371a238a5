/**
 * Step-up at the gateway (RFC 9470): a route, a method or an MCP tool can
 * demand more of the person's sign-in than a valid token: one of some `acr`
 * values, or an `auth_time` no older than `max_age`. A token that falls
 * short gets 401 insufficient_user_authentication with `acr_values` and
 * `max_age`, and the client sends the person back to `/authorize` with them.
 *
 * The claims are read on every request, cache hit or not (like `exp`): a
 * validation cached when the sign-in was fresh must not keep passing after
 * `max_age`. `acr` and `auth_time` are those of the JWT (RFC 9068 2.2.1,
 * OIDC Core 2) or of the introspection answer (RFC 7662 2.2 allows them as
 * extension members). A claim of the wrong type, or an `auth_time` in the
 * future, makes the token invalid rather than being guessed at.
 *
 * A token of the built-in authorization server is judged as that server
 * judges `acr_values` (src/tokens/acr.ts): its own values are
 * ranked, `pwd` < `mfa` < `phr`, so a passkey sign-in (`phr`) meets a route
 * that lists `mfa`, and the client sent to `/authorize` with `acr_values=mfa`
 * comes back with a token the route takes. Another issuer's values mean what
 * that issuer means: they match exactly.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9470#section-3
 * @see https://www.rfc-editor.org/rfc/rfc9068#section-2.2.1
 */
import { meetsAcr } from '../tokens/acr.js'
import type { AuthenticationRequirement, RouteConfig } from '../config/validated-config.js'
import { InsufficientUserAuthentication, InvalidToken, type OAuthError, type StepUpShortfall } from '../errors.js'

/** What the sign-in must be, compiled once: every part must hold, and the refusals are built ahead. */
export class StepUp {
  /** The requirements that must all hold (a route's, and an MCP tool's beside it). */
  readonly parts: readonly AuthenticationRequirement[]
  /** Each part's accepted acr values; the token's acr must be in every one. */
  readonly #acrLists: ReadonlyArray<readonly string[]>
  /** The shortest max_age of the parts, seconds; null when none limits it. */
  readonly maxAgeSec: number | null
  readonly #refusals: Readonly<Record<'acrMissing' | 'acrNotAccepted' | 'authTimeMissing' | 'tooOld', InsufficientUserAuthentication>>

  constructor(parts: readonly AuthenticationRequirement[]) {
    this.parts = Object.freeze([...parts])
    this.#acrLists = parts.flatMap((p) => (p.acr === null ? [] : [Object.freeze([...p.acr])]))
    const ages = parts.flatMap((p) => (p.maxAgeSec === null ? [] : [p.maxAgeSec]))
    this.maxAgeSec = ages.length === 0 ? null : Math.min(...ages)
    const challenge = { acrValues: acrValuesOf(this.#acrLists), maxAgeSec: this.maxAgeSec }
    const refusal = (shortfall: StepUpShortfall, cause: string): InsufficientUserAuthentication =>
      new InsufficientUserAuthentication(challenge, shortfall, { cause })
    this.#refusals = {
      acrMissing: refusal('acr', 'step-up: no acr claim'),
      acrNotAccepted: refusal('acr', 'step-up: acr not accepted'),
      authTimeMissing: refusal('max_age', 'step-up: no auth_time claim'),
      tooOld: refusal('max_age', 'step-up: auth_time older than max_age'),
    }
  }

  /** This requirement's refusal for a `shortfall` (an MCP call's, naming the route's and the tool's requirements together). */
  refusal(shortfall: StepUpShortfall): InsufficientUserAuthentication {
    return shortfall === 'acr' ? this.#refusals.acrNotAccepted : this.#refusals.tooOld
  }

  /** This requirement and `other` together (an MCP tool's beside its route's). */
  and(other: StepUp | null): StepUp {
    return other === null ? this : new StepUp([...this.parts, ...other.parts])
  }

  /**
   * The refusal for a token whose `claims` fall short, else null.
   * `nowSec` is the gateway clock; `skewSec` its tolerance (gateway.clock_skew).
   * `ownIssuer`: the token is the built-in authorization server's, whose
   * own acr values are ranked.
   */
  check(claims: Readonly<Record<string, unknown>>, nowSec: number, skewSec: number, ownIssuer = false): OAuthError | null {
    if (this.#acrLists.length > 0) {
      const acr = claims.acr
      if (acr === undefined || acr === null) return this.#refusals.acrMissing
      if (typeof acr !== 'string') return malformed('acr claim is not a string')
      for (const list of this.#acrLists) {
        if (!(list.includes(acr) || (ownIssuer && meetsAcr({ amr: [], acr }, list)))) return this.#refusals.acrNotAccepted
      }
    }
    if (this.maxAgeSec !== null) {
      const authTime = claims.auth_time
      if (authTime === undefined || authTime === null) return this.#refusals.authTimeMissing
      if (typeof authTime !== 'number' || !Number.isFinite(authTime)) return malformed('auth_time claim is not a number')
      // A sign-in after now would pass every max_age for as long as the token lives.
      if (authTime > nowSec + skewSec) return malformed('auth_time in the future')
      // Whole seconds, as auth_time and max_age are and as /authorize counts them, so the
      // gateway never refuses a sign-in that /authorize would still take as recent.
      if (Math.floor(nowSec) - authTime > this.maxAgeSec + skewSec) return this.#refusals.tooOld
    }
    return null
  }
}

/**
 * The `acr_values` of a challenge: the values every part accepts, in the
 * order of the first list; when the parts share none (overlapping MCP rules
 * written apart), the last, most specific list. null when no part names acr.
 */
function acrValuesOf(lists: ReadonlyArray<readonly string[]>): string | null {
  const first = lists[0]
  if (first === undefined) return null
  const common = first.filter((v) => lists.every((l) => l.includes(v)))
  return (common.length > 0 ? common : (lists.at(-1) ?? first)).join(' ')
}

function malformed(cause: string): InvalidToken {
  return new InvalidToken('The access token is invalid', { cause: `step-up: ${cause}` })
}

/**
 * A route's `authentication`, per method, built once per Runtime:
 * `authentication[METHOD]`, else `authentication['*']`, else, when some
 * methods are listed, every listed rule at once (fail closed, as ScopeRule
 * does), else nothing. A method written `{}` needs no step-up (`"*": {}`
 * is how the other methods are let off, as `"*": []` is for scopes). HEAD without a rule of its own takes GET's: it is GET
 * without the body (RFC 9110 9.3.2).
 */
export class StepUpRule {
  /** null: the method is written with `{}` (no step-up). */
  readonly #byMethod: ReadonlyMap<string, StepUp | null>
  readonly #fallback: StepUp | null

  constructor(rules: RouteConfig['authentication']) {
    const compile = (rule: AuthenticationRequirement): StepUp | null => (rule.acr === null && rule.maxAgeSec === null ? null : new StepUp([rule]))
    const byMethod = new Map<string, StepUp | null>()
    const listed: AuthenticationRequirement[] = []
    for (const [method, rule] of Object.entries(rules)) {
      if (method === '*') continue
      byMethod.set(method, compile(rule))
      listed.push(rule)
    }
    const get = byMethod.get('GET')
    if (get !== undefined && !byMethod.has('HEAD')) byMethod.set('HEAD', get)
    this.#byMethod = byMethod
    const any = rules['*']
    this.#fallback = any !== undefined ? compile(any) : listed.length > 0 ? new StepUp(listed) : null
  }

  /** The step-up a `method` request (upper case) needs; null when none. */
  of(method: string): StepUp | null {
    const own = this.#byMethod.get(method)
    return own !== undefined ? own : this.#fallback
  }
}
