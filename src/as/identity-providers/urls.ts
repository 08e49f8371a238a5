import type { UpstreamContinuation } from '../../store/types.js'
import { approvalPagePath } from '../interaction/approval-next.js'
import type { AsContext } from '../context.js'
import { afterLogin } from '../interaction/authorization-request.js'
import { formatUserCode } from '../../tokens/user-code.js'
import { ACCOUNT_NEXT } from '../interaction/account.js'

/** Path of a provider's callback, relative to the issuer: register `<public_url>/login/upstream/<id>/callback` at the provider. */
import { callbackPath } from '../../config/own-paths.js'

export { callbackPath }

export function callbackUrl(as: AsContext, providerId: string): string {
  return as.issuer + callbackPath(providerId)
}

/**
 * Where a sign-in continues once the person is signed in (absolute: the
 * callback lives below the other pages). An authorization request goes back
 * through /authorize without prompt=login and max_age, which the sign-in has
 * just satisfied, so consent or the code follow and nothing asks for a login again.
 */
export function continueUrl(as: AsContext, c: UpstreamContinuation): string {
  if (c.kind === 'authorize') return `${as.issuer}/authorize?${afterLogin(c.request)}`
  if (c.kind === 'device') return `${as.issuer}/device?user_code=${encodeURIComponent(formatUserCode(c.userCode))}`
  if (c.kind === 'approve') return `${as.issuer}/${approvalPagePath(c.id)}`
  return `${as.issuer}/${ACCOUNT_NEXT}`
}

/** "Back to sign-in": the login page of the same request (a link the person follows; never automatic). */
export function retryLink(as: AsContext, c: UpstreamContinuation): { href: string; text: string } {
  if (c.kind === 'authorize') return { href: `${as.issuer}/authorize?${c.request}`, text: 'Back to sign-in' }
  if (c.kind === 'device') return { href: `${as.issuer}/device?user_code=${encodeURIComponent(formatUserCode(c.userCode))}`, text: 'Back to sign-in' }
  if (c.kind === 'approve') return { href: `${as.issuer}/${approvalPagePath(c.id)}`, text: 'Back to sign-in' }
  return { href: `${as.issuer}/${ACCOUNT_NEXT}`, text: 'Back to sign-in' }
}
