/**
 * The approval page (issue #41, docs/approvals.md): `GET /approve?id=` shows one approval to the
 * person it is for; `POST /approve` (same origin, the session's CSRF token) records Approve or Deny.
 *
 * Order, on both: the id's shape; the approval (unknown or lapsed: a plain page); a session (none:
 * the login page, which comes back here); the session's person must be the approval's (another
 * person: 403 and nothing decided); then the sign-in the approval asks for: no older than its
 * `max_age` and meeting its `acr` (else the login page again, with the second factor where one is
 * set up). Only then the page, or the decision. Pages carry the pages' headers: the CSP forbids
 * script and framing (frame-ancestors 'none', X-Frame-Options DENY).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestContext } from '../../context.js'
import { epochSeconds } from '../../clock.js'
import { InvalidRequest, MethodNotAllowed, OAuthError } from '../../errors.js'
import { FormParams } from '../../http/body.js'
import { meetsAcr } from '../../tokens/acr.js'
import type { ApprovalRecord } from '../../store/types.js'
import { requestOrigin } from '../audit.js'
import type { AsContext, AsHandler } from '../context.js'
import { strengthOf } from '../sign-in-strength.js'
import { approvalPage, type ApprovalWhat } from '../views/approval.js'
import { headersForClientLogo, type ClientView } from '../views/client.js'
import { html } from '../views/html.js'
import { messagePage } from '../views/message.js'
import { approvalNext, isApprovalId } from './approval-next.js'
import { secondFactorsOf, STRONGER_SIGN_IN, STRONGER_SIGN_IN_TOTP } from './authorization-steps.js'
import { tokensMatch } from './csrf.js'
import { displayName } from './display-name.js'
import { guardPage } from './failures.js'
import { readPageForm } from './form.js'
import { showLoginPage, type LoginShowing } from './login-page.js'
import { showError, showForbidden, showPage } from './respond.js'
import { describeScopes } from './scopes.js'
import { currentSession, type ActiveSession } from './session.js'

export const APPROVAL_NOT_FOUND = 'This request has expired or does not exist. If the application still needs it, it will ask again.'
export const APPROVAL_OTHER_PERSON = 'This request is for another person. Nothing was approved or denied. Sign out, then sign in as the person it is for.'
export const SIGN_IN_AGAIN = 'This request needs a recent sign-in. Sign in again to see it.'
export const APPROVAL_NEEDS_SECOND_FACTOR =
  'This request needs a sign-in with two factors, and you have no second factor set up. Add one on your account page, then open this request again.'

/** The login page for an approval (used by POST /login too, after a failure). */
export function showApprovalLogin(req: IncomingMessage, res: ServerResponse, as: AsContext, id: string, o: LoginShowing): void {
  showLoginPage(req, res, as, { purpose: html`to review a request from an application.`, continuation: { next: approvalNext(id) } }, o)
}

/** A client as the page shows it; one since removed is shown by its id. */
async function clientView(as: AsContext, clientId: string): Promise<ClientView> {
  return (await as.findClient(clientId)) ?? { name: clientId, metadata: { logoUri: null, policyUri: null, tosUri: null, postLogoutRedirectUris: [] } }
}

/** What is asked, for the approval page and the account page's list. */
export function whatOf(as: AsContext, r: ApprovalRecord): ApprovalWhat {
  const s = r.subject
  if (s.kind === 'mcp_tool') return { kind: 'mcp_tool', route: s.route, tool: s.tool, argumentsJson: s.argumentsJson }
  return { kind: 'ciba', scopes: describeScopes(as, [...s.scopes]), bindingMessage: s.bindingMessage, authorizationDetailsJson: s.authorizationDetailsJson }
}

const STATUS_PAGES: Readonly<Record<Exclude<ApprovalRecord['status'], 'pending'>, { title: string; message: string }>> = {
  approved: { title: 'Already approved', message: 'You approved this request. The application can go on.' },
  used: { title: 'Already approved', message: 'You approved this request, and the application has used it.' },
  denied: { title: 'Denied', message: 'You denied this request. The application was told.' },
  cancelled: { title: 'Request cancelled', message: 'This request was cancelled: the application’s access was withdrawn.' },
  expired: { title: 'Request expired', message: APPROVAL_NOT_FOUND },
}

type Checked = { ok: true; record: ApprovalRecord; session: ActiveSession } | { ok: false }

/**
 * Everything before the page or the decision (see the module comment). Answers the browser and
 * returns `ok: false` when it stops; `afterPost` says which status a login page gets.
 */
async function check(req: IncomingMessage, res: ServerResponse, as: AsContext, id: string, csrf: string | null): Promise<Checked> {
  const record = await as.approvals.get(id)
  if (record === null) {
    showPage(res, 404, messagePage({ title: 'Request not found', message: APPROVAL_NOT_FOUND }))
    return { ok: false }
  }
  const session = await currentSession(req, as)
  if (csrf !== null && (session === null || !tokensMatch(session.record.csrf, csrf))) {
    showForbidden(res)
    return { ok: false }
  }
  if (session === null) {
    showApprovalLogin(req, res, as, id, { status: 200 })
    return { ok: false }
  }
  if (session.user.sub !== record.sub) {
    showPage(res, 403, messagePage({ title: 'Not your request', message: APPROVAL_OTHER_PERSON, link: { href: 'account', text: 'Go to your account' } }))
    return { ok: false }
  }
  if (record.status !== 'pending') {
    const p = STATUS_PAGES[record.status]
    showPage(res, record.status === 'expired' ? 404 : 200, messagePage({ title: p.title, message: p.message }))
    return { ok: false }
  }
  const status = csrf === null ? 200 : 400
  const { maxAgeSec, acr } = record.signIn
  if (maxAgeSec !== null && epochSeconds(as.clock) - session.record.authTime > maxAgeSec) {
    showApprovalLogin(req, res, as, id, { status, error: SIGN_IN_AGAIN })
    return { ok: false }
  }
  if (acr.length > 0 && !meetsAcr(strengthOf(session.record), acr)) {
    const factors = session.record.provider === undefined ? await secondFactorsOf(as, session) : { totp: false, passkey: false }
    if (factors.totp || factors.passkey) showApprovalLogin(req, res, as, id, { status, error: factors.totp ? STRONGER_SIGN_IN_TOTP : STRONGER_SIGN_IN })
    else
      showPage(
        res,
        403,
        messagePage({ title: 'A stronger sign-in is needed', message: APPROVAL_NEEDS_SECOND_FACTOR, link: { href: 'account', text: 'Go to your account' } }),
      )
    return { ok: false }
  }
  return { ok: true, record, session }
}

async function showApproval(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext): Promise<void> {
  let id: string | undefined
  try {
    id = FormParams.parse(ctx.rawQuery).get('id')
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  if (!isApprovalId(id)) return showPage(res, 404, messagePage({ title: 'Request not found', message: APPROVAL_NOT_FOUND }))
  const approvalId = id
  await guardPage(as, ctx, res, async () => {
    const checked = await check(req, res, as, approvalId, null)
    if (!checked.ok) return
    const { record, session } = checked
    const client = await clientView(as, record.clientId)
    const page = approvalPage({
      id: record.id,
      client,
      what: whatOf(as, record),
      signedInAs: displayName(session.user),
      csrf: session.record.csrf,
      expiresAt: record.expiresAt,
    })
    showPage(res, 200, page, { headers: headersForClientLogo(client) })
  })
}

/** How long an approved request lasts: the retry's window, or with `reuse: ttl` every matching call's. */
function approvedForSec(record: ApprovalRecord): number {
  // The desk opened it with the route's ttl: an approval lasts as long again from the decision.
  return Math.max(1, record.expiresAt - record.createdAt)
}

async function postApproval(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext): Promise<void> {
  const form = await readPageForm(req, res, as)
  if (form === null) return
  const csrf = form.get('csrf') ?? ''
  const id = form.get('id')
  const decision = form.get('decision')
  if (!isApprovalId(id)) return showError(res, new InvalidRequest('The form names no request'))
  if (decision !== 'approve' && decision !== 'deny') return showError(res, new InvalidRequest('Choose Approve or Deny'))
  await guardPage(as, ctx, res, async () => {
    const checked = await check(req, res, as, id, csrf)
    if (!checked.ok) return
    const { record, session } = checked
    const origin = requestOrigin(as, req)
    const decided = await as.approvals.decide(
      id,
      decision === 'approve' ? 'approved' : 'denied',
      { sub: session.user.sub, acr: session.record.acr ?? null, address: origin.address, userAgent: origin.userAgent },
      approvedForSec(record),
    )
    // Lost a race with expiry or with a decision elsewhere (the account page, another tab).
    if (decided === null) return showPage(res, 409, messagePage({ title: 'Request no longer waiting', message: APPROVAL_NOT_FOUND }))
    ctx.log.info({ event: 'approval_decided', approved: decision === 'approve', client_id: record.clientId, kind: record.kind }, 'an approval was decided')
    const message = decision === 'approve' ? 'You approved the request. You can close this page: the application goes on.' : 'You denied the request.'
    showPage(res, 200, messagePage({ title: decision === 'approve' ? 'Approved' : 'Denied', message, link: { href: 'account', text: 'Your account' } }))
  })
}

/** GET /approve shows an approval (or the login); POST /approve decides it. */
export const approve: AsHandler = async (req, res, ctx, as) => {
  if (req.method === 'GET') return showApproval(req, res, ctx, as)
  if (req.method === 'POST') return postApproval(req, res, ctx, as)
  showError(res, new MethodNotAllowed(['GET', 'POST']))
}
