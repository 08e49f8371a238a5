import type { IncomingMessage, ServerResponse } from 'node:http'
import { auditSignIn } from '../audit.js'
import * as oidc from 'openid-client'
import { epochSeconds } from '../../clock.js'
import type { RequestContext } from '../../context.js'
import { AccessDenied, MethodNotAllowed } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import type { UpstreamLoginRecord } from '../../store/types.js'
import type { AsContext, AsHandler } from '../context.js'
import { parseAuthorizationRequest } from '../interaction/authorization-request.js'
import { tokensMatch } from '../interaction/csrf.js'
import { guardPage } from '../interaction/failures.js'
import { redirect, showError } from '../interaction/respond.js'
import { sessionIdOf, startSession } from '../interaction/session.js'
import { upstreamSignIn } from '../sign-in-strength.js'
import { classifyProviderError } from './errors.js'
import {
  CALLBACK_ASSET_PREFIX,
  showNotAllowed,
  showProviderAnswerRejected,
  showProviderRefused,
  showProviderUnavailable,
  showSignInExpired,
  type FailureLink,
} from './pages.js'
import { checkAllowed, mapClaims, neededUpstreamClaims, upstreamSubject } from './person.js'
import { ProviderUnavailableError, type UpstreamProvider } from './providers.js'
import { clearStateCookie, stateOfCookie } from './state-cookie.js'
import { callbackUrl, continueUrl, retryLink } from './urls.js'

/**
 * GET /login/upstream/<id>/callback: the provider sends the person back
 * here (OIDC Core 3.1.2.5). The `state` must be the one this browser's
 * cookie holds and name a pending sign-in for this provider (taken once from
 * the store); openid-client then checks the response (RFC 9207 `iss`, state,
 * error), exchanges the code with the PKCE verifier and validates the
 * id_token against the provider's JWKS (signature, iss, aud, exp, nonce).
 * Claims the id_token lacks come from UserInfo (OIDC Core 5.4), whose `sub`
 * must match. Then `allowed`, then a new session and on to where the sign-in
 * was going. Every failure is a page with a link, the state cookie cleared,
 * and nothing issued.
 */
export function upstreamCallback(providerId: string): AsHandler {
  return async (req, res, ctx, as) => {
    // Pages here are three levels below the others: their stylesheet link says so.
    if (req.method !== 'GET' && req.method !== 'HEAD') return showError(res, new MethodNotAllowed(['GET']), [], CALLBACK_ASSET_PREFIX)
    await guardPage(as, ctx, res, () => handleCallback(req, res, ctx, as, providerId), CALLBACK_ASSET_PREFIX)
  }
}

/** The callback URL as the provider was told it, with the query the browser brought. */
function currentUrl(req: IncomingMessage, as: AsContext, providerId: string): URL {
  const url = new URL(callbackUrl(as, providerId))
  const q = (req.url ?? '').indexOf('?')
  url.search = q === -1 ? '' : (req.url ?? '').slice(q)
  return url
}

async function handleCallback(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext, providerId: string): Promise<void> {
  const clear = clearStateCookie(as)
  const url = currentUrl(req, as, providerId)
  const state = url.searchParams.get('state')
  const bound = stateOfCookie(req, as)
  const fail = (reason: string): void => {
    ctx.log.warn({ event: 'upstream_login_failed', provider: providerId, reason }, 'upstream sign-in refused')
  }
  // Only the browser that started the sign-in may finish it; only then is the pending record used up.
  if (state === null || bound === null || !tokensMatch(bound, state)) {
    fail(state === null ? 'no state' : 'state not bound to this browser')
    return showSignInExpired(res, [clear])
  }
  const pending = await as.store.upstream.takeLogin(hashToken(state))
  if (pending === null || pending.provider !== providerId || pending.expiresAt <= epochSeconds(as.clock)) {
    fail('unknown, used or expired state')
    return showSignInExpired(res, [clear])
  }
  const provider = as.upstream.get(providerId)
  const link = retryLink(as, pending.continuation)
  if (provider === undefined) return showSignInExpired(res, [clear])

  const outcome = await signInAtProvider(provider, url, state, pending)
  if (outcome.kind !== 'ok') {
    fail(outcome.reason)
    const name = provider.config.name
    if (outcome.kind === 'unavailable') return showProviderUnavailable(res, name, link, [clear])
    if (outcome.kind === 'refused') return showProviderRefused(res, name, outcome.error, link, [clear])
    return showProviderAnswerRejected(res, name, link, [clear])
  }

  const { upstreamSub, upstream } = outcome
  const sub = upstreamSubject(providerId, upstreamSub)
  if (sub === null) {
    fail('upstream sub is not printable ASCII of at most 255 characters')
    return showProviderAnswerRejected(res, provider.config.name, link, [clear])
  }
  const verdict = checkAllowed(provider.config.allowed, upstream)
  if (!verdict.allowed) {
    ctx.log.info({ event: 'upstream_login_not_allowed', provider: providerId, reason: verdict.reason }, 'person not allowed by identity provider rules')
    const who = typeof upstream.email === 'string' ? upstream.email : null
    return showNotAllowed(res, provider.config.name, who, await accessDeniedLink(as, pending), [clear])
  }

  // RISC account-disabled / -purged (src/signals): refused until the transmitter sends account-enabled.
  if (as.config.signals !== null && (await as.store.signals.isDisabled(sub))) {
    ctx.log.info(
      { event: 'upstream_login_not_allowed', provider: providerId, reason: 'account disabled by a shared signal' },
      'person disabled by a shared signal',
    )
    const who = typeof upstream.email === 'string' ? upstream.email : null
    return showNotAllowed(res, provider.config.name, who, await accessDeniedLink(as, pending), [clear])
  }

  const claims = mapClaims(provider.config, upstream)
  const now = epochSeconds(as.clock)
  // The claims must outlive every session and refresh family that names this person.
  const keepSec = as.as.session.ttlSec + as.as.refreshToken.ttlSec
  await as.store.upstream.putPerson(sub, { provider: providerId, upstreamSub, claims, updatedAt: now }, keepSec)
  // The provider's amr/acr, when its id_token has them (the id_token's own claims, never UserInfo's); its acr through `acr_values`.
  const strength = upstreamSignIn(outcome.idToken, provider.config.acrValues)
  // The provider's session id (Back-Channel Logout 1.0 2.4), so its logout token can end this session.
  const providerSid = providerSessionId(outcome.idToken)
  const { setCookie } = await startSession(as, { username: sub, sub, claims }, sessionIdOf(req, as), strength, providerId, providerSid)
  ctx.log.info({ event: 'upstream_login', provider: providerId }, 'signed in through identity provider')
  auditSignIn(as, req, { ok: true, sub, method: `provider:${providerId}` })
  redirect(res, continueUrl(as, pending.continuation), 303, [setCookie, clear])
}

/** A `sid` of printable ASCII (at most 255 characters, like a `sub`): it becomes a store key. */
const PROVIDER_SID = /^[\x21-\x7e]{1,255}$/

/** The provider's id_token `sid`, when it has one of a sane shape; undefined otherwise. */
export function providerSessionId(idToken: Readonly<Record<string, unknown>>): string | undefined {
  const sid = idToken.sid
  return typeof sid === 'string' && PROVIDER_SID.test(sid) ? sid : undefined
}

type Outcome =
  | { kind: 'ok'; upstreamSub: string; upstream: Record<string, unknown>; idToken: Readonly<Record<string, unknown>> }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'refused'; error: string; reason: string }
  | { kind: 'rejected'; reason: string }

/** The provider's part: code exchange, id_token validation, UserInfo for missing claims. */
async function signInAtProvider(provider: UpstreamProvider, url: URL, state: string, pending: UpstreamLoginRecord): Promise<Outcome> {
  let configuration: oidc.Configuration
  try {
    configuration = await provider.configuration()
  } catch (err) {
    if (err instanceof ProviderUnavailableError) return { kind: 'unavailable', reason: 'discovery failed' }
    throw err
  }
  try {
    const tokens = await oidc.authorizationCodeGrant(configuration, url, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    })
    const idClaims = tokens.claims()
    if (idClaims === undefined) return { kind: 'rejected', reason: 'no id_token' }
    const upstream: Record<string, unknown> = { ...idClaims }
    const missing = neededUpstreamClaims(provider.config).filter((name) => upstream[name] === undefined)
    if (missing.length > 0 && configuration.serverMetadata().userinfo_endpoint !== undefined) {
      // OIDC Core 5.3.2: the UserInfo `sub` must be the id_token's (checked by openid-client).
      const info = await oidc.fetchUserInfo(configuration, tokens.access_token, idClaims.sub)
      for (const name of missing) if (info[name] !== undefined) upstream[name] = info[name]
    }
    return { kind: 'ok', upstreamSub: idClaims.sub, upstream, idToken: { ...idClaims } }
  } catch (err) {
    return classifyProviderError(err)
  }
}

/** For an authorization request: the link that returns `access_denied` to the client (RFC 6749 4.1.2.1). */
async function accessDeniedLink(as: AsContext, pending: UpstreamLoginRecord): Promise<FailureLink | undefined> {
  if (pending.continuation.kind !== 'authorize') return undefined
  const parsed = await parseAuthorizationRequest(pending.continuation.request, as)
  if (parsed.kind === 'page') return undefined
  const target = parsed.kind === 'redirect' ? parsed.target : parsed.request.target
  const name = parsed.kind === 'ok' ? parsed.request.client.name : 'the application'
  return { href: target.error(new AccessDenied('The person is not allowed to sign in with this identity provider')), text: `Return to ${name}` }
}
