import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestContext } from '../../context.js'
import type { ClientConfig } from '../../config/validated-config.js'
import { InvalidRequest, MethodNotAllowed, OAuthError } from '../../errors.js'
import { FormParams } from '../../http/body.js'
import type { DeviceRecord } from '../../store/types.js'
import type { AsContext, AsHandler } from '../context.js'
import { strengthOf } from '../sign-in-strength.js'
import { headersForClientLogo } from '../views/client.js'
import { consentPage } from '../views/consent.js'
import { deviceEntryPage, deviceResultPage } from '../views/device.js'
import { html } from '../views/html.js'
import { messagePage } from '../views/message.js'
import { checkPreSessionCsrf, preSessionCsrf, tokensMatch } from './csrf.js'
import { deviceSignInFallsShort } from './device-mfa.js'
import { displayName } from './display-name.js'
import { guardPage } from './failures.js'
import { readPageForm } from './form.js'
import { showLoginPage, type LoginShowing } from './login-page.js'
import { userCodeLimit, waitInWords } from '../throttle.js'
import { redirect, showError, showForbidden, showPage } from './respond.js'
import { describeScopes } from './scopes.js'
import { currentSession } from './session.js'
import { formatUserCode, normalizeUserCode } from '../../tokens/user-code.js'

/**
 * The device verification page (RFC 8628 3.3): a person types the code their
 * device shows (or opens verification_uri_complete, which fills it in), signs
 * in with the same login as /authorize, checks the code against the device
 * and approves or denies. Wrong codes are rate-limited per client address
 * (RFC 8628 5.1). The confirmation is always shown, even for a client that
 * skips consent or a remembered consent: matching the code is what defends
 * against a device code phished from someone else (RFC 8628 5.4).
 */

export const CODE_NOT_FOUND = 'This code has expired or is not valid. Check the code on your device, or start again there to get a new one.'
export const CODE_USED = 'This code has already been used. Start again on your device to get a new code.'

type Lookup =
  | { kind: 'ok'; userCode: string; record: DeviceRecord; client: ClientConfig }
  | { kind: 'limited'; retryAfterSec: number }
  | { kind: 'not_found' }
  | { kind: 'used' }

/** Find a pending device request by what the person typed; every miss counts against their address. */
async function lookUp(req: IncomingMessage, as: AsContext, typed: string): Promise<Lookup> {
  const limit = userCodeLimit(as, as.clientAddress.of(req))
  const lockedFor = await limit.lockedFor()
  if (lockedFor > 0) return { kind: 'limited', retryAfterSec: lockedFor }
  const userCode = normalizeUserCode(typed)
  const found = userCode === null ? null : await as.store.devices.getByUserCode(userCode)
  const client = found === null ? undefined : await as.findClient(found.record.clientId)
  if (userCode === null || found === null || client === undefined) {
    await limit.fail()
    return { kind: 'not_found' }
  }
  if (found.record.status !== 'pending') return { kind: 'used' }
  return { kind: 'ok', userCode, record: found.record, client }
}

/** The code entry page, with a pre-session CSRF token (the person may not be signed in yet). */
function showEntry(
  req: IncomingMessage,
  res: ServerResponse,
  as: AsContext,
  status: number,
  o: { userCode?: string; error?: string; headers?: Readonly<Record<string, string>> } = {},
): void {
  const csrf = preSessionCsrf(req, as)
  const page = deviceEntryPage({
    csrf: csrf.token,
    ...(o.userCode !== undefined ? { userCode: o.userCode } : {}),
    ...(o.error !== undefined ? { error: o.error } : {}),
  })
  showPage(res, status, page, { cookies: csrf.setCookie ? [csrf.setCookie] : [], ...(o.headers ? { headers: o.headers } : {}) })
}

/** Answer a failed lookup; true when it did. */
function showLookupFailure(req: IncomingMessage, res: ServerResponse, as: AsContext, lookup: Lookup, typed: string): lookup is Exclude<Lookup, { kind: 'ok' }> {
  if (lookup.kind === 'limited') {
    const error = `Too many attempts. Try again in ${waitInWords(lookup.retryAfterSec)}.`
    showEntry(req, res, as, 429, { userCode: typed, error, headers: { 'retry-after': String(lookup.retryAfterSec) } })
    return true
  }
  if (lookup.kind === 'not_found') {
    showEntry(req, res, as, 400, { userCode: typed, error: CODE_NOT_FOUND })
    return true
  }
  if (lookup.kind === 'used') {
    showPage(res, 400, messagePage({ title: 'Code already used', message: CODE_USED, link: { href: 'device', text: 'Enter another code' } }))
    return true
  }
  return false
}

/** The login page for the device flow (used by POST /login too, after a failure). */
export function showDeviceLogin(req: IncomingMessage, res: ServerResponse, as: AsContext, userCode: string, o: LoginShowing): void {
  const code = formatUserCode(userCode)
  showLoginPage(req, res, as, { purpose: html`to connect your device (code <span class="client">${code}</span>).`, continuation: { user_code: code } }, o)
}

async function showDevice(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext): Promise<void> {
  let typed: string | undefined
  try {
    typed = FormParams.parse(ctx.rawQuery).get('user_code')
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  const input = typed
  await guardPage(as, ctx, res, async () => {
    if (input === undefined) return showEntry(req, res, as, 200)
    const lookup = await lookUp(req, as, input)
    if (showLookupFailure(req, res, as, lookup, input)) return
    const session = await currentSession(req, as)
    if (session === null) return showDeviceLogin(req, res, as, lookup.userCode, { status: 200 })
    const showLogin = (error: string): void => showDeviceLogin(req, res, as, lookup.userCode, { status: 200, error })
    if (await deviceSignInFallsShort(res, as, { client: lookup.client, session, userCode: lookup.userCode, showLogin, redirectStatus: 302 })) return
    const page = consentPage({
      client: lookup.client,
      scopes: describeScopes(
        as,
        lookup.record.scope.split(' ').filter((s) => s !== ''),
      ),
      signedInAs: displayName(session.user),
      csrf: session.record.csrf,
      action: 'device',
      continuation: { user_code: formatUserCode(lookup.userCode) },
      userCode: formatUserCode(lookup.userCode),
    })
    showPage(res, 200, page, { headers: headersForClientLogo(lookup.client) })
  })
}

/**
 * POST /device. Without `decision` it is the code entry form (pre-session
 * CSRF token): a known code answers 303 to `device?user_code=…`. With
 * `decision` it is the confirmation (the session's CSRF token): the store
 * records approved (with the user) or denied, once.
 */
async function postDevice(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext): Promise<void> {
  const form = await readPageForm(req, res, as)
  if (form === null) return
  const csrf = form.get('csrf')
  const typed = form.get('user_code')
  const decision = form.get('decision')
  if (decision === undefined) {
    if (!checkPreSessionCsrf(req, as, csrf)) return showForbidden(res)
    const input = typed
    if (input === undefined) return showEntry(req, res, as, 400, { error: 'Enter the code shown on your device.' })
    return guardPage(as, ctx, res, async () => {
      const lookup = await lookUp(req, as, input)
      if (showLookupFailure(req, res, as, lookup, input)) return
      redirect(res, `device?user_code=${encodeURIComponent(formatUserCode(lookup.userCode))}`, 303)
    })
  }
  await guardPage(as, ctx, res, async () => {
    const session = await currentSession(req, as)
    if (session === null || !tokensMatch(session.record.csrf, csrf)) return showForbidden(res)
    if (typed === undefined) return showError(res, new InvalidRequest('The form has no device code'))
    if (decision !== 'allow' && decision !== 'deny') return showError(res, new InvalidRequest('Choose Allow or Deny'))
    const lookup = await lookUp(req, as, typed)
    if (showLookupFailure(req, res, as, lookup, typed)) return
    // The policy holds for the decision too, not only for the page that offers it.
    const showLogin = (error: string): void => showDeviceLogin(req, res, as, lookup.userCode, { status: 400, error })
    const approval = { client: lookup.client, session, userCode: lookup.userCode, showLogin, redirectStatus: 303 } as const
    if (decision === 'allow' && (await deviceSignInFallsShort(res, as, approval))) return
    const decided =
      decision === 'allow'
        ? await as.store.devices.decide(lookup.userCode, {
            approved: true,
            sub: session.user.sub,
            authTime: session.record.authTime,
            ...strengthOf(session.record),
          })
        : await as.store.devices.decide(lookup.userCode, { approved: false })
    // Lost a race with expiry or with another decision on the same code.
    if (!decided) {
      const page = messagePage({ title: 'Code no longer valid', message: CODE_NOT_FOUND, link: { href: 'device', text: 'Enter another code' } })
      return showPage(res, 400, page)
    }
    ctx.log.info({ event: 'device_decided', approved: decision === 'allow', client_id: lookup.client.clientId }, 'device authorization decided')
    showPage(res, 200, deviceResultPage(decision === 'allow', lookup.client.name))
  })
}

/** GET /device shows the code entry, login or confirmation; POST /device takes the code or the decision. */
export const device: AsHandler = async (req, res, ctx, as) => {
  if (req.method === 'GET') return showDevice(req, res, ctx, as)
  if (req.method === 'POST') return postDevice(req, res, ctx, as)
  showError(res, new MethodNotAllowed(['GET', 'POST']))
}
