/**
 * Signing in to the admin pages: they are a first-party client of
 * bearward's own authorization server, not a sharer of its sign-in cookie
 * (they live on admin_listen, another port or host). The client is one of
 * `admin_api.clients` with the authorization_code grant and the redirect
 * URI `{pages}/callback` (so the Host a request names is one an operator
 * registered). The browser goes to /authorize with S256 PKCE, `state`,
 * `scope=bearward:admin`, `resource={public_url}/admin/v1`, `acr_values=mfa`
 * and `max_age`; the code comes back to /admin/callback and is redeemed
 * in-process through the token endpoint's own authorization_code grant
 * (the same checks: client, redirect_uri, PKCE, replay). The admin scope
 * policy (scope-policy.ts) refuses a person not in `admin_api.people`.
 * What the flow must remember (state, verifier) is sealed in the
 * `bw_admin_flow` cookie (SameSite=Lax: it must survive the top-level
 * redirect back from /authorize), good for {@link FLOW_TTL_SEC}.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { epochSeconds } from '../../clock.js'
import { ADMIN_SCOPE } from '../../config/sections/admin-api.js'
import type { ClientConfig } from '../../config/validated-config.js'
import type { RequestContext } from '../../context.js'
import { safeEqual } from '../../crypto/secret.js'
import { OAuthError } from '../../errors.js'
import { FormParams } from '../../http/body.js'
import { serializeCookie } from '../../http/cookies.js'
import { authorizationCodeGrant } from '../../as/grants/authorization-code.js'
import { redirect, showPage } from '../../as/interaction/respond.js'
import { verifyOwnAccessToken } from '../../as/verify-token.js'
import { adminAudience } from '../audience.js'
import type { AdminContext } from '../context.js'
import { cookieOf, PAGES_MAX_AGE_SEC, seal, sessionCookie, unseal } from './session.js'
import { messageOnly } from './views.js'

/** How long a started sign-in may take. */
export const FLOW_TTL_SEC = 600

/** Where one request to the pages came in: the pages' URL (no trailing slash) and whether over https. */
export interface PagesPlace {
  /** `http://host:port/admin` on admin_listen, `{public origin}{public_path}` on the main listener. */
  base: string
  secure: boolean
  /** The request's path under the pages, starting `/` (`/`, `/people`, `/callback`). */
  path: string
  query: URLSearchParams
}

interface Flow {
  state: string
  verifier: string
  /** Epoch seconds after which the flow is refused. */
  until: number
}

/** The client the pages sign in through at `base`, or undefined when none is registered for it. */
export function pagesClient(admin: AdminContext, base: string): ClientConfig | undefined {
  const redirectUri = `${base}/callback`
  for (const id of admin.config.clients) {
    const client = admin.as.clients.get(id)
    if (client === undefined) continue
    if (client.grantTypes.includes('authorization_code') && client.redirectUris.includes(redirectUri)) return client
  }
  return undefined
}

function noClient(res: ServerResponse, base: string): void {
  showPage(
    res,
    503,
    messageOnly(
      'The admin pages are not set up here',
      `No client in admin_api.clients has the authorization_code grant and the redirect URI ${base}/callback. See docs/admin.md, “Pages”.`,
    ),
  )
}

/** Send the browser to /authorize for an admin sign-in with a fresh second factor. */
export function startSignIn(res: ServerResponse, admin: AdminContext, place: PagesPlace): void {
  const client = pagesClient(admin, place.base)
  if (client === undefined) return noClient(res, place.base)
  const verifier = randomBytes(32).toString('base64url')
  const state = randomBytes(16).toString('base64url')
  const flow: Flow = { state, verifier, until: epochSeconds(admin.as.clock) + FLOW_TTL_SEC }
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: `${place.base}/callback`,
    scope: ADMIN_SCOPE,
    resource: adminAudience(admin.as.issuer),
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    acr_values: 'mfa',
    max_age: String(PAGES_MAX_AGE_SEC),
  })
  const cookie = serializeCookie('bw_admin_flow', seal(admin.as, 'bw_admin_flow', JSON.stringify(flow)), {
    secure: place.secure,
    maxAgeSec: FLOW_TTL_SEC,
  })
  redirect(res, `${admin.as.issuer}/authorize?${params}`, 303, [cookie])
}

function readFlow(req: IncomingMessage, admin: AdminContext, secure: boolean): Flow | null {
  const plain = unseal(admin.as, 'bw_admin_flow', cookieOf(req, 'bw_admin_flow', secure))
  if (plain === null) return null
  const flow = JSON.parse(plain) as Flow
  return epochSeconds(admin.as.clock) <= flow.until ? flow : null
}

/** What the callback came to. */
export type SignInOutcome = { kind: 'signed_in'; sub: string } | { kind: 'refused'; sub: string | null; reason: string } | { kind: 'invalid'; reason: string }

/**
 * GET /admin/callback: check `state` against the flow cookie, redeem the code
 * in-process, and start the pages session. Answers the browser; returns what
 * happened, for the audit trail.
 */
export async function finishSignIn(req: IncomingMessage, res: ServerResponse, admin: AdminContext, place: PagesPlace): Promise<SignInOutcome> {
  const clearFlow = serializeCookie('bw_admin_flow', '', { secure: place.secure, maxAgeSec: 0 })
  const flow = readFlow(req, admin, place.secure)
  const state = place.query.get('state')
  const again = { href: 'sign-in', text: 'Sign in again' }
  if (flow === null || state === null || !safeEqual(flow.state, state)) {
    showPage(res, 400, messageOnly('This sign-in has expired', 'Start again from the admin pages.', again), { cookies: [clearFlow] })
    return { kind: 'invalid', reason: 'state_mismatch' }
  }
  const error = place.query.get('error')
  const code = place.query.get('code')
  const client = pagesClient(admin, place.base)
  // The admin scope may be refused at /authorize already (the code is never issued) or at the redemption below.
  if (error === 'invalid_scope') return notAdmin(res, clearFlow)
  if (error !== null || code === null || client === undefined) {
    showPage(res, 400, messageOnly('You were not signed in', 'The sign-in did not complete.', again), { cookies: [clearFlow] })
    return { kind: 'invalid', reason: error === null ? 'no_code' : 'authorization_error' }
  }
  let token: string
  try {
    const form = FormParams.parse(new URLSearchParams({ code, redirect_uri: `${place.base}/callback`, code_verifier: flow.verifier }).toString())
    // The pages are bearward itself: no client authentication over the wire, and the grant reads no request context.
    const answer = await authorizationCodeGrant.handle({
      form,
      client,
      as: admin.as,
      req: NO_REQUEST_CONTEXT,
      dpop: null,
      mtls: null,
      certificate: null,
    })
    token = answer.access_token
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err
    if (err.error === 'invalid_scope') return notAdmin(res, clearFlow)
    showPage(res, 403, messageOnly('You were not signed in', 'The sign-in did not complete.', again), { cookies: [clearFlow] })
    return { kind: 'refused', sub: null, reason: err.error }
  }
  const claims = await verifyOwnAccessToken(admin.as, token)
  redirect(res, './', 303, [clearFlow, sessionCookie(admin.as, token, place.secure)])
  return { kind: 'signed_in', sub: claims?.sub ?? '' }
}

/** The admin scope policy refused the person (not in admin_api.people): no pages session. */
function notAdmin(res: ServerResponse, clearFlow: string): SignInOutcome {
  showPage(res, 403, messageOnly('Not an administrator', 'Your account is not one of the admin pages’ people (admin_api.people).'), { cookies: [clearFlow] })
  return { kind: 'refused', sub: null, reason: 'not_admin' }
}

/** The authorization_code grant never reads `req` (the token endpoint's request context): the pages have none to give. */
const NO_REQUEST_CONTEXT = undefined as unknown as RequestContext
