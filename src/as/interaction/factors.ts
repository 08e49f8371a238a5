import { epochSeconds } from '../../clock.js'
import type { SessionRecord } from '../../store/types.js'
import type { AsContext } from '../context.js'
import type { ActiveSession } from './session.js'

/**
 * The ways a local person can prove who they are here, and the rule for
 * changing them (docs/people.md, "Changing how you sign in"): a session may
 * add, replace or remove a factor only after proving the strongest factor
 * the person already has, within `session.factor_change_max_age`. Otherwise
 * the password alone (all a phisher or a leaked password database gives)
 * could add the stranger's own authenticator app or passkey, and the
 * stranger would then sign in with two factors.
 */

/** Where a refused factor change sends the browser: the account page, which says what to sign in again with. */
export const CONFIRM_NEEDED = 'account?confirm=needed#confirm'

/** A person's strongest factor: a passkey, an authenticator app, or only their password. */
export type Factor = 'passkey' | 'totp' | 'password'

/** The strongest factor `sub` has here: a passkey (when passkeys are on), an authenticator app that is on, or the password alone. */
async function strongestFactor(as: AsContext, sub: string): Promise<Factor> {
  if (as.as.webauthn.enabled && (await as.store.passkeys.list(sub)).length > 0) return 'passkey'
  return ((await as.store.totp.get(sub))?.confirmedAt ?? null) !== null ? 'totp' : 'password'
}

/** Whether the session's sign-in used `factor` (RFC 8176 methods: `hwk`/`swk` a passkey, `otp` a code or recovery code). */
function sessionUsed(record: SessionRecord, factor: Factor): boolean {
  const amr = record.amr ?? []
  const passkey = amr.includes('hwk') || amr.includes('swk')
  if (factor === 'passkey') return passkey
  if (factor === 'totp') return amr.includes('otp') || passkey
  return amr.length > 0
}

/**
 * Whether a sign-in with `amr` gave every factor it had to: two factors (a
 * passkey, or the password and a code), or the password of a person who has
 * no other factor. Only such a sign-in makes the browser known (the
 * known-browser cookie: its own count of guesses, at /login and at
 * /second-factor).
 */
export async function completeSignIn(as: AsContext, sub: string, amr: readonly string[]): Promise<boolean> {
  return amr.includes('mfa') || (await strongestFactor(as, sub)) === 'password'
}

/** What a factor change may do now: go on, or the factor the person must prove first (by signing in again with it). */
export type FactorChange = { ok: true; strongest: Factor } | { ok: false; need: Factor }

/**
 * Whether the signed-in local person may add, replace or remove a factor
 * now: their session's sign-in used their strongest factor (the password
 * when they have no other: the first factor, `mfa.required` enrolment) at
 * most `session.factor_change_max_age` ago.
 */
export async function factorChange(as: AsContext, session: ActiveSession): Promise<FactorChange> {
  const strongest = await strongestFactor(as, session.user.sub)
  const recent = epochSeconds(as.clock) - session.record.authTime <= as.as.session.factorChangeMaxAgeSec
  return recent && sessionUsed(session.record, strongest) ? { ok: true, strongest } : { ok: false, need: strongest }
}
