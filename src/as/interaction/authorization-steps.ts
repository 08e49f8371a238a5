import type { IncomingMessage, ServerResponse } from 'node:http'
import { consentedItems, describeDetails } from './consented-details.js'
import { epochSeconds } from '../../clock.js'
import { AccessDenied, ConsentRequired, LoginRequired } from '../../errors.js'
import { passkeySignInOffered } from '../passkeys/page-headers.js'
import { meetsAcr, ownAcrRequested } from '../../tokens/acr.js'
import { strengthOf, twoFactorSignIn } from '../sign-in-strength.js'
import type { ClientConfig } from '../../config/validated-config.js'
import type { AsContext } from '../context.js'
import { headersForClientLogo, isolated } from '../views/client.js'
import { consentPage } from '../views/consent.js'
import { html } from '../views/html.js'
import { afterLogin, type AuthorizationRequest } from './authorization-request.js'
import { answerAuthorizationError } from './authorization-error.js'
import { displayName } from './display-name.js'
import { issueCode } from './issue-code.js'
import { showLoginPage, type LoginShowing } from './login-page.js'
import { redirect, showPage } from './respond.js'
import { describeScopes } from './scopes.js'
import { enrolmentPath } from './enrolment.js'
import type { ActiveSession } from './session.js'

/**
 * The interaction steps of a validated authorization request: login when
 * needed, consent when needed, then the code. /authorize, the login POST and
 * the consent POST all go through here, so the rules live in one place.
 */

/**
 * OIDC Core 3.1.2.1: no session, prompt=login, or a login older than
 * max_age (`max_age=0`: always, the same as prompt=login). For a held
 * request (pushed, or a request object) a sign-in since the authorization
 * started satisfies prompt=login and max_age=0: its parameters are not
 * rewritten after the login as a plain request's are (afterLogin).
 */
export function needsLogin(as: AsContext, request: AuthorizationRequest, session: ActiveSession | null): boolean {
  if (session === null) return true
  const signedInSince = request.loginSince !== null && session.record.authTime >= request.loginSince
  if (request.prompt.has('login')) return !signedInSince
  if (request.maxAge === null) return false
  if (request.maxAge === 0) return !signedInSince
  return epochSeconds(as.clock) - session.record.authTime > request.maxAge
}

/** The sign-in does not meet any of the request's acr_values (OIDC Core 3.1.2.1, RFC 9470 4). */
export function tooWeak(request: AuthorizationRequest, session: ActiveSession): boolean {
  return request.acrValues !== null && !meetsAcr(strengthOf(session.record), request.acrValues)
}

/** What the login page says when the sign-in is not strong enough for the request. */
export const STRONGER_SIGN_IN = 'This application asks for a stronger sign-in. Sign in with a passkey.'
/** The same, for a person with an authenticator app (whose password and code make two factors). */
export const STRONGER_SIGN_IN_TOTP =
  'This application asks for a stronger sign-in. Sign in again with your password and a code from your authenticator app, or with a passkey.'

/**
 * Whether a person could meet one of the acr values here by signing in
 * again: one of ours above `pwd` needs a passkey sign-in to be offered
 * (an upstream provider's own value can only be met by that provider, so
 * the login page with its buttons is still the way).
 */
function reachable(as: AsContext, request: AuthorizationRequest, hasTotp: boolean): boolean {
  const wanted = request.acrValues ?? []
  if (wanted.includes('pwd') && as.as.localLogin) return true
  if (!ownAcrRequested(wanted)) return as.upstream.list().length > 0
  return passkeySignInOffered(as) || (hasTotp && wanted.includes('mfa'))
}

/**
 * For a local person whose session falls short of the request's own
 * acr_values: the level (`mfa` or `phr`) they cannot reach by signing in
 * again with the factors they have (a passkey meets either, an authenticator
 * app `mfa`), or null when they can (or when the request is for values only
 * an identity provider can meet, whose buttons are on the login page).
 */
async function ownFactorsFallShort(as: AsContext, request: AuthorizationRequest, session: ActiveSession): Promise<'mfa' | 'phr' | null> {
  const wanted = request.acrValues ?? []
  if (session.record.provider !== undefined || !as.as.localLogin || !ownAcrRequested(wanted)) return null
  if (!wanted.every((w) => ownAcrRequested([w])) && as.upstream.list().length > 0) return null
  // A password sign-in meets it (`acr_values=pwd` for a session that predates acr): the login page, not a set-up.
  if (meetsAcr({ acr: 'pwd' }, wanted)) return null
  const passkey = passkeySignInOffered(as) && (await as.store.passkeys.list(session.user.sub)).length > 0
  if (passkey) return null
  const mfa = meetsAcr({ acr: 'mfa' }, wanted)
  if (mfa && (await hasTotp(as, session))) return null
  return mfa ? 'mfa' : 'phr'
}

/** `authorization_server.mfa.required`, or the client's `require_mfa`. */
export function mfaRequired(as: AsContext, request: AuthorizationRequest): boolean {
  return mfaRequiredFor(as, request.client)
}

/** The same for a client without an authorization request (a device approval). */
export function mfaRequiredFor(as: AsContext, client: ClientConfig): boolean {
  return as.as.mfa?.required === true || client.requireMfa === true
}

/** Two factors: our `mfa` or above, or a provider that says so in its amr. */
export function hasTwoFactors(session: ActiveSession): boolean {
  return twoFactorSignIn(strengthOf(session.record))
}

/** The second factors the person has set up among those `mfa.methods` offers. */
export async function secondFactorsOf(as: AsContext, session: ActiveSession): Promise<{ totp: boolean; passkey: boolean }> {
  const methods = as.as.mfa?.methods ?? ['passkey', 'totp']
  const totp = methods.includes('totp') && (await hasTotp(as, session))
  const passkey = methods.includes('passkey') && passkeySignInOffered(as) && (await as.store.passkeys.list(session.user.sub)).length > 0
  return { totp, passkey }
}

/** The signed-in local person has an authenticator app turned on (their password and a code make `mfa`). */
async function hasTotp(as: AsContext, session: ActiveSession): Promise<boolean> {
  if (session.record.provider !== undefined || !as.as.localLogin) return false
  return ((await as.store.totp.get(session.user.sub))?.confirmedAt ?? null) !== null
}

/**
 * prompt=consent always asks; a `skip_consent` client never does otherwise
 * for its scopes, but RFC 9396 authorization details (a payment, an account)
 * are always the person's to approve; else ask unless a remembered consent
 * covers every requested scope and detail.
 */
export async function needsConsent(as: AsContext, request: AuthorizationRequest, session: ActiveSession): Promise<boolean> {
  // A client nobody vetted (it registered itself) is always shown to the person.
  if (request.prompt.has('consent') || request.client.selfRegistered !== undefined) return true
  const details = request.authorizationDetails !== null
  if (request.client.skipConsent && !details) return false
  if (!as.as.consent.remember) return true
  const granted = await as.store.consents.get(session.user.sub, request.client.clientId)
  if (granted === null) return true
  // RFC 9396: consent is remembered per exact entry; a new value (another amount, another account) asks again.
  const needed = consentedItems(request.client.skipConsent ? { scopes: [], authorizationDetails: request.authorizationDetails } : request)
  return !needed.every((s) => granted.includes(s))
}

export interface ContinueOptions {
  session: ActiveSession | null
  /** True right after a successful login POST (login is then satisfied whatever prompt/max_age say). */
  freshLogin: boolean
  /** Set-Cookie values to send with the answer (the new session). */
  cookies: readonly string[]
  /** 302 after GET /authorize; 303 after a POST that carried a password (RFC 9700 4.11). */
  redirectStatus: 302 | 303
}

/** Take the next step of the authorization and answer the browser. */
export async function continueAuthorization(
  req: IncomingMessage,
  res: ServerResponse,
  as: AsContext,
  request: AuthorizationRequest,
  o: ContinueOptions,
): Promise<void> {
  const { target } = request
  const session = o.session
  if (session === null || (!o.freshLogin && needsLogin(as, request, session))) {
    if (request.prompt.has('none')) {
      // Nobody has signed in: a client nobody vouched for gets the error on our page (RFC 9700 4.11.2).
      const signedIn = session !== null
      return answerAuthorizationError(res, target, new LoginRequired(), {
        status: o.redirectStatus,
        signedIn,
        client: request.client,
        cookies: o.cookies,
      })
    }
    return showAuthorizationLogin(req, res, as, request, { status: 200 })
  }
  if (tooWeak(request, session)) {
    // Never silently ignored: ask for a stronger sign-in, or tell the client none can be had here.
    if (request.prompt.has('none')) return redirect(res, target.error(new LoginRequired('The sign-in does not meet acr_values')), o.redirectStatus, o.cookies)
    const short = await ownFactorsFallShort(as, request, session)
    if (short !== null) {
      // Signing in again with what the person has cannot meet it (the login page would come back forever): a first
      // second factor is set up where mfa.methods offer one that meets it, or the client is told none can be had.
      const path = enrolmentPath(as, short, { request: request.raw })
      if (path !== null) return redirect(res, path, o.freshLogin ? 303 : o.redirectStatus, o.cookies)
      const why = short === 'phr' ? 'a passkey' : 'a second factor'
      return redirect(
        res,
        target.error(new AccessDenied(`acr_values needs ${why}, which this person has not set up and cannot set up here`)),
        o.redirectStatus,
        o.cookies,
      )
    }
    const totp = await hasTotp(as, session)
    if (!reachable(as, request, totp)) {
      return redirect(res, target.error(new AccessDenied('No sign-in offered here meets acr_values')), o.redirectStatus, o.cookies)
    }
    const error = totp && request.acrValues?.includes('mfa') ? STRONGER_SIGN_IN_TOTP : STRONGER_SIGN_IN
    // The session cookie goes along: a sign-in that fell short still replaced the previous session.
    return showAuthorizationLogin(req, res, as, request, { status: o.freshLogin ? 400 : 200, error, cookies: o.cookies })
  }
  if (mfaRequired(as, request) && !hasTwoFactors(session)) {
    if (request.prompt.has('none')) return redirect(res, target.error(new LoginRequired('A two-factor sign-in is required')), o.redirectStatus, o.cookies)
    if (session.record.provider !== undefined) {
      // A provider's sign-in is the provider's: bearward cannot add a factor to it.
      return redirect(res, target.error(new AccessDenied('A two-factor sign-in is required')), o.redirectStatus, o.cookies)
    }
    const factors = await secondFactorsOf(as, session)
    if (factors.totp || factors.passkey) {
      const error = factors.totp ? STRONGER_SIGN_IN_TOTP : STRONGER_SIGN_IN
      return showAuthorizationLogin(req, res, as, request, { status: o.freshLogin ? 400 : 200, error, cookies: o.cookies })
    }
    // No second factor yet: set one up on the account page, which leads back here; or none can be set up here.
    const path = enrolmentPath(as, 'mfa', { request: request.raw })
    if (path === null)
      return redirect(
        res,
        target.error(new AccessDenied('A two-factor sign-in is required, and no second factor can be set up here')),
        o.redirectStatus,
        o.cookies,
      )
    return redirect(res, path, o.freshLogin ? 303 : o.redirectStatus, o.cookies)
  }
  if (await needsConsent(as, request, session)) {
    if (request.prompt.has('none')) return redirect(res, target.error(new ConsentRequired()), o.redirectStatus, o.cookies)
    // After a login POST, go back through GET /authorize so the consent page
    // is a GET (reloadable) and its form is not a resubmission of the password.
    if (o.freshLogin) return redirect(res, `authorize?${afterLogin(request.raw)}`, 303, o.cookies)
    return showConsent(res, as, request, session)
  }
  const code = await issueCode(as, request, session)
  redirect(res, target.success(code), o.redirectStatus, o.cookies)
}

/** The login page for an authorization request. */
export function showAuthorizationLogin(req: IncomingMessage, res: ServerResponse, as: AsContext, request: AuthorizationRequest, o: LoginShowing): void {
  const username = o.username ?? request.loginHint ?? undefined
  const purpose = html`to continue to <span class="client">${isolated(request.client.name)}</span>`
  showLoginPage(req, res, as, { purpose, continuation: { request: request.raw } }, { ...o, ...(username !== undefined ? { username } : {}) })
}

function showConsent(res: ServerResponse, as: AsContext, request: AuthorizationRequest, session: ActiveSession): void {
  const page = consentPage({
    client: request.client,
    scopes: describeScopes(as, request.scopes),
    details: describeDetails(request.authorizationDetails),
    signedInAs: displayName(session.user),
    csrf: session.record.csrf,
    action: 'consent',
    continuation: { request: request.raw },
    returnTo: request.target.displayOrigin(),
    ...(request.client.selfRegistered !== undefined
      ? {
          selfRegistered: {
            redirectHost: request.target.displayHost(),
            how: request.client.selfRegistered,
            // A metadata-document client's id is the document's URL (draft-ietf-oauth-client-id-metadata-document).
            ...(request.client.selfRegistered === 'metadata_document' ? { documentHost: hostOf(request.client.clientId) } : {}),
          },
        }
      : {}),
  })
  showPage(res, 200, page, { headers: headersForClientLogo(request.client) })
}

/** The host of a URL client_id, as shown to a person; the id itself when it is not a URL. */
function hostOf(clientId: string): string {
  try {
    return new URL(clientId).host
  } catch {
    return clientId
  }
}
