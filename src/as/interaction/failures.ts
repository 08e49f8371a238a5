import type { ServerResponse } from 'node:http'
import type { RequestContext } from '../../context.js'
import { answerFailure } from '../../http/failure.js'
import type { AsContext } from '../context.js'
import type { RedirectTarget } from './authorization-request.js'
import { redirect, showError } from './respond.js'

/**
 * Failures after validation, through the one failure path
 * (`http/failure.ts`). Once the redirect URI is verified, a store outage or
 * a bug is reported to the client as `temporarily_unavailable` or
 * `server_error` (RFC 6749 4.1.2.1: "because a 503/500 cannot be shown");
 * without a verified target it is an error page.
 */

function answered(res: ServerResponse): boolean {
  if (!res.headersSent) return false
  res.destroy()
  return true
}

/** Run an authorization step; failures go to the client's redirect URI. */
export async function guardRedirect(
  as: AsContext,
  ctx: RequestContext,
  res: ServerResponse,
  target: RedirectTarget,
  status: 302 | 303,
  step: () => Promise<void>,
): Promise<void> {
  try {
    await step()
  } catch (err) {
    const { answer } = answerFailure(err, ctx.log, as.failures)
    if (answered(res)) return
    // A client nobody vouched for is never sent a failure it did not see the person cause (RFC 9700 4.11.2).
    if (target.vouched) redirect(res, target.error(answer), status)
    else showError(res, answer)
  }
}

/**
 * Run a page step; failures become error pages (503 when the store is down).
 * `assetPrefix`: for a page served deeper than the others (see renderPage).
 */
export async function guardPage(as: AsContext, ctx: RequestContext, res: ServerResponse, step: () => Promise<void>, assetPrefix = ''): Promise<void> {
  try {
    await step()
  } catch (err) {
    const { answer } = answerFailure(err, ctx.log, as.failures)
    if (!answered(res)) showError(res, answer, [], assetPrefix)
  }
}
