import { MethodNotAllowed, OAuthError } from '../../errors.js'
import type { AsHandler } from '../context.js'
import { messagePage } from '../views/message.js'
import { isSameOrigin, tokensMatch } from './csrf.js'
import { guardPage } from './failures.js'
import { readFormParams } from './form.js'
import { showError, showForbidden, showPage } from './respond.js'
import { currentSession, endSession, sessionIdOf } from './session.js'

/**
 * POST /logout with the session's CSRF token: ends the login session here
 * (tokens already issued to clients are not affected; revoke them at /revoke).
 */
export const logout: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['POST']))
  if (!isSameOrigin(req, as)) return showForbidden(res)
  let csrf: string | undefined
  try {
    csrf = (await readFormParams(req)).get('csrf')
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  await guardPage(ctx, res, async () => {
    const session = await currentSession(req, as)
    if (session !== null && !tokensMatch(session.record.csrf, csrf)) return showForbidden(res)
    const clear = await endSession(as, session === null ? sessionIdOf(req, as) : session.id)
    showPage(res, 200, messagePage({ title: 'Signed out', message: 'You have signed out. You can close this page.' }), { cookies: [clear] })
  })
}
