/**
 * How the gateway refuses a request it answers itself: the one failure path
 * (http/failure.ts) gives the answer, every token validation is counted by
 * its result, and the challenge names what the route (and, on an MCP route,
 * the tool) needs.
 */
import type { RequestContext } from '../context.js'
import {
  AccessTokenExpired,
  AccessTokenRevoked,
  InsufficientAuthorizationDetails,
  InsufficientScope,
  InsufficientUserAuthentication,
  MissingToken,
  TemporarilyUnavailable,
  type OAuthError,
} from '../errors.js'
import { answerFailure, type Failure, type FailureReporting } from '../http/failure.js'
import type { ErrorReplyOptions } from '../http/reply.js'
import { labelKey, type Metrics } from '../metrics.js'
import type { McpJudgement } from './mcp/rule.js'
import type { RoutePlan } from './plan/route-plan.js'

/** A request we answer ourselves, with the reply options (realm) of its route. */
export interface Refusal {
  readonly refusal: OAuthError
  readonly reply: ErrorReplyOptions
}

/** Rendered labels of `bearward_token_validations_total`, built once (the hot path uses incKey). */
const RESULT = {
  valid: labelKey({ result: 'valid' }),
  missing: labelKey({ result: 'missing' }),
  malformed: labelKey({ result: 'malformed' }),
  invalid: labelKey({ result: 'invalid' }),
  expired: labelKey({ result: 'expired' }),
  revoked: labelKey({ result: 'revoked' }),
  insufficientScope: labelKey({ result: 'insufficient_scope' }),
  insufficientUserAuthentication: labelKey({ result: 'insufficient_user_authentication' }),
  insufficientAuthorizationDetails: labelKey({ result: 'insufficient_authorization_details' }),
  unavailable: labelKey({ result: 'unavailable' }),
} as const

/** The validation result a failure is counted as, by its class code; null for a bug (not a validation result). */
function resultOf(failure: Failure): string | null {
  if (failure.kind === 'internal') return null
  const err = failure.answer
  switch (err.code) {
    case MissingToken.code:
      return RESULT.missing
    case AccessTokenExpired.code:
      return RESULT.expired
    case AccessTokenRevoked.code:
      return RESULT.revoked
    case InsufficientScope.code:
      return RESULT.insufficientScope
    case InsufficientUserAuthentication.code:
      return RESULT.insufficientUserAuthentication
    case InsufficientAuthorizationDetails.code:
      return RESULT.insufficientAuthorizationDetails
    case TemporarilyUnavailable.code:
      return RESULT.unavailable
  }
  // A DPoP proof failure at a resource is a 401 (invalid), at a token endpoint a 400 (malformed).
  return err.status === 401 ? RESULT.invalid : RESULT.malformed
}

/** Turns failures into answers for one gateway, counting token validations in `metrics`. */
export class Refusals {
  readonly #failures: FailureReporting
  readonly #metrics: Pick<Metrics, 'tokenValidations'>

  constructor(failures: FailureReporting, metrics: Pick<Metrics, 'tokenValidations'>) {
    this.#failures = failures
    this.#metrics = metrics
  }

  /** A token that passed every check: counted as valid. */
  countValid(): void {
    this.#metrics.tokenValidations.incKey(RESULT.valid)
  }

  /**
   * A token failure as the refusal to render (counted by result); anything
   * unexpected is rethrown. On an MCP route whose body calls a listed tool,
   * a 401 or 403 names the route's and the tool's scopes together.
   */
  of(err: unknown, ctx: RequestContext, plan: RoutePlan, method: string | undefined, mcp: McpJudgement | null, dpopPresented = false): Refusal {
    const refusal = this.answer(err, ctx, true)
    const routeReply = plan.replies.get(method ?? 'GET') ?? plan.reply
    // The client used the DPoP scheme: the error goes in the DPoP challenge (RFC 9449 7.1).
    const reply = dpopPresented && routeReply.dpop !== undefined ? { ...routeReply, dpop: { ...routeReply.dpop, presented: true } } : routeReply
    const required = mcp?.requirement ?? null
    if (required === null) return { refusal, reply }
    let named = refusal
    if (refusal instanceof InsufficientScope) named = required.refusal
    else if (refusal instanceof InsufficientUserAuthentication && required.stepUp !== null) named = required.stepUp.refusal(refusal.shortfall)
    return { refusal: named, reply: { ...reply, scope: required.required.join(' ') } }
  }

  /** The answer for a failure (the one failure path); while judging a token, counted by result. */
  answer(err: unknown, ctx: RequestContext, judging: boolean): OAuthError {
    const failure = answerFailure(err, ctx.log, this.#failures)
    if (judging) {
      const result = resultOf(failure)
      if (result !== null) this.#metrics.tokenValidations.incKey(result)
      // The access line says why: the validation result (`expired`, `revoked`…), else the error code.
      ctx.refusal = result ?? failure.answer.error
    } else ctx.refusal = failure.answer.error
    return failure.answer
  }
}
