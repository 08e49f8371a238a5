import type { ServerResponse } from 'node:http'
import type { RequestContext } from '../../context.js'
import type { AsContext } from '../context.js'
import { verifyAssertion } from '../passkeys/ceremony.js'
import { passkeyPageHeaders } from '../passkeys/page-headers.js'
import { meetsAcr, ownAcrRequested } from '../../tokens/acr.js'
import { passwordAndPasskey, passwordSignIn, type SignInStrength } from '../sign-in-strength.js'
import { passkeySecondFactor, passkeySecondFactorPage } from '../views/passkeys.js'
import { secondFactorPage } from '../views/totp.js'
import type { AuthorizationRequest } from './authorization-request.js'
import { mfaRequired } from './authorization-steps.js'
import type { Continuation } from './continuation.js'
import { showPage } from './respond.js'
import type { PendingSession } from './session.js'

/**
 * A passkey as the second factor after a password (docs/people.md): when it
 * is asked for (the person has one, passkeys are on, `mfa.methods` counts
 * them, and the sign-in continues an authorization that needs more than the
 * password), what the second-factor page then shows, and the check of the
 * passkey posted there. The page and its code forms are second-factor.ts.
 */

/** What the passkey page says when the passkey did not confirm the sign-in (the log says why). */
export const PASSKEY_SECOND_FACTOR_FAILED = 'That passkey could not confirm it is you. Try again with one of your passkeys.'

/** The person can give a passkey as their second factor here. */
export async function passkeySecondFactorOffered(as: AsContext, sub: string): Promise<boolean> {
  if (!as.as.webauthn.enabled || !as.as.localLogin) return false
  if (!(as.as.mfa?.methods ?? ['passkey']).includes('passkey')) return false
  return (await as.store.passkeys.list(sub)).length > 0
}

/**
 * The authorization needs two factors (`mfa.required`, the client's
 * `require_mfa`) or asks, in its acr_values, for one of ours that a password
 * alone does not meet.
 * @see https://openid.net/specs/openid-connect-core-1_0.html#AuthRequest
 */
export function wantsSecondFactor(as: AsContext, request: AuthorizationRequest): boolean {
  if (mfaRequired(as, request)) return true
  const wanted = request.acrValues
  return wanted !== null && ownAcrRequested(wanted) && !meetsAcr(passwordSignIn(), wanted)
}

/**
 * After a right password: the passkey is asked for next, rather than a
 * password-only session that the authorization would refuse, or, at the
 * account page (where factors are changed, which needs the strongest factor:
 * factors.ts), one that could change nothing.
 */
export async function passkeySecondFactorDue(as: AsContext, sub: string, next: Continuation): Promise<boolean> {
  const wanted = next.kind === 'account' || next.kind === 'approve' || (next.kind === 'authorize' && wantsSecondFactor(as, next.request))
  return wanted && (await passkeySecondFactorOffered(as, sub))
}

/** The second factors a pending sign-in's page offers. */
export interface SecondFactorOffer {
  totp: boolean
  passkey: boolean
}

/**
 * The second-factor page: the authenticator-app code (with the passkey beside
 * it when the person has both), or the passkey alone. A page with the passkey
 * carries the CSP that lets its one script run.
 */
export function showSecondFactorPage(
  res: ServerResponse,
  as: AsContext,
  offer: SecondFactorOffer,
  csrf: string,
  o: { status: number; error?: string; headers?: Record<string, string> },
): void {
  const error = o.error === undefined ? {} : { error: o.error }
  const page = offer.totp
    ? secondFactorPage({ csrf, ...error, ...(offer.passkey ? { passkey: passkeySecondFactor(csrf, 'secondary', 'Or use your passkey') } : {}) })
    : passkeySecondFactorPage({ csrf, ...error })
  const headers = { ...(offer.passkey ? passkeyPageHeaders(as) : {}), ...o.headers }
  showPage(res, o.status, page, { headers })
}

/**
 * POST /second-factor with `credential`: one of the pending person's own
 * passkeys, over a challenge issued to them (ceremony.ts checks both). The
 * strength of the finished sign-in, or null (logged) when refused.
 * @see https://www.rfc-editor.org/rfc/rfc8176#section-2
 */
export async function passkeyAfterPassword(
  as: AsContext,
  ctx: RequestContext,
  pending: PendingSession,
  posted: string | undefined,
): Promise<SignInStrength | null> {
  const result = await verifyAssertion(as, ctx, posted, { purpose: 'second-factor', person: pending.user })
  if (!result.ok) {
    ctx.log.info({ event: 'passkey_second_factor_failed', reason: result.reason, sub: pending.user.sub }, 'a passkey as the second factor was refused')
    return null
  }
  ctx.log.info({ event: 'passkey_second_factor', sub: pending.user.sub }, 'a person gave a passkey after their password')
  return passwordAndPasskey(result.passkey.deviceType)
}
