import type { IncomingMessage, ServerResponse } from 'node:http'
import { formatUserCode } from '../../tokens/user-code.js'
import type { AsContext } from '../context.js'
import { showAccountLogin } from './account.js'
import type { Continuation } from './continuation.js'
import { continueAuthorization, showAuthorizationLogin } from './authorization-steps.js'
import { showDeviceLogin } from './device-page.js'
import { approvalPagePath } from './approval-next.js'
import { showApprovalLogin } from './approve-page.js'
import { redirect } from './respond.js'
import type { ActiveSession } from './session.js'

/**
 * What every way of signing in shares (the password form, a passkey): the
 * login page again after a refusal, and the next step after a success.
 */

/** The login page of the continuation again, with a message (and what was typed). */
export function showLoginAgain(
  req: IncomingMessage,
  res: ServerResponse,
  as: AsContext,
  next: Continuation,
  o: { status: number; error: string; username?: string; headers?: Record<string, string> },
): void {
  if (next.kind === 'authorize') showAuthorizationLogin(req, res, as, next.request, o)
  else if (next.kind === 'device') showDeviceLogin(req, res, as, next.userCode, o)
  else if (next.kind === 'approve') showApprovalLogin(req, res, as, next.id, o)
  else showAccountLogin(req, res, as, o)
}

/** 303 to what the sign-in continues (the device page, the account page, or the authorization request). */
export async function continueAfterSignIn(
  req: IncomingMessage,
  res: ServerResponse,
  as: AsContext,
  next: Continuation,
  session: ActiveSession,
  cookies: readonly string[],
): Promise<void> {
  if (next.kind === 'device') return redirect(res, `device?user_code=${encodeURIComponent(formatUserCode(next.userCode))}`, 303, cookies)
  if (next.kind === 'account') return redirect(res, 'account', 303, cookies)
  if (next.kind === 'approve') return redirect(res, approvalPagePath(next.id), 303, cookies)
  await continueAuthorization(req, res, as, next.request, { session, freshLogin: true, cookies, redirectStatus: 303 })
}
