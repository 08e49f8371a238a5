import type { IncomingMessage, ServerResponse } from 'node:http'
import { auditSignIn } from '../audit.js'
import { epochSeconds } from '../../clock.js'
import type { RequestContext } from '../../context.js'
import { MethodNotAllowed } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import type { TotpRecord, UpstreamContinuation } from '../../store/types.js'
import type { AsContext, AsHandler } from '../context.js'
import type { SignInStrength } from '../sign-in-strength.js'
import { readRecoveryCode, readTotpCode, TOTP_PERIOD_SEC, totpStep } from '../totp/codes.js'
import { messagePage } from '../views/message.js'
import { readContinuation } from './continuation.js'
import { tokensMatch } from './csrf.js'
import { guardPage } from './failures.js'
import { readPageForm } from './form.js'
import { knownBrowserFor, rememberBrowser, type KnownBrowser } from './known-browser.js'
import { SecondFactorThrottle, waitInWords } from '../throttle.js'
import { showError, showForbidden, showPage } from './respond.js'
import { continueAfterSignIn } from './signed-in.js'
import { approvalNext } from './approval-next.js'
import { pendingSession, startSession, type PendingSession } from './session.js'
import {
  passkeyAfterPassword,
  PASSKEY_SECOND_FACTOR_FAILED,
  passkeySecondFactorOffered,
  showSecondFactorPage,
  type SecondFactorOffer,
} from './passkey-second-factor.js'

/**
 * /second-factor: after the password, a person with an authenticator app
 * gives a code from it (RFC 6238), or one of their recovery codes; a person
 * with a passkey may give that instead (passkey-second-factor.ts). The
 * browser holds a pending session (session.ts) that signs nobody in until
 * then. Guesses are counted per person across sign-ins, browsers and
 * addresses (as/throttle.ts SecondFactorThrottle): past the limit even the
 * right code waits, except in a browser that completed a sign-in as this
 * person before, which has its own count. Only this complete sign-in makes
 * the browser known (never the password alone). A code is
 * accepted once: its time step is recorded for the person (`store.singleUse.use`), so
 * the same code, seen over a shoulder or replayed, is refused in its window.
 */

export const CODE_FAILED = 'That code is not right. Enter the code your authenticator app shows now.'
export const CODE_REUSED = 'That code was used already. Wait for the next one.'
export const RECOVERY_FAILED = 'That recovery code is not right, or it was used already.'
/** The secret could not be opened (wrong `mfa.totp_encryption_key`, a record moved from another person): no code is checked. */
export const CODE_UNCHECKABLE = 'Codes from your authenticator app cannot be checked right now. Use a recovery code, or ask the people who run this service.'
/** The page text while codes are refused: how long, and that the person's usual browser is not affected. */
function codesLockedMessage(retryAfterSec: number): string {
  return (
    `Too many wrong codes have been entered for this account. Try again in ${waitInWords(retryAfterSec)}. ` +
    'A browser you have completed a sign-in with before is not affected.'
  )
}
const SIGN_IN_EXPIRED = 'Your sign-in took too long or was finished elsewhere. Sign in again.'

/** A code and the recovery-code form's answer earn the same: two factors. */
const PASSWORD_AND_CODE: SignInStrength = { amr: ['pwd', 'otp', 'mfa'], acr: 'mfa' }

/** How long a used step is remembered: the steps it could still be accepted in, and one more. */
const USED_STEP_TTL_SEC = TOTP_PERIOD_SEC * 4
/** A used recovery code is remembered for good (well past any store's life). */
const USED_RECOVERY_TTL_SEC = 10 * 365 * 86_400

function expired(res: ServerResponse): void {
  showPage(res, 400, messagePage({ title: 'Sign in again', message: SIGN_IN_EXPIRED, link: { href: 'account', text: 'Sign in' } }))
}

/** Whether a code of `secret` typed now is right and unused (it is then used up). */
async function useCode(as: AsContext, sub: string, secret: string, typed: string | undefined): Promise<'ok' | 'wrong' | 'reused'> {
  const code = readTotpCode(typed)
  if (code === null) return 'wrong'
  const step = totpStep(secret, code, as.clock.now())
  if (step === null) return 'wrong'
  return (await as.store.singleUse.use(`totp:${hashToken(sub)}:${step}`, USED_STEP_TTL_SEC)) ? 'ok' : 'reused'
}

/** Whether `typed` is one of the person's unused recovery codes; it is then used up (and the use kept on the record). */
async function useRecoveryCode(as: AsContext, sub: string, totp: TotpRecord, typed: string | undefined): Promise<boolean> {
  const code = readRecoveryCode(typed)
  if (code === null) return false
  for (const entry of totp.recovery) {
    if (entry.usedAt !== null || !(await as.secrets.verify(code, entry.hash))) continue
    // Single use across instances and concurrent tries: the first to record it wins.
    if (!(await as.store.singleUse.use(`recovery:${hashToken(entry.hash)}`, USED_RECOVERY_TTL_SEC))) return false
    const now = epochSeconds(as.clock)
    const latest = (await as.store.totp.get(sub)) ?? totp
    await as.store.totp.put(sub, { ...latest, recovery: latest.recovery.map((r) => (r.hash === entry.hash ? { ...r, usedAt: now } : r)) })
    return true
  }
  return false
}

/** Seal a plain or older-key secret with the current key, unless the record changed meanwhile (set up again, removed). */
async function reseal(as: AsContext, ctx: RequestContext, sub: string, read: TotpRecord, secret: string): Promise<void> {
  const latest = await as.store.totp.get(sub)
  if (latest === null || latest.secret !== read.secret) return
  await as.store.totp.put(sub, { ...latest, secret: as.totpSecrets.seal(sub, secret) })
  ctx.log.info({ event: 'totp_secret_resealed', sub }, 'an authenticator-app secret was sealed with the current key')
}

function fieldsOf(next: UpstreamContinuation): { request: string | undefined; userCode: string | undefined; next: string | undefined } {
  if (next.kind === 'authorize') return { request: next.request, userCode: undefined, next: undefined }
  if (next.kind === 'device') return { request: undefined, userCode: next.userCode, next: undefined }
  if (next.kind === 'approve') return { request: undefined, userCode: undefined, next: approvalNext(next.id) }
  return { request: undefined, userCode: undefined, next: 'account' }
}

async function postSecondFactor(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext): Promise<void> {
  const form = await readPageForm(req, res, as)
  if (form === null) return
  await guardPage(as, ctx, res, async () => {
    const pending = await pendingSession(req, as)
    if (pending === null) return expired(res)
    if (!tokensMatch(pending.record.csrf, form.get('csrf'))) return showForbidden(res)
    const totp = await as.store.totp.get(pending.user.sub)
    const offer = await offerOf(as, pending, totp)
    const again = (status: number, error: string, headers?: Record<string, string>): void =>
      showSecondFactorPage(res, as, offer, pending.record.csrf, { status, error, ...(headers ? { headers } : {}) })
    if (form.get('credential') !== undefined && offer.passkey) {
      const strength = await passkeyAfterPassword(as, ctx, pending, form.get('credential'))
      return strength === null ? again(400, PASSKEY_SECOND_FACTOR_FAILED) : finish(req, res, as, pending, strength)
    }
    if (totp === null || totp.confirmedAt === null) return offer.passkey ? again(400, PASSKEY_SECOND_FACTOR_FAILED) : expired(res)

    const known = knownForCodes(await knownBrowserFor(req, as, pending.user), totp.confirmedAt)
    const throttle = new SecondFactorThrottle(as, as.clientAddress.of(req), pending.user.sub, known?.hash ?? null)
    const wait = await throttle.attempt()
    if (wait > 0) {
      ctx.log.warn({ event: 'second_factor_rate_limited', knownBrowser: throttle.known, sub: pending.user.sub }, 'second factor refused: too many failures')
      auditSignIn(as, req, { ok: false, sub: pending.user.sub, reason: 'throttled' })
      return again(429, codesLockedMessage(wait), { 'retry-after': String(wait) })
    }
    const recovery = form.get('recovery_code')
    if (recovery !== undefined) {
      if (!(await useRecoveryCode(as, pending.user.sub, totp, recovery))) {
        await throttle.fail()
        ctx.log.info({ event: 'recovery_code_failed', sub: pending.user.sub }, 'a recovery code was refused')
        auditSignIn(as, req, { ok: false, sub: pending.user.sub, reason: 'recovery_code_refused' })
        return again(400, RECOVERY_FAILED)
      }
      ctx.log.warn({ event: 'recovery_code_used', sub: pending.user.sub }, 'a person signed in with a recovery code')
    } else {
      // Fails closed: a secret this server cannot open (logged by secretOf) checks no code; recovery codes still do.
      const opened = as.totpSecrets.secretOf(ctx.log, pending.user.sub, totp)
      if (opened === null) return again(503, CODE_UNCHECKABLE)
      const result = await useCode(as, pending.user.sub, opened.secret, form.get('code'))
      if (result !== 'ok') {
        await throttle.fail()
        ctx.log.info({ event: 'second_factor_failed', reason: result, sub: pending.user.sub }, 'an authenticator code was refused')
        auditSignIn(as, req, { ok: false, sub: pending.user.sub, reason: result === 'reused' ? 'code_reused' : 'code_refused' })
        return again(400, result === 'reused' ? CODE_REUSED : CODE_FAILED)
      }
      if (opened.stale) await reseal(as, ctx, pending.user.sub, totp, opened.secret)
    }
    await throttle.succeed()
    await finish(req, res, as, pending)
  })
}

/**
 * The known browser, when it may have its own count of codes: it completed a
 * sign-in since the app was turned on. One remembered before completed a
 * password-only sign-in, which anyone with the password could do from as
 * many cookie jars as they liked: each jar would have its own allowance of
 * guesses, past the per-person count.
 */
function knownForCodes(known: KnownBrowser | null, appOnSinceSec: number): KnownBrowser | null {
  return known !== null && Math.floor(known.rememberedAtMs / 1000) >= appOnSinceSec ? known : null
}

/** The second factors the person has here: an authenticator app that is on, a passkey (when they count). */
async function offerOf(as: AsContext, pending: PendingSession, totp: TotpRecord | null): Promise<SecondFactorOffer> {
  return { totp: totp !== null && totp.confirmedAt !== null, passkey: await passkeySecondFactorOffered(as, pending.user.sub) }
}

/** The second factor is given: the real session (new id, the pending one gone), then what the sign-in continues. */
async function finish(
  req: IncomingMessage,
  res: ServerResponse,
  as: AsContext,
  pending: PendingSession,
  strength: SignInStrength = PASSWORD_AND_CODE,
): Promise<void> {
  const next = await readContinuation(res, as, fieldsOf(pending.next))
  if (next === null) return
  const { session, setCookie } = await startSession(as, pending.user, pending.id, strength)
  auditSignIn(as, req, { ok: true, sub: pending.user.sub, method: strength.amr.join('+') || 'second_factor' })
  // Every factor is given: only now is this browser known for the person (it then has its own count of guesses).
  const rememberCookie = await rememberBrowser(req, as, pending.user, await knownBrowserFor(req, as, pending.user))
  await continueAfterSignIn(req, res, as, next, session, [setCookie, rememberCookie])
}

/** GET shows the page for a pending sign-in; POST checks the code. */
export const secondFactor: AsHandler = async (req, res, ctx, as) => {
  if (req.method === 'POST') return postSecondFactor(req, res, ctx, as)
  if (req.method !== 'GET') return showError(res, new MethodNotAllowed(['GET', 'POST']))
  await guardPage(as, ctx, res, async () => {
    const pending = await pendingSession(req, as)
    if (pending === null) return expired(res)
    const offer = await offerOf(as, pending, await as.store.totp.get(pending.user.sub))
    if (!offer.totp && !offer.passkey) return expired(res)
    showSecondFactorPage(res, as, offer, pending.record.csrf, { status: 200 })
  })
}
