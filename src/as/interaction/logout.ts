import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestContext } from '../../context.js'
import { MethodNotAllowed, OAuthError } from '../../errors.js'
import { FormParams } from '../../http/body.js'
import type { AsContext, AsHandler } from '../context.js'
import { headersForClientLogo } from '../views/client.js'
import { logoutConfirmPage, signedOutPage } from '../views/logout.js'
import { isSameOrigin, tokensMatch } from './csrf.js'
import { displayName } from './display-name.js'
import { guardPage } from './failures.js'
import { readFormParams } from './form.js'
import { parseLogoutRequest, postLogoutLocation, type LogoutRequest } from './logout-request.js'
import { redirect, showError, showForbidden, showPage } from './respond.js'
import { currentSession, endSession, sessionIdOf, type ActiveSession } from './session.js'
import { normalizeUserCode, formatUserCode } from '../../tokens/user-code.js'

/**
 * /logout, the end-session endpoint (OpenID Connect RP-Initiated Logout 1.0).
 *
 * - GET, or a POST without `csrf`, is a client's request (§2): validated
 *   first (an error page, never a redirect, for anything wrong). When a valid
 *   `id_token_hint` names the person signed in here, the session ends at once;
 *   otherwise (no hint, another person, no way to tie the request to this
 *   session) the person confirms on a page, so a cross-site link cannot sign
 *   anyone out. With no session there is nothing to end.
 * - A POST with `csrf` is that confirmation, or the "Sign out" and "Not you?"
 *   buttons of our own pages: same origin and the session's CSRF token
 *   (403 otherwise, nothing changed).
 *
 * Ending the session deletes it from the store and clears the cookie;
 * remembered consent and tokens already issued stay (withdraw those on the
 * account page, or revoke them at /revoke). Afterwards the browser goes to the
 * verified post_logout_redirect_uri with `state` (§3), back to a pending
 * authorization or device approval ("Not you?"), or to a signed-out page.
 * "Stay signed in" goes to the same verified URI or the account page. A
 * client that registered itself is sent back only with an id_token_hint
 * issued to it (see logout-request.ts), at every step.
 *
 * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html
 */
export const logout: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'GET' && req.method !== 'POST') return showError(res, new MethodNotAllowed(['GET', 'POST']))
  let params: FormParams
  try {
    params = req.method === 'GET' ? FormParams.parse(ctx.rawQuery) : await readFormParams(req)
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  if (req.method === 'POST' && params.has('csrf')) return confirmed(req, res, ctx, as, params)
  await requested(req, res, ctx, as, params)
}

/** A client's logout request (§2). */
async function requested(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext, params: FormParams): Promise<void> {
  let request: LogoutRequest
  try {
    request = await parseLogoutRequest(params, as)
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  await guardPage(as, ctx, res, async () => {
    const session = await currentSession(req, as)
    if (session !== null && (request.hintSub === null || request.hintSub !== session.user.sub)) {
      return showConfirmation(res, request, session)
    }
    // Tied to this session by the hint, or no session at all (a stale cookie is cleared all the same).
    const clear = await endSession(as, session === null ? sessionIdOf(req, as) : session.id)
    if (session !== null) ctx.log.info({ event: 'logout', client_id: request.client?.clientId }, 'signed out at the request of a client')
    finish(res, postLogoutLocation(request), clear)
  })
}

function showConfirmation(res: ServerResponse, request: LogoutRequest, session: ActiveSession): void {
  const continuation: Record<string, string> = {}
  if (request.client !== null) continuation.client_id = request.client.clientId
  if (request.redirectUri !== null) continuation.post_logout_redirect_uri = request.redirectUri
  if (request.state !== null) continuation.state = request.state
  if (request.hint !== null) continuation.id_token_hint = request.hint
  const page = logoutConfirmPage({
    client: request.client,
    signedInAs: displayName(session.user),
    csrf: session.record.csrf,
    continuation,
  })
  showPage(res, 200, page, { headers: request.client === null ? {} : headersForClientLogo(request.client) })
}

/** Where a confirmed sign-out continues: checked again, as the browser carried it. */
type Next = { kind: 'authorize'; query: string } | { kind: 'device'; userCode: string } | { kind: 'client'; location: string | null }

async function nextStep(as: AsContext, form: FormParams): Promise<Next> {
  const raw = form.get('request')
  // Re-encoded, so the Location can only ever be our own authorize endpoint with a query.
  if (raw !== undefined) return { kind: 'authorize', query: new URLSearchParams(raw).toString() }
  const typed = form.get('user_code')
  const userCode = typed === undefined ? null : normalizeUserCode(typed)
  if (userCode !== null) return { kind: 'device', userCode }
  // The client's request as the confirmation carried it, validated as if it came again (hint included).
  return { kind: 'client', location: postLogoutLocation(await parseLogoutRequest(form, as)) }
}

/** The confirmation form, or our pages' own sign-out and "Not you?" buttons. */
async function confirmed(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext, form: FormParams): Promise<void> {
  if (!isSameOrigin(req, as)) return showForbidden(res)
  let next: Next
  let stay: boolean
  let csrf: string | undefined
  try {
    csrf = form.get('csrf')
    stay = form.get('decision') === 'stay'
    next = await nextStep(as, form)
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  await guardPage(as, ctx, res, async () => {
    const session = await currentSession(req, as)
    if (session !== null && !tokensMatch(session.record.csrf, csrf)) return showForbidden(res)
    if (stay) {
      return redirect(res, next.kind === 'client' ? (next.location ?? 'account') : 'account', 303)
    }
    const clear = await endSession(as, session === null ? sessionIdOf(req, as) : session.id)
    if (session !== null) ctx.log.info({ event: 'logout' }, 'signed out')
    if (next.kind === 'authorize') return redirect(res, `authorize?${next.query}`, 303, [clear])
    if (next.kind === 'device') return redirect(res, `device?user_code=${encodeURIComponent(formatUserCode(next.userCode))}`, 303, [clear])
    finish(res, next.location, clear)
  })
}

function finish(res: ServerResponse, location: string | null, clear: string): void {
  if (location !== null) return redirect(res, location, 303, [clear])
  showPage(res, 200, signedOutPage(), { cookies: [clear] })
}
