import type { IncomingMessage, ServerResponse } from 'node:http'
import { auditFactor } from '../audit.js'
import { epochSeconds } from '../../clock.js'
import type { RequestContext } from '../../context.js'
import { hashSecret } from '../../crypto/secret.js'
import { InvalidRequest, MethodNotAllowed, OAuthError } from '../../errors.js'
import type { FormParams } from '../../http/body.js'
import { hashToken } from '../../store/hash.js'
import type { AsContext, AsHandler } from '../context.js'
import { newRecoveryCodes, newTotpSecret, readTotpCode, TOTP_PERIOD_SEC, totpStep } from '../totp/codes.js'
import { recoveryCodesPage } from '../views/totp.js'
import { isSameOrigin, tokensMatch } from './csrf.js'
import { guardPage } from './failures.js'
import { readFormParams } from './form.js'
import { redirect, showError, showForbidden, showPage } from './respond.js'
import { currentSession } from './session.js'
import { CONFIRM_NEEDED, factorChange } from './factors.js'

/**
 * POST /totp, from the account page (same origin, the session's CSRF token),
 * for a signed-in local person:
 * - `action=start`: a new secret, kept unconfirmed (it signs nobody in), and
 *   the account page shows its QR code and key;
 * - `action=confirm` with `code`: a right code from the app turns it on and
 *   answers the ten recovery codes, shown this once (only their hashes are kept);
 * - `action=remove`: turns it off (or cancels the set-up), recovery codes included.
 * Each needs a recent sign-in with the person's strongest factor (factors.ts;
 * otherwise 303 to the account page, which asks for it), and setting one up
 * needs `mfa.methods` to offer it. Turning it on never changes the current
 * session's acr/amr: the next sign-in with a code is `mfa`.
 */
export const totp: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['POST']))
  if (!isSameOrigin(req, as)) return showForbidden(res)
  let form: FormParams
  try {
    form = await readFormParams(req)
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  await guardPage(as, ctx, res, () => act(req, res, ctx, as, form))
}

async function act(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext, form: FormParams): Promise<void> {
  const session = await currentSession(req, as)
  if (session === null || session.record.provider !== undefined || !tokensMatch(session.record.csrf, form.get('csrf'))) return showForbidden(res)
  const sub = session.user.sub
  const action = form.get('action')
  if ((action === 'start' || action === 'confirm') && !(as.as.mfa?.methods ?? ['totp']).includes('totp')) {
    return showError(res, new InvalidRequest('An authenticator app is not offered here'))
  }
  // Adding, replacing or removing a factor needs a recent sign-in with the strongest one the person has (factors.ts).
  const change = await factorChange(as, session)
  if (!change.ok) {
    ctx.log.info(
      { event: 'factor_change_refused', factor: 'totp', action, need: change.need, sub },
      'a factor change needs a recent sign-in with the strongest factor',
    )
    return redirect(res, CONFIRM_NEEDED, 303)
  }
  // An authorization that asked for a second factor, carried through the set-up (mfa policy); or a device approval's code.
  const carried = form.get('request')
  const carriedCode = carried === undefined ? form.get('user_code') : undefined
  const setup =
    carried !== undefined ? `request=${encodeURIComponent(carried)}` : carriedCode !== undefined ? `user_code=${encodeURIComponent(carriedCode)}` : undefined
  const back = (extra: string): string => (setup === undefined ? `account?${extra}#totp` : `account?mfa=setup&${setup}${extra === '' ? '' : `&${extra}`}#totp`)
  const now = epochSeconds(as.clock)
  if (action === 'start') {
    const existing = await as.store.totp.get(sub)
    // One that is on stays on: turning it off is its own step.
    if (existing === null || existing.confirmedAt === null)
      await as.store.totp.put(sub, {
        secret: as.totpSecrets.seal(sub, newTotpSecret()),
        createdAt: now,
        confirmedAt: null,
        recovery: [],
        startedBy: hashToken(session.id),
      })
    return redirect(res, back(''), 303)
  }
  if (action === 'confirm') {
    const pending = await as.store.totp.get(sub)
    if (pending === null || pending.confirmedAt !== null) return redirect(res, 'account', 303)
    // Only the session that started this set-up (and was shown its secret) may turn it on; another starts its own.
    if (pending.startedBy !== hashToken(session.id)) return redirect(res, back(''), 303)
    const code = readTotpCode(form.get('code'))
    // An unreadable secret (logged) confirms nothing: the person starts the set-up again.
    const opened = as.totpSecrets.secretOf(ctx.log, sub, pending)
    const step = code === null || opened === null ? null : totpStep(opened.secret, code, as.clock.now())
    // The first code is used up like any other: it cannot sign anyone in afterwards.
    if (opened === null || step === null || !(await as.store.singleUse.use(`totp:${hashToken(sub)}:${step}`, TOTP_PERIOD_SEC * 4))) {
      return redirect(res, back('totp=wrong'), 303)
    }
    const codes = newRecoveryCodes()
    const recovery = await Promise.all(codes.map(async (c) => ({ hash: await hashSecret(c), usedAt: null })))
    const { startedBy: _, ...setUp } = pending
    await as.store.totp.put(sub, { ...setUp, secret: as.totpSecrets.seal(sub, opened.secret), confirmedAt: now, recovery })
    // The session keeps the acr/amr of its sign-in: a factor counts from the next sign-in that uses it, never from its
    // set-up (else a password-only session would make itself `mfa` with an app of the stranger's choosing).
    ctx.log.info({ event: 'factor_added', factor: 'totp', sub }, 'a person turned on an authenticator app')
    await as.credentialChanges.emit({ sub, credentialType: 'app', changeType: 'create' })
    auditFactor(as, req, 'factor.added', sub, 'totp')
    // Back to the authorization that asked for a second factor (/authorize validates it again).
    const next =
      carried !== undefined
        ? { href: `authorize?${new URLSearchParams(carried).toString()}`, text: 'Continue to the application' }
        : carriedCode !== undefined
          ? { href: `device?user_code=${encodeURIComponent(carriedCode)}`, text: 'Continue to connect your device' }
          : undefined
    return showPage(res, 200, recoveryCodesPage(codes, next))
  }
  if (action === 'remove') {
    await as.store.totp.delete(sub)
    ctx.log.info({ event: 'factor_removed', factor: 'totp', sub }, 'a person turned off their authenticator app')
    await as.credentialChanges.emit({ sub, credentialType: 'app', changeType: 'delete' })
    auditFactor(as, req, 'factor.removed', sub, 'totp')
    return redirect(res, 'account?totp=off', 303)
  }
  showError(res, new InvalidRequest('Choose to set up, turn on or turn off the authenticator app'))
}
