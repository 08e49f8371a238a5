/**
 * What bearward transmits (SSF 1.0, CAEP 1.0): the event types a stream may
 * ask for and the Security Event Token (RFC 8417) each delivery carries,
 * signed with the key that signs id_tokens (receivers verify it through
 * bearward's jwks_uri, as they verify id_tokens).
 *
 * @see https://openid.net/specs/openid-sharedsignals-framework-1_0.html
 * @see https://openid.net/specs/openid-caep-1_0.html
 */
import { epochSeconds, type Clock } from '../../clock.js'
import type { KeySet } from '../../keys/keyset.js'
import { signJwt } from '../../keys/sign.js'

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/'
export const SESSION_REVOKED = `${CAEP}session-revoked`
export const CREDENTIAL_CHANGE = `${CAEP}credential-change`
/** SSF 1.0 8.1.4: sent on request to the stream's receiver; always delivered, never requested. */
export const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification'
/** The events a stream can ask for (`events_supported`). */
export const EVENTS_SUPPORTED: readonly string[] = [SESSION_REVOKED, CREDENTIAL_CHANGE]
/** RFC 8417 2.3 explicit typing, as SSF 1.0 requires it. */
export const SET_TYP = 'secevent+jwt'

/** SSF 1.0 / RFC 9493 subject identifiers bearward sends. */
export type SubjectId = { format: 'iss_sub'; iss: string; sub: string } | { format: 'opaque'; id: string }

/** One event to deliver: its type URI and its payload (the member of `events`). */
export interface OutgoingEvent {
  type: string
  payload: Record<string, unknown>
  subId: SubjectId
}

/** The SET of one delivery: `jti` is the queued job's id, so a retry carries the same one (RFC 8935 2: the receiver spots a repeat). */
export function signSet(as: { clock: Clock; keys: KeySet; issuer: string }, aud: string, jti: string, event: OutgoingEvent): Promise<string> {
  return signJwt(as.keys.idToken, SET_TYP, {
    iss: as.issuer,
    aud,
    iat: epochSeconds(as.clock),
    jti,
    sub_id: event.subId,
    events: { [event.type]: event.payload },
  })
}
