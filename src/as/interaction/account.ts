import type { IncomingMessage, ServerResponse } from 'node:http'
import { requestOrigin } from '../audit.js'
import type { RequestContext } from '../../context.js'
import { epochSeconds } from '../../clock.js'
import { InvalidRequest, MethodNotAllowed, OAuthError } from '../../errors.js'
import { FormParams } from '../../http/body.js'
import type { AsContext, AsHandler } from '../context.js'
import { hashToken } from '../../store/hash.js'
import { withdrawAccess } from '../withdraw-access.js'
import { accountPage, confirmSection, type AppView, type FactorAddedView } from '../views/account.js'
import { headersForClientLogo, isolated, type ClientView } from '../views/client.js'
import { html, type SafeHtml } from '../views/html.js'
import { passkeySection, type PasskeyView } from '../views/passkeys.js'
import { totpSection } from '../views/totp.js'
import { qrSvg, totpUri } from '../totp/codes.js'
import { passkeyPageHeaders } from '../passkeys/page-headers.js'
import { tokensMatch } from './csrf.js'
import { displayName } from './display-name.js'
import { guardPage } from './failures.js'
import { readPageForm } from './form.js'
import { showLoginPage, type LoginShowing } from './login-page.js'
import { redirect, showError, showForbidden, showPage } from './respond.js'
import { describeScopes } from './scopes.js'
import { currentSession, endSession, type ActiveSession } from './session.js'
import { endSessionsOf } from '../sessions/end-sessions.js'
import { signedOutPage } from '../views/logout.js'
import { factorChange } from './factors.js'
import { totpSetUpOffered } from './enrolment.js'
import { approvalsSection, type ApprovalListView } from '../views/approval.js'
import { isApprovalId } from './approval-next.js'
import { whatOf } from './approve-page.js'
import { type AuthorizationDetail, detailDigest } from '../authorization-details/authorization-details.js'
import type { DetailsView } from '../views/consent.js'
import { describeDetails } from './consented-details.js'

/** The newest grants of one application read for its approved details (a person rarely holds more). */
const GRANTS_READ_FOR_DETAILS = 20

/**
 * RFC 9396: the authorization details the person approved in an application's live grants (a
 * refresh narrows a grant's; a revoked or ended grant shows none), each entry once, as the consent
 * page showed it: escaped, folded, every hidden character visible.
 */
async function approvedDetails(as: AsContext, sub: string, grantIds: readonly string[]): Promise<DetailsView[]> {
  const grants = await Promise.all(grantIds.slice(-GRANTS_READ_FOR_DETAILS).map((id) => as.store.grants.get(id)))
  const seen = new Set<string>()
  const entries: AuthorizationDetail[] = []
  for (const grant of grants) {
    if (grant === null || grant.sub !== sub) continue
    for (const d of grant.authorizationDetails ?? []) {
      if (typeof d.type !== 'string') continue
      const detail = d as AuthorizationDetail
      const digest = detailDigest(detail)
      if (seen.has(digest)) continue
      seen.add(digest)
      entries.push(detail)
    }
  }
  return describeDetails(entries)
}

/**
 * /account: a signed-in person sees the applications they allowed and can
 * withdraw one. A person who is not signed in gets the login page, which
 * comes back here (the login form's `next=account`).
 *
 * "Sign out everywhere" (POST, same origin, the session's CSRF token, `sign_out=everywhere`) ends
 * every session of the person (end-sessions.ts).
 *
 * Withdrawing (POST, same origin, the session's CSRF token) forgets the
 * remembered consent and revokes every grant of that person and client: the
 * refresh families end and their grant ids go on the revocation list (the
 * mechanism /revoke uses, published to every instance), so the gateway
 * refuses the access tokens issued from them.
 */

/** The login form's `next` value that returns here. */
export const ACCOUNT_NEXT = 'account'

/** The login page for the account page (used by POST /login too, after a failure). */
export function showAccountLogin(req: IncomingMessage, res: ServerResponse, as: AsContext, o: LoginShowing): void {
  showLoginPage(req, res, as, { purpose: html`to see the applications you allowed.`, continuation: { next: ACCOUNT_NEXT } }, o)
}

/** A client as the page shows it (configured, registered or a metadata document); one since removed is shown by its id. */
async function clientView(as: AsContext, clientId: string): Promise<ClientView> {
  return (await as.findClient(clientId)) ?? { name: clientId, metadata: { logoUri: null, policyUri: null, tosUri: null, postLogoutRedirectUris: [] } }
}

/** The status line after a passkey action (`?passkey=`); anything else shows none. */
const PASSKEY_NOTICES: Readonly<Record<string, string>> = {
  added: 'Your passkey was added. You can now sign in with it.',
  removed: 'The passkey was removed. It can no longer sign you in.',
  renamed: 'The passkey was renamed.',
  failed: 'The passkey was not added. Try again.',
}

/** The passkeys section for a local person when passkeys are on; undefined otherwise. */
async function passkeysOf(as: AsContext, session: ActiveSession, carry: Readonly<Record<string, string>>, canChange: boolean): Promise<SafeHtml | undefined> {
  if (!as.as.webauthn.enabled || session.record.provider !== undefined) return undefined
  const list = await as.store.passkeys.list(session.user.sub)
  const views: PasskeyView[] = list.map((p) => ({
    credentialId: p.credentialId,
    name: p.name,
    createdAt: p.createdAt,
    lastUsedAt: p.lastUsedAt,
    synced: p.deviceType === 'multiDevice',
  }))
  return passkeySection(views, session.record.csrf, carry, canChange)
}

/** How long the account page tells of a newly added way of signing in. */
const FACTOR_ADDED_NOTICE_SEC = 14 * 86_400

/**
 * The ways of signing in added in the last {@link FACTOR_ADDED_NOTICE_SEC}:
 * a person who did not add one sees it at once (the log has `factor_added`).
 */
async function factorsAddedOf(as: AsContext, session: ActiveSession): Promise<FactorAddedView[]> {
  if (session.record.provider !== undefined) return []
  const since = epochSeconds(as.clock) - FACTOR_ADDED_NOTICE_SEC
  const totp = await as.store.totp.get(session.user.sub)
  const passkeys = as.as.webauthn.enabled ? await as.store.passkeys.list(session.user.sub) : []
  return [
    ...(totp?.confirmedAt != null && totp.confirmedAt >= since ? [{ what: 'An authenticator app', at: totp.confirmedAt }] : []),
    ...passkeys.filter((p) => p.createdAt >= since).map((p) => ({ what: `The passkey “${p.name}”`, at: p.createdAt })),
  ].sort((a, b) => b.at - a.at)
}

/** The status line after turning the authenticator app off (`?totp=off`). */
const TOTP_OFF = 'The authenticator app is off. Your password alone signs you in again.'
const TOTP_WRONG = 'That code is not right. Enter the code the app shows now.'
/** The application being signed in to needs a second factor the person has not set up (`?mfa=setup`). */
export const MFA_SETUP = 'The application you are signing in to needs a second step after your password. Set up an authenticator app below to continue.'
/** The same where only a passkey can be set up (`mfa.methods: [passkey]`). */
const MFA_SETUP_PASSKEY = 'The application you are signing in to needs a second step after your password. Add a passkey below to continue.'

/** The authenticator-app section for a local person; undefined for a person of an upstream provider. */
async function totpOf(
  as: AsContext,
  session: ActiveSession,
  totpNotice: string | undefined,
  carry: Readonly<Record<string, string>>,
  canChange: boolean,
): Promise<SafeHtml | undefined> {
  if (session.record.provider !== undefined) return undefined
  const record = await as.store.totp.get(session.user.sub)
  // Set up only where `mfa.methods` offers it; one that is on is shown (and can be turned off) whatever the methods.
  const offered = (as.as.mfa?.methods ?? ['totp']).includes('totp')
  if (!canChange && (record === null || record.confirmedAt === null))
    return offered ? totpSection({ state: 'none' }, session.record.csrf, carry, false) : undefined
  if ((record === null || record.confirmedAt === null) && !offered) return undefined
  if (record === null) return totpSection({ state: 'none' }, session.record.csrf, carry)
  if (record.confirmedAt === null) {
    // A set-up another session started is not shown (its secret is that session's): this one may start its own.
    if (record.startedBy !== hashToken(session.id)) return totpSection({ state: 'none' }, session.record.csrf, carry)
    // A set-up whose secret cannot be opened (logged) is offered again from the start.
    const opened = as.totpSecrets.secretOf(as.log, session.user.sub, record)
    if (opened === null) return totpSection({ state: 'none' }, session.record.csrf, carry)
    const uri = totpUri(opened.secret, session.user.username, as.as.webauthn.rpName)
    return totpSection(
      { state: 'setting-up', secret: opened.secret, qrSvg: await qrSvg(uri), ...(totpNotice === 'wrong' ? { error: TOTP_WRONG } : {}) },
      session.record.csrf,
      carry,
    )
  }
  const used = record.recovery.map((r) => r.usedAt).filter((at): at is number => at !== null)
  return totpSection(
    {
      state: 'on',
      confirmedAt: record.confirmedAt,
      recoveryLeft: record.recovery.length - used.length,
      lastRecoveryUse: used.length === 0 ? null : Math.max(...used),
    },
    session.record.csrf,
    {},
    canChange,
  )
}

async function showAccount(
  res: ServerResponse,
  as: AsContext,
  session: ActiveSession,
  withdrawn: string | undefined,
  passkey?: string,
  totpNotice?: string,
  setupFor?: Readonly<Record<string, string>>,
  confirmRefused = false,
  passkeyOnly = false,
  approvalNotice?: string,
): Promise<void> {
  const allowances = await as.store.allowances.list(session.user.sub)
  const apps: AppView[] = await Promise.all(
    allowances
      .sort((a, b) => b.allowedAt - a.allowedAt || a.clientId.localeCompare(b.clientId))
      .map(async (a) => ({
        clientId: a.clientId,
        client: await clientView(as, a.clientId),
        scopes: describeScopes(as, a.scopes),
        details: await approvedDetails(as, session.user.sub, a.grantIds),
        allowedAt: a.allowedAt,
      })),
  )
  // The notice names only a configured client that is no longer listed: never text taken from the URL as such, nor a
  // registered client's or metadata document's name (a stranger's words, which a link would put on this page).
  const gone = withdrawn === undefined || apps.some((a) => a.clientId === withdrawn) ? undefined : as.clients.get(withdrawn)?.name
  const carry: Readonly<Record<string, string>> = setupFor ?? {}
  const local = session.record.provider === undefined
  const change = local ? await factorChange(as, session) : null
  const canChange = change?.ok === true
  const passkeys = await passkeysOf(as, session, carry, canChange)
  const totp = await totpOf(as, session, totpNotice, passkeyOnly ? {} : carry, canChange)
  const factorsAdded = await factorsAddedOf(as, session)
  const approvals = await approvalsOf(as, session)
  const page = accountPage({
    signedInAs: displayName(session.user),
    csrf: session.record.csrf,
    apps,
    ...(gone !== undefined ? { notice: html`You withdrew the access of ${isolated(gone)}.` } : {}),
    ...(gone === undefined && passkeys !== undefined && passkey !== undefined && PASSKEY_NOTICES[passkey] !== undefined
      ? { notice: PASSKEY_NOTICES[passkey] }
      : {}),
    ...(passkeys !== undefined ? { passkeys } : {}),
    ...(totp !== undefined ? { totp } : {}),
    ...(totpNotice === 'off' ? { notice: TOTP_OFF } : {}),
    ...(approvalNotice === 'denied' ? { notice: APPROVAL_DENIED } : approvalNotice === 'gone' ? { notice: APPROVAL_GONE } : {}),
    ...(setupFor !== undefined ? { notice: totpSetUpOffered(as) && !passkeyOnly ? MFA_SETUP : MFA_SETUP_PASSKEY } : {}),
    ...(factorsAdded.length > 0 ? { factorsAdded } : {}),
    approvals: approvalsSection(approvals, session.record.csrf),
    ...(change !== null && !change.ok ? { confirm: confirmSection(change.need, confirmRefused) } : {}),
  })
  const headers = headersForClientLogo(...apps.map((a) => a.client), ...approvals.map((a) => a.client))
  showPage(res, 200, page, { headers: passkeys === undefined ? headers : { ...headers, ...passkeyPageHeaders(as, headers['content-security-policy']) } })
}

/** The person's approvals (issue #41), newest first, each with its client as the page shows it. */
async function approvalsOf(as: AsContext, session: ActiveSession): Promise<ApprovalListView[]> {
  const list = await as.approvals.listForPerson(session.user.sub)
  return Promise.all(
    list.map(async (r) => ({ id: r.id, client: await clientView(as, r.clientId), what: whatOf(as, r), status: r.status, createdAt: r.createdAt })),
  )
}

/** The status line after denying an approval from the list. */
const APPROVAL_DENIED = 'You denied the request.'
const APPROVAL_GONE = 'That request was no longer waiting: nothing was changed.'

async function getAccount(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext): Promise<void> {
  let withdrawn: string | undefined
  let approvalNotice: string | undefined
  let passkey: string | undefined
  let totpNotice: string | undefined
  let setupFor: Readonly<Record<string, string>> | undefined
  let confirmRefused = false
  let signInAgain = false
  // `mfa=passkey`: the authorization asks for what only a passkey meets (`acr_values=phr`).
  let passkeyOnly = false
  try {
    const query = FormParams.parse(ctx.rawQuery)
    confirmRefused = query.get('confirm') === 'needed'
    signInAgain = query.get('sign_in') === 'again'
    withdrawn = query.get('withdrawn')
    approvalNotice = query.get('approval')
    passkey = query.get('passkey')
    totpNotice = query.get('totp')
    const mfa = query.get('mfa')
    passkeyOnly = mfa === 'passkey'
    if (mfa === 'setup' || mfa === 'passkey') {
      // What the set-up leads back to: an authorization request, or a device's confirmation (device-mfa.ts).
      const request = query.get('request')
      const userCode = query.get('user_code')
      setupFor = request !== undefined ? { request } : userCode !== undefined ? { user_code: userCode } : undefined
    }
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  await guardPage(as, ctx, res, async () => {
    const session = await currentSession(req, as)
    if (session === null) return showAccountLogin(req, res, as, { status: 200 })
    // "Sign in again" (Confirm it's you): the login page although signed in; the new sign-in replaces the session.
    if (signInAgain && session.record.provider === undefined) return showAccountLogin(req, res, as, { status: 200 })
    await showAccount(res, as, session, withdrawn, passkey, totpNotice, setupFor, confirmRefused, passkeyOnly, approvalNotice)
  })
}

async function postAccount(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext): Promise<void> {
  const form = await readPageForm(req, res, as)
  if (form === null) return
  const csrf = form.get('csrf')
  const clientId = form.get('client_id')
  const everywhere = form.get('sign_out') === 'everywhere'
  const denyApproval = form.get('deny_approval')
  await guardPage(as, ctx, res, async () => {
    const session = await currentSession(req, as)
    if (session === null || !tokensMatch(session.record.csrf, csrf)) return showForbidden(res)
    if (everywhere) return signOutEverywhere(res, as, session)
    if (denyApproval !== undefined) {
      // Only the person's own pending approval: the store decides nothing for another sub.
      const origin = requestOrigin(as, req)
      const by = { sub: session.user.sub, acr: session.record.acr ?? null, address: origin.address, userAgent: origin.userAgent }
      const denied = isApprovalId(denyApproval) ? await as.approvals.decide(denyApproval, 'denied', by, 1) : null
      return redirect(res, `account?approval=${denied === null ? 'gone' : 'denied'}#approvals`, 303)
    }
    if (clientId === undefined) return showError(res, new InvalidRequest('Choose an application to withdraw'))
    const grants = await withdrawAccess(as, session.user.sub, clientId, {
      event: 'grant.withdrawn',
      actor: { kind: 'person', id: session.user.sub },
      origin: requestOrigin(as, req),
    })
    ctx.log.info({ event: 'access_withdrawn', client_id: clientId, grants }, 'a person withdrew an application')
    redirect(res, `account?withdrawn=${encodeURIComponent(clientId)}`, 303)
  })
}

/**
 * "Sign out everywhere": every session of the person ends (this one too), and each ending is told
 * to the applications that received an id_token in it (back-channel logout) and to Shared Signals
 * receivers, through end-sessions.ts. The cookie is cleared; the signed-out page says so.
 */
async function signOutEverywhere(res: ServerResponse, as: AsContext, session: ActiveSession): Promise<void> {
  await endSessionsOf(as, session.user.sub, 'sign_out_everywhere')
  const clear = await endSession(as, null)
  showPage(res, 200, signedOutPage(true), { cookies: [clear] })
}

/** GET /account shows the page (or the login); POST /account withdraws an application. */
export const account: AsHandler = async (req, res, ctx, as) => {
  if (req.method === 'GET') return getAccount(req, res, ctx, as)
  if (req.method === 'POST') return postAccount(req, res, ctx, as)
  showError(res, new MethodNotAllowed(['GET', 'POST']))
}
