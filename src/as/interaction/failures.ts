import type { ServerResponse } from 'node:http'
import type { RequestContext } from '../../context.js'
import { OAuthError, ServerError, StoreUnavailableError, TemporarilyUnavailable } from '../../errors.js'
import type { RedirectTarget } from './authorization-request.js'
import { redirect, showError } from './respond.js'

/**
 * Failures after validation. Once the redirect URI is verified, a store
 * outage or a bug is reported to the client as `temporarily_unavailable` or
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
  ctx: RequestContext,
  res: ServerResponse,
  target: RedirectTarget,
  status: 302 | 303,
  step: () => Promise<void>,
): Promise<void> {
  try {
    await step()
  } catch (err) {
    if (answered(res)) return
    if (err instanceof StoreUnavailableError) {
      ctx.log.warn({ err: err.message }, 'store unavailable during authorization')
      return redirect(res, target.error(new TemporarilyUnavailable()), status)
    }
    if (err instanceof OAuthError) return redirect(res, target.error(err), status)
    ctx.log.error({ err }, 'authorization failed')
    redirect(res, target.error(new ServerError()), status)
  }
}

/** Run a page step; failures become error pages (503 when the store is down). */
export async function guardPage(ctx: RequestContext, res: ServerResponse, step: () => Promise<void>): Promise<void> {
  try {
    await step()
  } catch (err) {
    if (answered(res)) return
    if (err instanceof StoreUnavailableError) {
      ctx.log.warn({ err: err.message }, 'store unavailable at an interaction page')
      return showError(res, new TemporarilyUnavailable())
    }
    if (err instanceof OAuthError) return showError(res, err)
    ctx.log.error({ err }, 'interaction page failed')
    showError(res, new ServerError())
  }
}
