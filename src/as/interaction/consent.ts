import { epochSeconds } from '../../clock.js'
import { AccessDenied, InvalidRequest, MethodNotAllowed, StoreUnavailableError, TemporarilyUnavailable } from '../../errors.js'
import type { AsHandler } from '../context.js'
import { parseAuthorizationRequest } from './authorization-request.js'
import { tokensMatch } from './csrf.js'
import { answerAuthorizationError } from './authorization-error.js'
import { guardRedirect } from './failures.js'
import { readPageForm } from './form.js'
import { rememberedConsent } from './consented-details.js'
import { finishHeld } from './held-request.js'
import { issueCode } from './issue-code.js'
import { redirect, showError, showForbidden } from './respond.js'
import { currentSession, type ActiveSession } from './session.js'

/**
 * POST /consent: the answer to the consent page. Needs the session and its
 * CSRF token (403 otherwise, nothing changed); the request is validated
 * again. `decision=deny` sends access_denied to the client (RFC 6749
 * 4.1.2.1); `allow` remembers the consent (when `consent.remember`) and
 * answers 302 with the code, state and iss.
 */
export const consent: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['POST']))
  const form = await readPageForm(req, res, as)
  if (form === null) return
  const csrf = form.get('csrf')
  const raw = form.get('request')
  const decision = form.get('decision')
  // Nothing is acted on before the CSRF check; the request is parsed first only
  // so that a store outage can be reported to a verified redirect URI.
  const parsed = raw === undefined ? null : await parseAuthorizationRequest(raw, as)
  let session: ActiveSession | null
  try {
    session = await currentSession(req, as)
  } catch (err) {
    if (!(err instanceof StoreUnavailableError)) throw err
    ctx.log.warn({ err: err.message }, 'store unavailable at consent')
    if (parsed?.kind === 'ok') {
      const { target, client } = parsed.request
      return answerAuthorizationError(res, target, new TemporarilyUnavailable(), { status: 302, signedIn: false, client })
    }
    return showError(res, new TemporarilyUnavailable())
  }
  if (session === null || !tokensMatch(session.record.csrf, csrf)) return showForbidden(res)
  if (parsed === null) return showError(res, new InvalidRequest('The consent form does not say what it is for'))
  if (parsed.kind === 'page') return showError(res, parsed.error)
  if (parsed.kind === 'redirect') return redirect(res, parsed.target.error(parsed.error), 302)
  if (decision !== 'allow' && decision !== 'deny') return showError(res, new InvalidRequest('Choose Allow or Deny'))
  const { request } = parsed
  // a const, so the narrowing to non-null holds inside the closure below
  const signedIn = session
  if (decision === 'deny') {
    // A denied held request is finished too: its reference cannot start another attempt.
    if (request.held !== null) await finishHeld(as, request.held.key)
    return redirect(res, request.target.error(new AccessDenied()), 302)
  }

  await guardRedirect(as, ctx, res, request.target, 302, async () => {
    if (as.as.consent.remember) {
      const before = (await as.store.consents.get(signedIn.user.sub, request.client.clientId)) ?? []
      const scopes = rememberedConsent(before, request)
      await as.store.consents.put(signedIn.user.sub, request.client.clientId, scopes, as.as.consent.ttlSec)
      const now = epochSeconds(as.clock)
      await as.store.allowances.note(signedIn.user.sub, request.client.clientId, {
        scopes: request.scopes,
        at: now,
        grantId: null,
        until: now + as.as.consent.ttlSec,
      })
    }
    const code = await issueCode(as, request, signedIn)
    redirect(res, request.target.success(code), 302)
  })
}
