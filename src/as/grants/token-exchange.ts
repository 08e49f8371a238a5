/**
 * grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693): a
 * client holding an access token of ours (the subject's) gets another one
 * for a narrower audience and scope, for the same subject, with `act` saying
 * who acts.
 *
 * - Policy: the client has the grant and `token_exchange: { audiences }`; the
 *   audience of the new token (`resource` or `audience`, RFC 8693 2.1; one of
 *   them, once) is one of those and a resource this server issues for.
 *   Without either, the policy's only audience; several: invalid_target.
 * - `subject_token`: an access token of this server (`subject_token_type`
 *   access_token), live and not revoked; or an access token of a trusted
 *   issuer (`issuers[]` with a jwks_uri, verified as the gateway verifies
 *   it; type access_token or jwt) whose person an `identity_providers` entry
 *   with the same issuer names (`<id>:<sub>`, the sub a browser sign-in there
 *   gives); anything else is invalid_grant (the cause logged).
 * - `actor_token` (optional; exchange-actor.ts): delegation. An access token
 *   of ours gives `act: { sub, client_id }`; a JWT of a `workload` assertion
 *   issuer gives `act: { sub, iss }`. An `act` the subject token already had
 *   nests inside it (RFC 8693 4.1: the current actor outermost). Without an
 *   actor token the exchanging client is the actor: `act: { sub: <client_id> }`.
 * - `may_act` in the subject token (RFC 8693 4.4) is honoured: its `sub`,
 *   its `iss` (absent: the subject token's issuer) and its `client_id` (when
 *   it names one) must be the actor's, else invalid_grant.
 * - scope: the request's (default the subject token's), never beyond the
 *   subject token's nor the exchanging client's `scopes`: invalid_scope.
 * - What is issued: `issued_token_type` access_token, token_type Bearer (or
 *   DPoP with a proof), expiring no later than the subject token (so
 *   exchanging it again never stretches the chain). It keeps the subject
 *   token's `grant_id`, so revoking that grant (withdrawal on the account
 *   page, a replayed refresh token) revokes every token exchanged from it. A refresh token only when the
 *   client's policy has `refresh_tokens: true` and the subject token belongs
 *   to a grant: a family bound to that grant (exchanged-family.ts).
 *
 * @see https://www.rfc-editor.org/rfc/rfc8693#section-2
 */
import { requireSubset } from '../scope.js'
import { epochSeconds } from '../../clock.js'
import { InvalidGrant, InvalidRequest, InvalidScope, InvalidTarget, UnauthorizedClient } from '../../errors.js'
import type { AsContext } from '../context.js'
import { issueAccessToken } from '../issue.js'
import { checkResource } from '../resource.js'
import { formatScope, parseScope } from '../scope.js'
import { upstreamSubject } from '../identity-providers/person.js'
import { verifyOwnAccessToken, type OwnAccessToken } from '../verify-token.js'
import { strengthClaims, strengthOf, upstreamSignIn } from '../sign-in-strength.js'
import { ACCESS_TOKEN_TYPE, actorOf, clientActor, JWT_TOKEN_TYPE, mayActAllows } from './exchange-actor.js'
import { startExchangedFamily } from './exchanged-family.js'
import type { Grant, GrantRequest, TokenResponse } from './grant-handler.js'

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'

function refuse(cause: string): InvalidGrant {
  return new InvalidGrant(undefined, { cause: `token exchange: ${cause}` })
}

/** A subject token of ours of type access_token, or a refusal. */
async function ownToken(as: AsContext, token: string, type: string | undefined): Promise<OwnAccessToken> {
  if (type === undefined) throw new InvalidRequest('subject_token_type is required with subject_token')
  if (type !== ACCESS_TOKEN_TYPE) throw new InvalidRequest(`Only ${ACCESS_TOKEN_TYPE} is accepted as subject_token_type`)
  const found = await verifyOwnAccessToken(as, token)
  if (found === null) throw refuse('subject token invalid, expired or revoked')
  return found
}

/** The audience of the new token: the one `resource` or `audience` asked for, within the client's policy. */
function targetAudience(as: AsContext, form: GrantRequest['form'], allowed: readonly string[]): string {
  const asked = [...form.getAll('resource'), ...form.getAll('audience')]
  if (asked.length > 1) throw new InvalidTarget('Ask for one resource or audience', { cause: 'token exchange: several targets' })
  const target = asked[0] ?? (allowed.length === 1 ? allowed[0] : undefined)
  if (target === undefined) throw new InvalidTarget('Name the resource or audience the token is for', { cause: 'token exchange: no target' })
  if (!allowed.includes(target))
    throw new InvalidTarget('This client may not exchange tokens for that audience', { cause: 'token exchange: audience outside the policy' })
  return checkResource(target, as)
}

function objectClaim(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

/** The subject token: ours, or a trusted issuer's access token for a person an identity provider maps. */
async function subjectOf(as: AsContext, token: string, type: string | undefined): Promise<OwnAccessToken> {
  if (type === undefined || !as.trustedTokens.claims(token) || (type !== ACCESS_TOKEN_TYPE && type !== JWT_TOKEN_TYPE)) {
    return ownToken(as, token, type)
  }
  const found = await as.trustedTokens.verify(token, as.jwtVerifier)
  if (found === null) throw refuse('subject token of a trusted issuer invalid or expired')
  const { claims } = found
  const provider = as.as.identityProviders.find((p) => p.issuer === found.issuer)
  const sub = provider === undefined || typeof claims.sub !== 'string' ? null : upstreamSubject(provider.id, claims.sub)
  if (sub === null) throw refuse('unmapped subject: no identity provider has the trusted issuer of the subject token')
  const jti = typeof claims.jti === 'string' ? claims.jti : ''
  if (as.revocations.isRevoked(jti === '' ? null : jti, null)) throw refuse('subject token revoked')
  const scope = typeof claims.scope === 'string' ? claims.scope : Array.isArray(claims.scp) ? claims.scp.filter((s) => typeof s === 'string').join(' ') : ''
  const act = objectClaim(claims.act)
  const mayAct = objectClaim(claims.may_act)
  return {
    format: 'jwt',
    iss: found.issuer,
    sub,
    aud: [],
    clientId: typeof claims.client_id === 'string' ? claims.client_id : '',
    scope,
    jti,
    iat: typeof claims.iat === 'number' ? claims.iat : 0,
    exp: claims.exp as number,
    nbf: null,
    // A foreign token has no grant here: revoking it at its issuer cannot reach what was exchanged.
    grantId: null,
    authTime: typeof claims.auth_time === 'number' ? claims.auth_time : null,
    // How the person signed in there, its acr ours only through the provider's `acr_values` (sign-in-strength.ts).
    ...strengthClaims(upstreamSignIn(claims, provider?.acrValues ?? {})),
    ...(act === undefined ? {} : { act }),
    ...(mayAct === undefined ? {} : { mayAct }),
  }
}

export const tokenExchangeGrant: Grant = {
  params: ['subject_token', 'subject_token_type', 'actor_token', 'actor_token_type', 'requested_token_type', 'scope', 'resource', 'audience'],

  async handle({ form, client, as, dpop, mtls }: GrantRequest): Promise<TokenResponse & { issued_token_type: string }> {
    const policy = client.tokenExchange
    if (policy === undefined) throw new UnauthorizedClient('This client may not exchange tokens')
    const requestedType = form.get('requested_token_type')
    if (requestedType !== undefined && requestedType !== ACCESS_TOKEN_TYPE) throw new InvalidRequest(`Only ${ACCESS_TOKEN_TYPE} can be requested`)
    const audience = targetAudience(as, form, policy.audiences)

    const subject = await subjectOf(as, form.require('subject_token'), form.get('subject_token_type'))
    // Taken inside the clock skew, a subject token past its exp has no lifetime left to give: what is issued never outlives it.
    if (subject.exp <= epochSeconds(as.clock)) throw refuse('subject token past its exp (accepted only inside the clock skew)')
    const actorToken = form.get('actor_token')
    if (actorToken === undefined && form.get('actor_token_type') !== undefined) throw new InvalidRequest('actor_token_type without actor_token')
    // Who acts now: the actor token's subject, or the exchanging client itself.
    const actor = actorToken === undefined ? clientActor(client.clientId) : await actorOf(as, actorToken, form.get('actor_token_type'), refuse)
    const act: Record<string, unknown> = { ...actor.act }
    if (subject.act !== undefined) act.act = subject.act
    if (subject.mayAct !== undefined && !mayActAllows(as, subject.mayAct, subject.iss, actor)) throw refuse('the actor is not the one may_act names')

    const granted = parseScope(subject.scope)
    const requested = parseScope(form.get('scope'))
    requireSubset(requested, granted, 'the subject token')
    // Never beyond the exchanging client's registration either, as every grant is capped (RFC 6749 3.3).
    requireSubset(requested, client.scopes, 'what the client is registered for')
    const scope = formatScope((requested.length > 0 ? requested : granted).filter((s) => client.scopes.includes(s)))
    // A subject token whose scope the client may use none of gives nothing: a token without scope is no answer.
    if (scope === '' && granted.length > 0) throw new InvalidScope("None of the subject token's scope is available to this client")

    // Single use last: a refused exchange does not burn the actor's token.
    await actor.commit()
    const strength = strengthOf(subject)
    const issued = await issueAccessToken(as, {
      grant: 'token_exchange',
      sub: subject.sub,
      clientId: client.clientId,
      scope,
      grantId: subject.grantId,
      authTime: subject.authTime,
      strength,
      audience,
      jkt: dpop?.jkt ?? null,
      x5t: mtls?.x5t ?? null,
      claims: { ...subject.claims, act },
      // Never beyond the subject token: revoking that one token (its jti) cannot reach what was exchanged from it, and
      // exchanging the exchanged token again must not stretch the chain past its subject.
      notAfter: subject.exp,
    })
    const refreshToken = await startExchangedFamily(as, {
      client,
      subjectGrantId: subject.grantId,
      sub: subject.sub,
      scope,
      audience,
      act,
      authTime: subject.authTime,
      strength,
    })
    return {
      access_token: issued.token,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: dpop === null ? 'Bearer' : 'DPoP',
      expires_in: issued.expiresIn,
      scope,
      ...(refreshToken === null ? {} : { refresh_token: refreshToken }),
    }
  },
}
