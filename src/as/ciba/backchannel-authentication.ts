/**
 * POST /bc-authorize (OpenID CIBA Core 1.0 7): a client asks that a person approve, on bearward's
 * approval page, that it be given tokens for them. The answer is an `auth_req_id` the client
 * polls /token with (poll mode), or waits to be pinged about (ping mode).
 *
 * Order: form body only → no repeated parameter → client authentication (every method the client
 * is registered with, as at /token) → the client holds the CIBA grant → parameters (refusals as
 * CIBA 13 names them) → the person the hint names → the ping parked, for a ping client → an
 * approval of kind `ciba` opened (bounded per person and per client). The ping comes first so that
 * a store failure answers 503 with no approval left pending for the person to decide.
 *
 * Not supported, refused with invalid_request: `login_hint_token`, `user_code`
 * (`backchannel_user_code_parameter_supported: false`), signed requests (`request`).
 */
import { CIBA_GRANT } from '../../config/sections/clients.js'
import { CibaAccessDenied, InvalidRequest, InvalidScope, MethodNotAllowed, ServerError, UnauthorizedClient } from '../../errors.js'
import { readForm } from '../../http/body.js'
import { NO_STORE, sendJson } from '../../http/reply.js'
import type { ApprovalSubject, OpenResult } from '../../store/approvals/types.js'
import { requestedDetails } from '../authorization-details/authorization-details.js'
import { authenticateClient, CLIENT_AUTH_PARAMS } from '../client-auth.js'
import type { AsContext, AsHandler } from '../context.js'
import { parseScope, requireSubset } from '../scope.js'
import { OWN_ACR_VALUES } from '../../tokens/acr.js'
import { readBindingMessage } from './binding-message.js'
import { personOfHint } from './login-hint.js'
import { authReqBinding, authReqIdOf, newAuthReqSecret } from './request-id.js'

/** The parameters this endpoint reads; each may occur once. */
const PARAMS = [
  'scope',
  'login_hint',
  'id_token_hint',
  'login_hint_token',
  'binding_message',
  'requested_expiry',
  'client_notification_token',
  'authorization_details',
  'user_code',
  'acr_values',
  'request',
] as const

/** CIBA 7.1: a bearer token (RFC 6750 2.1 b64token), at most this long. */
const NOTIFICATION_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/
export const MAX_NOTIFICATION_TOKEN = 1024

/** CIBA 7.3 successful answer. */
export interface BackchannelAuthenticationResponse {
  auth_req_id: string
  expires_in: number
  interval: number
}

/** `requested_expiry` (CIBA 7.1): a positive integer of seconds; the answer never exceeds `ciba.ttl`. */
function expiryOf(value: string | undefined, ttlSec: number): number {
  if (value === undefined) return ttlSec
  if (!/^[1-9][0-9]{0,8}$/.test(value)) throw new InvalidRequest('requested_expiry must be a positive integer of seconds')
  return Math.min(Number(value), ttlSec)
}

/**
 * CIBA 7.1 `acr_values`: the sign-in the deciding session must show, in order of preference; each
 * one of bearward's own values (src/tokens/acr.ts). Absent: any signed-in session decides.
 */
function acrValuesOf(value: string | undefined): string[] {
  if (value === undefined) return []
  const values = [...new Set(value.split(' ').filter((v) => v !== ''))]
  if (values.length === 0 || values.some((v) => !(OWN_ACR_VALUES as readonly string[]).includes(v))) {
    throw new InvalidRequest(`acr_values may only hold ${OWN_ACR_VALUES.join(', ')}`)
  }
  return values
}

/** CIBA 7.1: a ping client's `client_notification_token`, required: what bearward sends back as its Bearer token. */
function notificationTokenOf(value: string | undefined): string {
  if (value === undefined) throw new InvalidRequest('client_notification_token is required for a ping client')
  if (value.length > MAX_NOTIFICATION_TOKEN || !NOTIFICATION_TOKEN.test(value)) {
    throw new InvalidRequest(`client_notification_token must be a bearer token (RFC 6750 2.1) of at most ${MAX_NOTIFICATION_TOKEN} characters`)
  }
  return value
}

/** CIBA 7.1: `openid` required; every scope allowed to the client. */
function scopesOf(value: string | undefined, allowed: readonly string[], known: Readonly<Record<string, string>>): string[] {
  if (value === undefined) throw new InvalidRequest('scope is required and must include openid')
  const scopes = [...new Set(parseScope(value))]
  if (!scopes.includes('openid')) throw new InvalidScope('The scope must include openid')
  for (const s of scopes) if (!Object.hasOwn(known, s)) throw new InvalidScope('The requested scope is unknown or not allowed for this application')
  requireSubset(scopes, allowed, 'what the client is registered for')
  return scopes
}

/** A ping queued for an approval that was not opened: removed when the store lets us, else dropped unsent at its expiry (ping.ts). */
async function forgetPing(as: AsContext, approvalId: string): Promise<void> {
  try {
    await as.ciba.pings.forget(approvalId)
  } catch {
    // The store is failing already; the request's own error is the answer.
  }
}

/** @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.7 */
export const handleBackchannelAuthentication: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') throw new MethodNotAllowed(['POST'])
  const form = await readForm(req)
  form.assertNoRepeats([...PARAMS, ...CLIENT_AUTH_PARAMS])
  const { client } = await authenticateClient(req, form, as)
  // The request's span names the client only once it is authenticated: a refused one could name anyone (docs/telemetry.md).
  ctx.clientId = client.clientId
  const mode = client.ciba
  if (!client.grantTypes.includes(CIBA_GRANT) || mode === undefined || client.type === 'public') {
    throw new UnauthorizedClient('The client is not allowed to use backchannel authentication')
  }
  if (form.has('request')) throw new InvalidRequest('Signed authentication requests are not supported: send the parameters in the body')
  if (form.has('user_code')) throw new InvalidRequest('user_code is not supported (backchannel_user_code_parameter_supported is false)')
  // RFC 9396 5: validated against the declared types the client may use; the person sees them on the approval page.
  const details = requestedDetails(form, as.authorizationDetailsTypes, client.authorizationDetailsTypes)
  const scopes = scopesOf(form.get('scope'), client.scopes, as.as.scopes)
  const bindingMessage = readBindingMessage(form.get('binding_message'))
  const { ttlSec, intervalSec } = as.as.ciba
  const expiresIn = expiryOf(form.get('requested_expiry'), ttlSec)
  const notificationToken = mode.deliveryMode === 'ping' ? notificationTokenOf(form.get('client_notification_token')) : null
  const signIn = { acr: acrValuesOf(form.get('acr_values')), maxAgeSec: null }
  // Last: the only check that reads the store.
  const sub = await personOfHint(as, form, client.clientId)

  const secret = newAuthReqSecret()
  const subject: ApprovalSubject = { kind: 'ciba', scopes, bindingMessage, authorizationDetailsJson: details === null ? null : JSON.stringify(details) }
  const reserved = as.approvals.reserve(expiresIn)
  const authReqId = authReqIdOf(reserved.id, secret, reserved.expiresAt)
  // The ping first: when it cannot be queued (a 503), no approval exists that the person could still approve for nothing.
  if (notificationToken !== null) await as.ciba.pings.queue(reserved.id, client.clientId, authReqId, notificationToken, reserved.expiresAt)
  let opened: OpenResult
  try {
    opened = await as.approvals.open({
      kind: 'ciba',
      sub,
      clientId: client.clientId,
      grantId: null,
      binding: authReqBinding(client.clientId, secret),
      subject,
      signIn,
      ttlSec: expiresIn,
      reserved,
    })
  } catch (err) {
    if (notificationToken !== null) await forgetPing(as, reserved.id)
    throw err
  }
  if (opened.outcome !== 'created' && notificationToken !== null) await forgetPing(as, reserved.id)
  if (opened.outcome === 'too_many') throw new CibaAccessDenied('Too many requests are waiting for this person or this client', { cause: 'approval bounds' })
  // Every secret is a fresh binding: an existing pending approval can never match it.
  if (opened.outcome !== 'created') throw new ServerError('The request could not be stored', { cause: 'a fresh CIBA binding matched a pending approval' })
  const body: BackchannelAuthenticationResponse = { auth_req_id: authReqId, expires_in: expiresIn, interval: intervalSec }
  sendJson(res, 200, body, NO_STORE)
}
