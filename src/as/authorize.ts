import { MethodNotAllowed, OAuthError } from '../errors.js'
import type { AsHandler } from './context.js'
import { parseAuthorizationRequest, type ParsedAuthorizationRequest } from './interaction/authorization-request.js'
import { continueAuthorization } from './interaction/authorization-steps.js'
import { answerAuthorizationError } from './interaction/authorization-error.js'
import { guardPage, guardRedirect } from './interaction/failures.js'
import { readFormText } from './interaction/form.js'
import { redirect, showError } from './interaction/respond.js'
import { currentSession } from './interaction/session.js'

/**
 * The authorization endpoint (RFC 6749 4.1.1; OIDC Core 3.1.2.1 also allows
 * POST with a form body). Validates the request (client_id and redirect_uri
 * first: their errors are an error page, never a redirect), then shows the
 * login or consent page, or answers 302 to the redirect URI with `code`,
 * `state` and `iss` (RFC 9207). Errors of a client that registered itself or
 * is a metadata document are shown on a page, not redirected, until the
 * person has signed in (RFC 9700 4.11.2, see answerAuthorizationError).
 * A pushed `request_uri` (RFC 9126 4) or a `request` object (RFC 9101 5.1)
 * is resolved here, once, into a request the server holds: its parameters
 * replace what was sent beside it (held-request.ts).
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.1
 * @see https://www.rfc-editor.org/rfc/rfc9700#section-2.1
 */
export const authorize: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'GET' && req.method !== 'POST') return showError(res, new MethodNotAllowed(['GET', 'POST']))
  let raw: string
  try {
    raw = req.method === 'GET' ? ctx.rawQuery : await readFormText(req)
  } catch (err) {
    if (err instanceof OAuthError) return showError(res, err)
    throw err
  }
  // Resolving a held request reads the store: an outage there is a 503 page, as for any page.
  let parsed: ParsedAuthorizationRequest | undefined
  await guardPage(as, ctx, res, async () => {
    parsed = await parseAuthorizationRequest(raw, as, { entry: true })
  })
  if (parsed === undefined) return
  if (parsed.kind === 'page') return showError(res, parsed.error)
  if (parsed.kind === 'redirect') {
    const { target, error, client } = parsed
    if (target.vouched) return redirect(res, target.error(error), 302)
    // A client nobody vouched for: the redirect waits until the person has signed in (RFC 9700 4.11.2).
    return guardPage(as, ctx, res, async () => {
      const signedIn = (await currentSession(req, as)) !== null
      answerAuthorizationError(res, target, error, { status: 302, signedIn, client })
    })
  }
  const { request } = parsed
  await guardRedirect(as, ctx, res, request.target, 302, async () => {
    const session = await currentSession(req, as)
    await continueAuthorization(req, res, as, request, { session, freshLogin: false, cookies: [], redirectStatus: 302 })
  })
}
