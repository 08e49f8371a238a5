/**
 * The `actor_token` of a token exchange (RFC 8693 2.1): who acts for the
 * subject, and the `act` claim that names it (4.1).
 *
 * - An access token of ours (`actor_token_type` access_token): live and not
 *   revoked; `act: { sub, client_id }` of that token.
 * - A JWT of an `assertion_issuers` entry of kind `workload` (a Kubernetes
 *   service account token, a SPIFFE JWT-SVID; `actor_token_type` jwt or
 *   access_token): checked as every assertion is (jwt-assertion.ts: the
 *   issuer's keys and algorithms, `aud` the issuer's `audience`, `exp`),
 *   its `sub` one the issuer's `subjects` maps to a client, its `jti` single
 *   use (recorded by {@link Actor.commit} once every other check of the
 *   exchange has passed, so a refused exchange does not burn it);
 *   `act: { sub, iss }`, the issuer named since the `sub` is the platform's.
 * - Any other issuer's JWT: `unknown issuer`.
 * Every refusal is invalid_grant, its cause logged as `actor token: ...`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8693#section-2.1
 * @see https://www.rfc-editor.org/rfc/rfc8693#section-4.1
 */
import { InvalidRequest } from '../../errors.js'
import type { AsContext } from '../context.js'
import { singleUseJti, unverifiedIssuer, useJtiOnce, type Refuse } from '../jwt-assertion.js'
import { verifyOwnAccessToken } from '../verify-token.js'

/** RFC 8693 3: the token type identifiers bearward accepts. */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token'
export const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt'

/** Who acts in an exchange. */
export interface Actor {
  /** The `act` claim naming it (without an earlier `act` nested yet). */
  readonly act: Record<string, unknown>
  readonly sub: string
  /** Its issuer when it is not this server (a workload's platform), else null. */
  readonly iss: string | null
  /** The client it is: an access token's client, the client a workload maps to, or the exchanging client. */
  readonly clientId: string
  /** Record what must be used once (a workload token's jti); throws the refusal for a replay. */
  readonly commit: () => Promise<void>
}

const NOTHING_TO_COMMIT = async (): Promise<void> => {}

/** The exchanging client itself, when no actor token is sent. */
export function clientActor(clientId: string): Actor {
  return { act: { sub: clientId }, sub: clientId, iss: null, clientId, commit: NOTHING_TO_COMMIT }
}

/** The actor an `actor_token` names, or a refusal (`refuse` adds the exchange's prefix). */
export async function actorOf(as: AsContext, token: string, type: string | undefined, refuse: Refuse): Promise<Actor> {
  if (type === undefined) throw new InvalidRequest('actor_token_type is required with actor_token')
  if (type !== ACCESS_TOKEN_TYPE && type !== JWT_TOKEN_TYPE) {
    throw new InvalidRequest(`Only ${ACCESS_TOKEN_TYPE} or ${JWT_TOKEN_TYPE} is accepted as actor_token_type`)
  }
  const iss = unverifiedIssuer(token)
  if (iss !== undefined && iss !== as.issuer) return workloadActor(as, token, (cause) => refuse(`actor token: ${cause}`))
  if (type !== ACCESS_TOKEN_TYPE) throw new InvalidRequest(`Only ${ACCESS_TOKEN_TYPE} is accepted as actor_token_type for a token of this server`)
  const own = await verifyOwnAccessToken(as, token)
  if (own === null) throw refuse('actor token invalid, expired or revoked')
  return { act: { sub: own.sub, client_id: own.clientId }, sub: own.sub, iss: null, clientId: own.clientId, commit: NOTHING_TO_COMMIT }
}

/** A workload issuer's JWT as the actor. */
async function workloadActor(as: AsContext, token: string, refuse: Refuse): Promise<Actor> {
  const { issuer, claims, usableUntil } = await as.assertionIssuers.verify(token, 'workload', refuse)
  const clientId = Object.hasOwn(issuer.subjects, claims.sub) ? issuer.subjects[claims.sub] : undefined
  if (clientId === undefined) throw refuse('unmapped subject')
  const jti = singleUseJti(claims, refuse)
  const timing = { clock: as.clock, skewSec: as.config.gateway.clockSkewSec }
  return {
    act: { sub: claims.sub, iss: issuer.issuer },
    sub: claims.sub,
    iss: issuer.issuer,
    clientId,
    commit: async () => {
      if (!(await useJtiOnce(as.store, 'actor-token', issuer.issuer, jti, usableUntil, timing))) throw refuse('jti replayed')
    },
  }
}

/**
 * Whether the subject's `may_act` (RFC 8693 4.4) names this actor: the same
 * `sub`; the same issuer (a `may_act` without `iss` speaks in the subject
 * token's issuer's names, so a platform's `sub` never passes for one of
 * ours, nor ours for another issuer's); and the same client when it names one.
 */
export function mayActAllows(as: AsContext, named: Readonly<Record<string, unknown>>, subjectIssuer: string, actor: Actor): boolean {
  if (named.sub !== actor.sub) return false
  if ((named.iss ?? subjectIssuer) !== (actor.iss ?? as.issuer)) return false
  return named.client_id === undefined || named.client_id === actor.clientId
}
