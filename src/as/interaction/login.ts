import type { IncomingMessage, ServerResponse } from 'node:http'
import { auditSignIn } from '../audit.js'
import { DUMMY_HASH } from '../../crypto/secret.js'
import { InvalidRequest, MethodNotAllowed } from '../../errors.js'
import type { FormParams } from '../../http/body.js'
import type { RequestContext } from '../../context.js'
import type { AsContext, AsHandler } from '../context.js'
import { readContinuation, storedContinuation, type Continuation } from './continuation.js'
import { checkPreSessionCsrf } from './csrf.js'
import { guardPage, guardRedirect } from './failures.js'
import { readPageForm } from './form.js'
import { knownBrowserFor, rememberBrowser } from './known-browser.js'
import { LoginThrottle, waitInWords, type LoginVerdict } from '../throttle.js'
import { redirect, showError, showForbidden } from './respond.js'
import { passwordSignIn } from '../sign-in-strength.js'
import { continueAfterSignIn, showLoginAgain } from './signed-in.js'
import { sessionIdOf, startPendingSession, startSession } from './session.js'
import { passkeySecondFactorDue } from './passkey-second-factor.js'
import { completeSignIn } from './factors.js'

/** The same text whether the username or the password was wrong (no account enumeration). */
export const LOGIN_FAILED = 'The username or password is incorrect.'
export const LOGIN_INCOMPLETE = 'Enter your username and password.'

/**
 * The page text of a throttled attempt: what happened, how long to wait,
 * and, when the username is under attack, that a usual browser still works.
 * The same for known and unknown usernames.
 */
export function throttledMessage(verdict: Exclude<LoginVerdict, { kind: 'go' }>): string {
  const wait = waitInWords(verdict.retryAfterSec)
  if (verdict.kind === 'locked') return `Too many failed sign-in attempts from this browser or network. Try again in ${wait}.`
  return (
    `There have been many failed attempts to sign in to this account, so sign-in from new browsers is slowed down. ` +
    `Try again in ${wait}. A browser you have signed in with before is not affected.`
  )
}

interface LoginForm {
  csrf: string | undefined
  username: string
  password: string
  request: string | undefined
  userCode: string | undefined
  next: string | undefined
}

function readLoginForm(form: FormParams): LoginForm {
  return {
    csrf: form.get('csrf'),
    username: form.get('username') ?? '',
    password: form.get('password') ?? '',
    request: form.get('request'),
    userCode: form.get('user_code'),
    next: form.get('next'),
  }
}

/**
 * POST /login: the login form of /authorize and /device. Order matters:
 * Origin and CSRF first (403, nothing changes), then the pending request is
 * validated again, then the throttle (LoginThrottle: 429 with Retry-After and
 * the password left unchecked), then the password (scrypt; a dummy hash for
 * unknown users, so timing does not tell which exist). Success mints a new
 * session (never reusing an old id), or a pending one when a second factor
 * is due, and answers 303 to the next step. The browser is remembered for
 * this user (the known-browser cookie) only by a complete sign-in: here when
 * the person has no factor but the password, else after the second factor.
 */
export const login: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['POST']))
  const params = await readPageForm(req, res, as)
  if (params === null) return
  const form = readLoginForm(params)
  if (!checkPreSessionCsrf(req, as, form.csrf)) return showForbidden(res)

  if (!as.as.localLogin) return showError(res, new InvalidRequest('Sign-in with a username and password is turned off here; use one of the sign-in buttons'))
  const continuation = await readContinuation(res, as, form)
  if (continuation === null) return

  const attempt = (): Promise<void> => signIn(req, res, ctx, as, form, continuation)
  if (continuation.kind === 'authorize') await guardRedirect(as, ctx, res, continuation.request.target, 303, attempt)
  else await guardPage(as, ctx, res, attempt)
}

async function signIn(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext, form: LoginForm, next: Continuation): Promise<void> {
  const again = (status: number, error: string, headers?: Record<string, string>): void =>
    showLoginAgain(req, res, as, next, { status, error, username: form.username, ...(headers ? { headers } : {}) })
  if (form.username === '' || form.password === '') return again(400, LOGIN_INCOMPLETE)

  const user = await as.people.byUsername(form.username)
  const known = await knownBrowserFor(req, as, user)
  const throttle = new LoginThrottle(as, as.clientAddress.of(req), form.username, known?.hash ?? null)
  const verdict = await throttle.check()
  if (verdict.kind !== 'go') {
    ctx.log.warn({ event: 'login_rate_limited', reason: verdict.kind, knownBrowser: throttle.known }, 'login refused: too many failures')
    auditSignIn(as, req, { ok: false, sub: user?.sub ?? null, reason: 'throttled' })
    return again(429, throttledMessage(verdict), { 'retry-after': String(verdict.retryAfterSec) })
  }

  const passwordOk = await as.secrets.verify(form.password, user?.passwordHash ?? DUMMY_HASH)
  if (user === undefined || !passwordOk) {
    await throttle.fail()
    ctx.log.info({ event: 'login_failed', knownBrowser: throttle.known }, 'login failed')
    auditSignIn(as, req, { ok: false, sub: user?.sub ?? null, reason: 'invalid_credentials' })
    return again(400, LOGIN_FAILED)
  }
  await throttle.succeed()

  // A person with an authenticator app gives a code next (second-factor.ts); the password alone signs them in nowhere.
  // A person with a passkey gives it next when the authorization needs more than a password (passkey-second-factor.ts).
  // The browser becomes known (the known-browser cookie) only once every factor is given: never on the password alone.
  const totp = await as.store.totp.get(user.sub)
  if ((totp !== null && totp.confirmedAt !== null) || (await passkeySecondFactorDue(as, user.sub, next))) {
    const { setCookie } = await startPendingSession(as, user, sessionIdOf(req, as), storedContinuation(next))
    return redirect(res, 'second-factor', 303, [setCookie])
  }
  const strength = passwordSignIn()
  const { session, setCookie } = await startSession(as, user, sessionIdOf(req, as), strength)
  auditSignIn(as, req, { ok: true, sub: user.sub, method: 'password' })
  const cookies = (await completeSignIn(as, user.sub, strength.amr)) ? [setCookie, await rememberBrowser(req, as, user, known)] : [setCookie]
  await continueAfterSignIn(req, res, as, next, session, cookies)
}
