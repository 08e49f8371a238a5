import { passkeyCredentialType } from '../credential-changes.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { auditFactor, auditSignIn } from '../audit.js'
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server'
import { Forbidden, InvalidRequest, MethodNotAllowed, NotFound, OAuthError, TooManyRequests } from '../../errors.js'
import type { FormParams } from '../../http/body.js'
import { answerFailure } from '../../http/failure.js'
import { NO_STORE, sendError, sendJson } from '../../http/reply.js'
import type { AsHandler } from '../context.js'
import { addPasskey, authenticationOptions, passkeyName, registrationOptions, verifyAssertion } from '../passkeys/ceremony.js'
import { passkeySignInOffered } from '../passkeys/page-headers.js'
import { passkeySignIn } from '../sign-in-strength.js'
import { passkeyOptionsWait } from '../throttle.js'
import { continuationFields, readContinuation } from './continuation.js'
import { checkPreSessionCsrf, isSameOrigin, tokensMatch } from './csrf.js'
import { guardPage, guardRedirect } from './failures.js'
import { readFormParams } from './form.js'
import { knownBrowserFor, rememberBrowser } from './known-browser.js'
import { redirect, showError, showForbidden } from './respond.js'
import { passkeySecondFactorOffered } from './passkey-second-factor.js'
import { CONFIRM_NEEDED, factorChange } from './factors.js'
import { currentSession, pendingSession, sessionIdOf, startSession, type ActiveSession } from './session.js'
import { continueAfterSignIn, showLoginAgain } from './signed-in.js'

/**
 * The passkey endpoints (docs/people.md):
 * - POST /passkey-options: the options (and a fresh challenge) for the
 *   passkey script, as JSON; `purpose=register` needs the session and its
 *   CSRF token, `purpose=sign-in` the login form's pre-session token,
 *   `purpose=second-factor` the pending sign-in and its token. Each address
 *   gets `rate_limit.passkey_options_per_address` answers per window (429
 *   with Retry-After past it): every challenge is kept in the store.
 * - POST /passkeys: the account page adds (`action=add`, the credential the
 *   script created), renames (`action=rename`) or removes (`action=remove`)
 *   one of the person's passkeys. Adding and removing (and the registration
 *   options) need a recent sign-in with the person's strongest factor
 *   (factors.ts); adding never changes the current session's acr/amr.
 * - POST /passkey-login: sign in with a passkey alone, then continue like the
 *   password form.
 * Every POST must come from our origin with the right CSRF token (403 and
 * nothing changes otherwise). Only local users have passkeys.
 */

/** What the login page says when a passkey did not sign the person in (the log says why). */
export const PASSKEY_FAILED = 'That passkey could not sign you in. Try again, or sign in with your password.'

async function readForm(req: IncomingMessage, res: ServerResponse, json: boolean): Promise<FormParams | null> {
  try {
    return await readFormParams(req)
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err
    if (json) sendError(res, err)
    else showError(res, err)
    return null
  }
}

/** A signed-in local person (an upstream one has no passkeys here), or null. */
function localPerson(session: ActiveSession | null): ActiveSession | null {
  return session !== null && session.record.provider === undefined ? session : null
}

/** POST /passkey-options: JSON for navigator.credentials.create / get. */
export const passkeyOptions: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return sendError(res, new MethodNotAllowed(['POST']))
  if (!as.as.webauthn.enabled) return sendError(res, new NotFound())
  if (!isSameOrigin(req, as)) return sendError(res, new Forbidden())
  const form = await readForm(req, res, true)
  if (form === null) return
  const purpose = form.get('purpose')
  const csrf = form.get('csrf')
  // Only a request that would get a challenge is counted: a refused one stores nothing.
  const answer = async (options: () => Promise<PublicKeyCredentialCreationOptionsJSON | PublicKeyCredentialRequestOptionsJSON>): Promise<void> => {
    const wait = await passkeyOptionsWait(as, as.clientAddress.of(req))
    if (wait > 0) {
      ctx.log.warn({ event: 'passkey_options_rate_limited', retryAfterSec: wait }, 'passkey options refused: too many from this address')
      return sendError(res, new TooManyRequests(wait, 'Too many passkey requests from this address; try again later'))
    }
    sendJson(res, 200, await options(), NO_STORE)
  }
  try {
    if (purpose === 'sign-in') {
      if (!passkeySignInOffered(as)) return sendError(res, new NotFound())
      if (!checkPreSessionCsrf(req, as, csrf)) return sendError(res, new Forbidden())
      return await answer(() => authenticationOptions(as, { purpose: 'sign-in' }))
    }
    if (purpose === 'second-factor') {
      const pending = await pendingSession(req, as)
      if (pending === null || !tokensMatch(pending.record.csrf, csrf)) return sendError(res, new Forbidden())
      if (!(await passkeySecondFactorOffered(as, pending.user.sub))) return sendError(res, new NotFound())
      return await answer(() => authenticationOptions(as, { purpose: 'second-factor', person: pending.user }))
    }
    if (purpose === 'register') {
      const session = localPerson(await currentSession(req, as))
      if (session === null || !tokensMatch(session.record.csrf, csrf)) return sendError(res, new Forbidden())
      // No ceremony for a passkey the server would not add (factors.ts): the authenticator would keep an orphan.
      if (!(await factorChange(as, session)).ok) return sendError(res, new Forbidden())
      return await answer(() => registrationOptions(as, session.user))
    }
    sendError(res, new InvalidRequest('purpose must be register, sign-in or second-factor'))
  } catch (err) {
    // A store outage is 503, a bug 500: logged and counted like every failure.
    sendError(res, answerFailure(err, ctx.log, as.failures).answer)
  }
}

/** POST /passkeys: add or remove one of the signed-in person's passkeys, then back to the account page. */
export const passkeys: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['POST']))
  if (!as.as.webauthn.enabled) return showError(res, new NotFound())
  if (!isSameOrigin(req, as)) return showForbidden(res)
  const form = await readForm(req, res, false)
  if (form === null) return
  await guardPage(as, ctx, res, async () => {
    const session = localPerson(await currentSession(req, as))
    if (session === null || !tokensMatch(session.record.csrf, form.get('csrf'))) return showForbidden(res)
    const action = form.get('action')
    if (action === 'add' || action === 'remove') {
      // Adding or removing a factor needs a recent sign-in with the strongest one the person has (factors.ts).
      const change = await factorChange(as, session)
      if (!change.ok) {
        ctx.log.info(
          { event: 'factor_change_refused', factor: 'passkey', action, need: change.need, sub: session.user.sub },
          'a factor change needs a recent sign-in with the strongest factor',
        )
        return redirect(res, CONFIRM_NEEDED, 303)
      }
    }
    if (action === 'add') {
      const added = await addPasskey(as, session.user, form.get('credential'), form.get('name') ?? '')
      if (!added.ok) {
        ctx.log.info({ event: 'passkey_refused', reason: added.reason }, 'a passkey was not added')
        return redirect(res, 'account?passkey=failed', 303)
      }
      // The session keeps the acr/amr of its sign-in: the passkey counts from the next sign-in that uses it.
      ctx.log.info({ event: 'factor_added', factor: 'passkey', sub: session.user.sub }, 'a person added a passkey')
      auditFactor(as, req, 'factor.added', session.user.sub, added.passkey.credentialId)
      return redirect(res, afterAdding(form), 303)
    }
    if (action === 'rename') {
      const name = passkeyName(form.get('name'))
      if (name === null) return showError(res, new InvalidRequest('Give the passkey a name'))
      if (!(await as.store.passkeys.rename(session.user.sub, form.get('credential_id') ?? '', name))) {
        return showError(res, new InvalidRequest('That passkey is not one of yours, or it was removed'))
      }
      return redirect(res, 'account?passkey=renamed', 303)
    }
    if (action === 'remove') {
      const id = form.get('credential_id') ?? ''
      // Read first: what kind of authenticator it was is told to Shared Signals receivers (CAEP credential-change).
      const removing = await as.store.passkeys.get(id)
      if (!(await as.store.passkeys.remove(session.user.sub, id)))
        return showError(res, new InvalidRequest('That passkey is not one of yours, or it was already removed'))
      ctx.log.info({ event: 'factor_removed', factor: 'passkey', sub: session.user.sub }, 'a person removed a passkey')
      await as.credentialChanges.emit({
        sub: session.user.sub,
        credentialType: passkeyCredentialType(removing?.transports ?? []),
        changeType: 'delete',
        ...(removing === null ? {} : { friendlyName: removing.name }),
      })
      auditFactor(as, req, 'factor.removed', session.user.sub, id)
      return redirect(res, 'account?passkey=removed', 303)
    }
    showError(res, new InvalidRequest('Choose to add, rename or remove a passkey'))
  })
}

/**
 * Where an added passkey leads: back to the authorization or device approval
 * that asked for a second factor (`mfa=setup` carries it; it is validated
 * again there, and a sign-in with the new passkey is asked for), else the
 * account page.
 */
function afterAdding(form: FormParams): string {
  const request = form.get('request')
  if (request !== undefined) return `authorize?${new URLSearchParams(request).toString()}`
  const userCode = form.get('user_code')
  if (userCode !== undefined) return `device?user_code=${encodeURIComponent(userCode)}`
  return 'account?passkey=added'
}

/** POST /passkey-login: sign in with a passkey alone. */
export const passkeyLogin: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['POST']))
  if (!isSameOrigin(req, as)) return showForbidden(res)
  const form = await readForm(req, res, false)
  if (form === null) return
  if (!checkPreSessionCsrf(req, as, form.get('csrf'))) return showForbidden(res)
  if (!passkeySignInOffered(as)) return showError(res, new InvalidRequest('Sign-in with a passkey is turned off here'))
  const next = await readContinuation(res, as, continuationFields(form))
  if (next === null) return
  const attempt = async (): Promise<void> => {
    const result = await verifyAssertion(as, ctx, form.get('credential'), { purpose: 'sign-in' })
    if (!result.ok) {
      ctx.log.info({ event: 'passkey_login_failed', reason: result.reason }, 'passkey sign-in refused')
      auditSignIn(as, req, { ok: false, sub: null, reason: 'passkey_refused' })
      return showLoginAgain(req, res, as, next, { status: 400, error: PASSKEY_FAILED })
    }
    const user = await as.people.byUsername(result.person.username)
    if (user === undefined) return showLoginAgain(req, res, as, next, { status: 400, error: PASSKEY_FAILED })
    const rememberCookie = await rememberBrowser(req, as, user, await knownBrowserFor(req, as, user))
    const { session, setCookie } = await startSession(as, user, sessionIdOf(req, as), passkeySignIn(result.passkey.deviceType))
    ctx.log.info({ event: 'passkey_login', sub: user.sub }, 'a person signed in with a passkey')
    auditSignIn(as, req, { ok: true, sub: user.sub, method: 'passkey' })
    await continueAfterSignIn(req, res, as, next, session, [setCookie, rememberCookie])
  }
  if (next.kind === 'authorize') await guardRedirect(as, ctx, res, next.request.target, 303, attempt)
  else await guardPage(as, ctx, res, attempt)
}
