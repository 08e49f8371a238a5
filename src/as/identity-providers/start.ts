import * as oidc from 'openid-client'
import { epochSeconds } from '../../clock.js'
import { InvalidRequest, MethodNotAllowed } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import type { UpstreamContinuation } from '../../store/types.js'
import type { AsHandler } from '../context.js'
import { continuationFields, readContinuation, type Continuation } from '../interaction/continuation.js'
import { checkPreSessionCsrf } from '../interaction/csrf.js'
import { guardPage } from '../interaction/failures.js'
import { readPageForm } from '../interaction/form.js'
import { redirect, showError, showForbidden } from '../interaction/respond.js'
import { randomToken } from '../../crypto/random.js'
import { showProviderUnavailable } from './pages.js'
import { ProviderUnavailableError } from './providers.js'
import { UPSTREAM_LOGIN_TTL_SEC, stateCookie } from './state-cookie.js'
import { callbackUrl, retryLink } from './urls.js'

function stored(c: Continuation): UpstreamContinuation {
  if (c.kind === 'authorize') return { kind: 'authorize', request: c.request.raw }
  return c
}

/**
 * POST /upstream-login (beside /login, so its pages share their relative links): a "Continue with <provider>" button. Origin and the
 * pre-session CSRF token first (403, nothing changes), then what the sign-in
 * continues is validated again, then the provider's metadata (an error page
 * when it cannot be discovered). Keeps the pending sign-in (state hash →
 * nonce, PKCE verifier, continuation) in the store for ten minutes, binds the
 * state to the browser with a cookie, and sends the browser to the provider's
 * authorization endpoint: code flow, S256 PKCE, state and nonce (OIDC Core 3.1.2.1).
 */
export const upstreamStart: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['POST']))
  const form = await readPageForm(req, res, as)
  if (form === null) return
  if (!checkPreSessionCsrf(req, as, form.get('csrf'))) return showForbidden(res)
  const provider = as.upstream.get(form.get('provider') ?? '')
  if (provider === undefined) return showError(res, new InvalidRequest('This way of signing in is not offered here'))
  const continuation = await readContinuation(res, as, continuationFields(form))
  if (continuation === null) return

  await guardPage(as, ctx, res, async () => {
    let configuration: oidc.Configuration
    try {
      configuration = await provider.configuration()
    } catch (err) {
      if (!(err instanceof ProviderUnavailableError)) throw err
      ctx.log.warn({ event: 'upstream_login_failed', provider: provider.config.id, reason: 'discovery failed' }, 'identity provider unavailable')
      return showProviderUnavailable(res, provider.config.name, retryLink(as, stored(continuation)), [], false)
    }
    const state = randomToken()
    const nonce = randomToken()
    const codeVerifier = oidc.randomPKCECodeVerifier()
    await as.store.upstream.putLogin(
      hashToken(state),
      { provider: provider.config.id, nonce, codeVerifier, continuation: stored(continuation), expiresAt: epochSeconds(as.clock) + UPSTREAM_LOGIN_TTL_SEC },
      UPSTREAM_LOGIN_TTL_SEC,
    )
    const params: Record<string, string> = {
      redirect_uri: callbackUrl(as, provider.config.id),
      response_type: 'code',
      scope: provider.config.scopes.join(' '),
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    }
    // The client asked for a fresh login: ask the provider for one too, rather than reuse its session.
    if (continuation.kind === 'authorize' && (continuation.request.prompt.has('login') || continuation.request.maxAge !== null)) params.prompt = 'login'
    ctx.log.info({ event: 'upstream_login_started', provider: provider.config.id }, 'sign-in sent to identity provider')
    redirect(res, oidc.buildAuthorizationUrl(configuration, params).href, 303, [stateCookie(as, state)])
  })
}
