/**
 * grant_type=urn:openid:params:grant-type:ciba (OpenID CIBA Core 1.0 10.1, 11): the client
 * redeems an auth_req_id from /bc-authorize once the person approved it on the approval page.
 *
 * - The auth_req_id names its approval; the approval keeps only a hash of the value bound to the
 *   client it was issued to, so another client's poll, or a made-up value, is `invalid_grant`
 *   and changes nothing (no slow_down clock, no consumption).
 * - Pending: `authorization_pending`, or `slow_down` when polled faster than the interval
 *   (ciba/pacing.ts). Denied (or cancelled by the person withdrawing the client): `access_denied`.
 *   Past its expiry: `expired_token`.
 * - Approved: tokens exactly once (the desk's take(): of two racing polls one wins), for the
 *   person, as a grant recorded like the code flow's (the account page lists it; a withdrawal
 *   after the approval refuses it). `auth_time` is the decision's time: the person authenticated
 *   the request by approving it in a signed-in session.
 */
import { epochSeconds } from '../../clock.js'
import { randomId } from '../../crypto/random.js'
import { AccessDenied, AuthorizationPending, ExpiredToken, InvalidGrant } from '../../errors.js'
import { pacePoll } from '../ciba/pacing.js'
import { authReqBinding, parseAuthReqId, sameBinding } from '../ciba/request-id.js'
import { storedDetails } from '../authorization-details/authorization-details.js'
import { startGrant } from '../issue.js'
import { audienceFor, requestedResource } from '../resource.js'
import { formatScope } from '../scope.js'
import { strengthOf } from '../sign-in-strength.js'
import type { Grant, GrantRequest, TokenResponse } from './grant-handler.js'

export { CIBA_GRANT } from '../../config/sections/clients.js'

/** How long after its expiry the slow_down count of a request is kept (then the request answers expired_token anyway). */
const PACING_SLACK_SEC = 60

export const cibaGrant: Grant = {
  params: ['auth_req_id', 'resource'],

  /** @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.10.1 */
  async handle({ form, client, as, dpop, mtls }: GrantRequest): Promise<TokenResponse> {
    const authReqId = form.require('auth_req_id')
    const resource = requestedResource(form, as)
    const now = epochSeconds(as.clock)
    const parsed = parseAuthReqId(authReqId)
    if (parsed === null) throw new InvalidGrant(undefined, { cause: 'not an auth_req_id of this server' })
    const record = await as.approvals.get(parsed.approvalId)
    if (record === null) {
      if (now >= parsed.expiresAt) throw new ExpiredToken('The auth_req_id has expired')
      throw new InvalidGrant(undefined, { cause: 'auth_req_id unknown' })
    }
    if (record.kind !== 'ciba' || record.clientId !== client.clientId || !sameBinding(record.binding, authReqBinding(client.clientId, parsed.secret))) {
      throw new InvalidGrant(undefined, { cause: 'auth_req_id unknown, or issued to another client' })
    }
    await pacePoll(as.store, record.binding, as.as.ciba.intervalSec, record.expiresAt - now + PACING_SLACK_SEC)
    switch (record.status) {
      case 'pending':
        throw new AuthorizationPending('The person has not yet decided')
      case 'expired':
        throw new ExpiredToken('The auth_req_id has expired')
      case 'denied':
        throw new AccessDenied('The person denied the request')
      case 'cancelled':
        throw new AccessDenied('The request was cancelled', { cause: 'approval cancelled (grant revoked or client withdrawn)' })
      case 'used':
        throw new InvalidGrant(undefined, { cause: 'auth_req_id already redeemed' })
      case 'approved':
        break
    }
    // Of two racing polls exactly one takes it; the other finds it used.
    const taken = await as.approvals.take(record.id)
    if (taken === null || taken.subject.kind !== 'ciba') throw new InvalidGrant(undefined, { cause: 'auth_req_id redeemed by a concurrent poll' })
    const decidedAt = taken.decidedAt ?? now
    // RFC 9396: what the person approved is the grant's, and this first token carries all of it.
    const details =
      taken.subject.authorizationDetailsJson === null
        ? undefined
        : storedDetails(JSON.parse(taken.subject.authorizationDetailsJson) as Record<string, unknown>[])
    return startGrant(as, {
      grant: 'ciba',
      client,
      grantId: randomId(),
      sub: taken.sub,
      scope: formatScope(taken.subject.scopes),
      authTime: decidedAt,
      strength: strengthOf(taken.decidedAcr === null ? {} : { acr: taken.decidedAcr }),
      resource,
      audience: audienceFor(as, resource, null),
      nonce: null,
      jkt: dpop?.jkt ?? null,
      x5t: mtls?.x5t ?? null,
      // A withdrawal of the client after the person approved refuses the grant.
      authorizedAtMs: decidedAt * 1000,
      ...(details === undefined ? {} : { grantedDetails: details, authorizationDetails: details }),
    })
  },
}
