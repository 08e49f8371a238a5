/**
 * grant_type=refresh_token (RFC 6749 6) with rotation (RFC 9700 4.14.2).
 *
 * Everything that can be refused without changing state is checked first
 * (the token exists, belongs to this client, the scope only narrows, the
 * resource is the bound one, a DPoP-bound family gets a proof by its key);
 * only then does the store rotate, atomically.
 * Presenting a replaced token makes the store revoke the whole family and the
 * access tokens issued under it; the answer is the same invalid_grant.
 * A family a token exchange started is bound to its subject's grant
 * (exchanged-family.ts): checked first, and answered as the exchange was.
 */
import { narrowAuthorizationDetails, requestedDetails, storedDetails } from '../authorization-details/authorization-details.js'
import { requireSubset } from '../scope.js'
import { epochSeconds } from '../../clock.js'
import { InvalidDpopProof, InvalidGrant } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import { userTokenResponse } from '../issue.js'
import { randomToken } from '../../crypto/random.js'
import { audienceFor, requestedResource } from '../resource.js'
import { formatScope, parseScope } from '../scope.js'
import { strengthOf } from '../sign-in-strength.js'
import type { Grant, GrantRequest, TokenResponse } from './grant-handler.js'
import { checkExchangePolicy, checkSubjectGrant, exchangedRefreshResponse, exchangeOf, revokeSubjectGrant } from './exchanged-family.js'

export const refreshTokenGrant: Grant = {
  params: ['refresh_token', 'scope', 'resource', 'authorization_details'],

  async handle({ form, client, as, dpop, mtls, certificate }: GrantRequest): Promise<TokenResponse> {
    const presented = form.require('refresh_token')
    const requestedScope = parseScope(form.get('scope'))
    const resource = requestedResource(form, as)
    const oldHash = hashToken(presented)

    const found = await as.store.grants.findRefresh(oldHash)
    if (found === null) throw new InvalidGrant(undefined, { cause: 'refresh token unknown, expired or revoked' })
    const grant = found.grant
    if (grant.clientId !== client.clientId) throw new InvalidGrant(undefined, { cause: 'refresh token issued to another client' })
    if (as.revocations.isRevoked(null, grant.grantId)) throw new InvalidGrant(undefined, { cause: 'grant revoked' })
    const exchange = exchangeOf(grant)
    if (exchange !== undefined) {
      await checkSubjectGrant(as, grant, exchange)
      checkExchangePolicy(client, grant)
    }
    // RFC 9449 5: a public client's family is bound to the key of its first proof.
    if (grant.jkt !== undefined) {
      if (dpop === null) throw new InvalidDpopProof('This refresh token is DPoP-bound: send a DPoP proof', { cause: 'bound refresh token without a proof' })
      if (dpop.jkt !== grant.jkt) throw new InvalidGrant(undefined, { cause: 'refresh token bound to another DPoP key' })
    }
    // RFC 8705 4: a public client's family is bound to the certificate of its first token request.
    if (grant.x5t !== undefined) {
      if (certificate === null) throw new InvalidGrant(undefined, { cause: 'certificate-bound refresh token without a client certificate' })
      if (certificate.thumbprint !== grant.x5t) throw new InvalidGrant(undefined, { cause: 'refresh token bound to another certificate' })
    }

    const granted = parseScope(grant.scope)
    requireSubset(requestedScope, granted, 'the original grant')
    // Never beyond what the client is registered for now: a scope the operator took from it since the grant is gone.
    requireSubset(requestedScope, client.scopes, 'what the client is registered for')
    const scope = formatScope((requestedScope.length === 0 ? granted : requestedScope).filter((s) => client.scopes.includes(s)))
    const audience = audienceFor(as, resource, grant.resource)
    // RFC 9396 6.2: a refresh may narrow the granted details (whole entries), never widen them; as with
    // scopes, an entry of a type the operator took from the client since the grant is gone.
    const details = narrowAuthorizationDetails(
      requestedDetails(form, as.authorizationDetailsTypes, client.authorizationDetailsTypes),
      storedDetails(grant.authorizationDetails)?.filter((e) => client.authorizationDetailsTypes?.includes(e.type) === true),
    )

    // Public clients always rotate (RFC 9700 4.14.2: sender-constrained or rotated).
    const rotate = client.type === 'public' || client.rotateRefreshTokens
    const next = rotate ? randomToken() : null
    const now = epochSeconds(as.clock)
    const expiresAt = now + as.as.refreshToken.ttlSec
    // Rotation extends the family's life: its place on the account page (what withdrawal revokes) first.
    // An exchanged family is reached through its subject's grant, not the account page.
    if (next !== null && exchange === undefined)
      await as.store.allowances.note(grant.sub, grant.clientId, { scopes: [], at: grant.createdAt, grantId: grant.grantId, until: expiresAt })
    // The access token issued below expires then: the rotation records it on the family in the same step.
    const accessExp = now + as.as.accessToken.ttlSec
    const result = await as.store.grants.rotate(oldHash, next === null ? null : hashToken(next), expiresAt, grant.grantId, accessExp)
    if (result.status === 'reused') {
      // The store revoked the family and published it; apply it here at once too.
      as.revocations.add({ kind: 'grant', id: grant.grantId, exp: Math.max(result.grant.maxAccessExp, now) })
      await as.approvals.cancelGrant(grant.grantId)
      if (exchange !== undefined) await revokeSubjectGrant(as, exchange)
      throw new InvalidGrant(undefined, { cause: 'replaced refresh token reused; family revoked' })
    }
    if (result.status === 'missing') throw new InvalidGrant(undefined, { cause: 'refresh token no longer current' })
    if (exchange !== undefined)
      return exchangedRefreshResponse(as, grant, exchange, {
        scope,
        audience,
        refreshToken: next,
        jkt: dpop?.jkt ?? null,
        x5t: mtls?.x5t ?? null,
      })

    return userTokenResponse(as, {
      grant: 'refresh_token',
      clientId: client.clientId,
      grantId: grant.grantId,
      sub: grant.sub,
      scope,
      authTime: grant.authTime,
      // The original sign-in's amr/acr, as its auth_time: a refresh proves nothing new about the person.
      strength: strengthOf(grant),
      audience,
      nonce: null,
      ...(grant.sid === undefined ? {} : { sid: grant.sid }),
      refreshToken: next,
      jkt: dpop?.jkt ?? null,
      x5t: mtls?.x5t ?? null,
      notedAccessExp: accessExp,
      ...(details === undefined ? {} : { authorizationDetails: details }),
    })
  },
}
