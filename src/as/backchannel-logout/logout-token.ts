/**
 * The logout token bearward sends to a client's `backchannel_logout_uri` (OpenID Connect
 * Back-Channel Logout 1.0 2.4): a JWT of `typ: logout+jwt`, signed with the key that signs
 * id_tokens (so the client verifies it as it verifies those), with `iss`, `aud` (the client),
 * `iat`, a short `exp`, `jti`, the back-channel-logout member of `events`, `sub` and, when the
 * session has one, `sid`; never a `nonce` (2.4: "MUST NOT").
 *
 * @see https://openid.net/specs/openid-connect-backchannel-1_0.html#LogoutToken
 */
import { epochSeconds } from '../../clock.js'
import { signJwt } from '../../keys/sign.js'
import type { Clock } from '../../clock.js'
import type { KeySet } from '../../keys/keyset.js'

/** The `events` member that makes a JWT a logout token (2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout'
/** The JOSE `typ` of a logout token (2.4, RFC 8725 3.11 explicit typing). */
export const LOGOUT_TOKEN_TYP = 'logout+jwt'
/** A logout token is delivered at once or retried with a new one: two minutes is plenty (2.4 recommends short). */
export const LOGOUT_TOKEN_TTL_SEC = 120

export interface LogoutTokenInput {
  clientId: string
  sub: string
  /** The session's `sid`, as the client's id_tokens carried it; absent for a session without one. */
  sid?: string
  /** Unique per delivery: a retry of one delivery keeps it, so a receiver can spot a repeat. */
  jti: string
}

export async function signLogoutToken(as: { clock: Clock; keys: KeySet; issuer: string }, input: LogoutTokenInput): Promise<string> {
  const iat = epochSeconds(as.clock)
  return signJwt(as.keys.idToken, LOGOUT_TOKEN_TYP, {
    iss: as.issuer,
    sub: input.sub,
    aud: input.clientId,
    iat,
    exp: iat + LOGOUT_TOKEN_TTL_SEC,
    jti: input.jti,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    ...(input.sid === undefined ? {} : { sid: input.sid }),
  })
}
