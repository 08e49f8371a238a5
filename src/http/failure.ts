import { ClientAborted, InvalidRequest, OAuthError, ServerError, StoreUnavailableError, TemporarilyUnavailable } from '../errors.js'
import type { Logger } from '../log.js'
import { labelKey, type Metrics } from '../metrics.js'

/**
 * The one failure path: any value a handler throws becomes the answer to
 * send, is logged at the level it deserves and, for a store outage, counted.
 * Both faces, the interaction pages and the dispatcher call `answerFailure`;
 * each then renders the answer its own way (JSON with a challenge, an error
 * page, or a redirect to the client), never by re-classifying it.
 */

/** The face a failure happened in: the one label of `bearward_store_errors_total`. */
export type Face = 'as' | 'gateway'

/**
 * What a thrown value is: a refusal we meant, a store outage, a client that
 * went away mid-body (logged and counted where the response closes, in the
 * dispatcher: `reportAbortedBody`), or a bug.
 */
export type FailureKind = 'refused' | 'store_unavailable' | 'client_gone' | 'internal'

export interface Failure {
  readonly kind: FailureKind
  /** What the client is told. */
  readonly answer: OAuthError
}

/**
 * Classify any thrown value. An OAuthError is its own answer; a store outage
 * is 503 temporarily_unavailable; anything else is a bug, answered 500
 * server_error without detail (the value itself is only logged).
 */
export function failureOf(err: unknown): Failure {
  if (err instanceof OAuthError) return { kind: 'refused', answer: err }
  if (err instanceof StoreUnavailableError) return { kind: 'store_unavailable', answer: new TemporarilyUnavailable() }
  // Nobody reads this answer: the connection is gone.
  if (err instanceof ClientAborted) return { kind: 'client_gone', answer: new InvalidRequest('The request body ended before it was complete') }
  return { kind: 'internal', answer: new ServerError() }
}

/**
 * A request whose client went away before its body was complete (whether a
 * body reader saw it or the proxy was streaming it): counted per face and
 * logged without a stack, at info at the authorization server and at debug
 * at the gateway, whose volumes can be a client's line rate.
 */
export function reportAbortedBody(ctx: { readonly log: Logger; readonly routeLabel: string }, reporting: FailureReporting): void {
  reporting.metrics.requestsAborted.incKey(ABORTED_FACE[reporting.face])
  // ctx.log binds the request's child logger: the quiet face asks the root logger first.
  if (!reporting.quiet) ctx.log.info({ face: reporting.face, route: ctx.routeLabel }, 'request body aborted by the client')
  else if (reporting.rootLog.isLevelEnabled('debug')) ctx.log.debug({ face: reporting.face, route: ctx.routeLabel }, 'request body aborted by the client')
}

/** Where a failure is reported. Built once per face (per Runtime); the levels are per face because the volumes are. */
export interface FailureReporting {
  readonly face: Face
  readonly metrics: Metrics
  /**
   * The process's root logger: asked whether debug is on before a request's
   * child logger is touched, so a flood of refusals costs no child logger.
   */
  readonly rootLog: Logger
  /**
   * The gateway's refusals and store outages can come at line rate: they
   * are logged at debug (an outage is reported once by the revocation
   * list's health and /readyz). At the authorization server each is worth
   * a line: refusals at info, outages at warn.
   */
  readonly quiet: boolean
}

/** `bearward_store_errors_total`'s one label set (`face`), rendered once. */
const STORE_FACE: Readonly<Record<Face, string>> = Object.freeze({
  as: labelKey({ face: 'as' }),
  gateway: labelKey({ face: 'gateway' }),
})
/** `bearward_requests_aborted_total`'s: the same label. */
const ABORTED_FACE = STORE_FACE

/**
 * Classify, log and count a failure; returns the answer to render. Causes
 * are fixed strings, so no token or secret reaches a log line.
 */
export function answerFailure(err: unknown, log: Logger, reporting: FailureReporting): Failure {
  const failure = failureOf(err)
  switch (failure.kind) {
    case 'refused': {
      const { answer } = failure
      // One line shape for both faces. The quiet face checks the root logger
      // first: `log` may bind a child logger, which a flood of refusals must
      // not pay for when debug is off.
      if (!reporting.quiet) {
        log.info({ error: answer.error, code: answer.code, status: answer.status, cause: answer.cause }, 'request refused')
      } else if (answer.cause !== undefined && reporting.rootLog.isLevelEnabled('debug')) {
        log.debug({ error: answer.error, code: answer.code, status: answer.status, cause: answer.cause }, 'request refused')
      }
      break
    }
    case 'store_unavailable':
      reporting.metrics.storeErrors.incKey(STORE_FACE[reporting.face])
      if (!reporting.quiet) log.warn({ err: (err as StoreUnavailableError).message }, 'store unavailable')
      else if (reporting.rootLog.isLevelEnabled('debug')) log.debug({ err: (err as StoreUnavailableError).message }, 'store unavailable')
      break
    case 'client_gone':
      // Reported once, by the dispatcher, when the response closes.
      break
    case 'internal':
      log.error({ err, face: reporting.face }, 'unhandled error')
      break
  }
  return failure
}
