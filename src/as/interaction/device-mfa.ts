import type { ServerResponse } from 'node:http'
import type { ClientConfig } from '../../config/validated-config.js'
import { formatUserCode } from '../../tokens/user-code.js'
import type { AsContext } from '../context.js'
import { messagePage } from '../views/message.js'
import { hasTwoFactors, mfaRequiredFor, secondFactorsOf, STRONGER_SIGN_IN, STRONGER_SIGN_IN_TOTP } from './authorization-steps.js'
import { redirect, showPage } from './respond.js'
import { enrolmentPath } from './enrolment.js'
import type { ActiveSession } from './session.js'

/**
 * A device approval (RFC 8628 3.3) meets the sign-in policy a code flow
 * meets (authorization-steps.ts): when `mfa.required` or the device client's
 * `require_mfa` asks for two factors and the session has one, nothing is
 * approved. A person with a second factor signs in again with it; one
 * without sets one up on the account page, which leads back to the device
 * page; an identity provider's one-factor sign-in cannot be raised here. The
 * approval records the session's `auth_time`, `amr` and `acr`, which the
 * device's tokens carry.
 */

export const DEVICE_PROVIDER_ONE_FACTOR =
  'This device needs a sign-in with two factors, and the provider you signed in with did not report one. Sign in another way, or ask the people who run this service.'

const DEVICE_NO_SET_UP = 'This device needs a sign-in with two factors, and no second factor can be set up here. Ask the people who run this service.'

export interface DeviceSignIn {
  client: ClientConfig
  session: ActiveSession
  userCode: string
  /** The device's login page with `error` (device-page.ts). */
  showLogin: (error: string) => void
  /** 302 after a GET, 303 after a POST. */
  redirectStatus: 302 | 303
}

/** Answers the browser and returns true when the session falls short of the client's policy; false when it may approve. */
export async function deviceSignInFallsShort(res: ServerResponse, as: AsContext, o: DeviceSignIn): Promise<boolean> {
  if (!mfaRequiredFor(as, o.client) || hasTwoFactors(o.session)) return false
  if (o.session.record.provider !== undefined) {
    showPage(
      res,
      403,
      messagePage({ title: 'A stronger sign-in is needed', message: DEVICE_PROVIDER_ONE_FACTOR, link: { href: 'device', text: 'Enter another code' } }),
    )
    return true
  }
  const factors = await secondFactorsOf(as, o.session)
  if (factors.totp || factors.passkey) {
    o.showLogin(factors.totp ? STRONGER_SIGN_IN_TOTP : STRONGER_SIGN_IN)
    return true
  }
  // No second factor yet: set one up, then back to this device's confirmation (the account page carries the code).
  const path = enrolmentPath(as, 'mfa', { userCode: formatUserCode(o.userCode) })
  if (path === null) {
    showPage(res, 403, messagePage({ title: 'A stronger sign-in is needed', message: DEVICE_NO_SET_UP, link: { href: 'device', text: 'Enter another code' } }))
    return true
  }
  redirect(res, path, o.redirectStatus)
  return true
}
