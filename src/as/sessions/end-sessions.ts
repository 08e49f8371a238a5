/**
 * Ending sessions, for every caller: RP-initiated logout (one session), "Sign out everywhere" (a
 * person's), an upstream provider's back-channel logout (the sessions of one provider session, or
 * of one provider person), Shared Signals events and operators. Each ending is told to the
 * listeners of `as.sessionEnds` (back-channel logout delivery, the Shared Signals transmitter),
 * logged and counted. With `grants: true` the person's grants end too, through the account page's
 * withdrawal (withdraw-access.ts): tokens refused, refresh families ended, open streams ended, on
 * every instance.
 */
import type { EndedSession } from '../../store/types.js'
import type { AuditActor } from '../../audit/events.js'
import type { AsContext } from '../context.js'
import { upstreamSubject } from '../identity-providers/person.js'
import { withdrawAllAccess } from '../withdraw-access.js'
import type { SessionEndReason, SessionsEnded } from './session-ends.js'

export type { SessionEndReason, SessionsEnded, SessionsEndedListener } from './session-ends.js'
export { SessionEnds } from './session-ends.js'

export interface EndOptions {
  /** Also withdraw every application the person allowed (revoke their grants). Default false. */
  grants?: boolean
  /** Who ended them, for the audit trail; default: the person for `logout` and `sign_out_everywhere`, else bearward itself. */
  actor?: AuditActor
}

/** Who the audit trail says ended sessions, when the caller did not say. */
function defaultActor(sub: string, reason: SessionEndReason): AuditActor {
  return reason === 'logout' || reason === 'sign_out_everywhere' ? { kind: 'person', id: sub } : { kind: 'system' }
}

/** A provider's session (its id_token's `sid`) or a provider's person (its `sub`). */
export type ProviderSession = { sid: string } | { sub: string }

async function finish(as: AsContext, sub: string, reason: SessionEndReason, sessions: EndedSession[], options: EndOptions): Promise<SessionsEnded> {
  const actor = options.actor ?? defaultActor(sub, reason)
  const self = actor.kind === 'person' && actor.id === sub
  const grantsRevoked =
    options.grants === true ? await withdrawAllAccess(as, sub, { event: self ? 'grant.withdrawn' : 'grant.revoked', actor, ...(self ? {} : { reason }) }) : null
  // One event per session ended, named by its public id (the id_token `sid`), never its cookie.
  for (const s of sessions) {
    as.audit.record({
      event: 'session.ended',
      actor,
      subject: s.record.sid === undefined ? { kind: 'person', id: sub } : { kind: 'session', id: s.record.sid },
      outcome: 'success',
      reason,
    })
  }
  const ended: SessionsEnded = { sub, reason, sessions, grantsRevoked }
  as.log.info(
    { event: 'sessions_ended', sub, reason, sessions: sessions.length, ...(grantsRevoked === null ? {} : { grants: grantsRevoked }) },
    'sessions ended',
  )
  await as.sessionEnds.emit(ended)
  return ended
}

/** End every session of `sub` (and with `grants`, their grants); returns what ended. */
export async function endSessionsOf(as: AsContext, sub: string, reason: SessionEndReason, options: EndOptions = {}): Promise<SessionsEnded> {
  return finish(as, sub, reason, await as.store.sessions.endAllOf(sub), options)
}

/**
 * End the sessions that came from `provider`'s session `sid`, or every session of the provider's
 * person `sub` (OIDC Back-Channel Logout 1.0 2.6: a logout token names either). Returns one result
 * per person whose sessions ended (none when the provider session had none here; for `sub`, always
 * one when the provider's `sub` is one bearward can name).
 */
export async function endSessionsByProviderSession(
  as: AsContext,
  provider: string,
  by: ProviderSession,
  reason: SessionEndReason,
  options: EndOptions = {},
): Promise<SessionsEnded[]> {
  if ('sub' in by) {
    const sub = upstreamSubject(provider, by.sub)
    return sub === null ? [] : [await endSessionsOf(as, sub, reason, options)]
  }
  const bySub = new Map<string, EndedSession[]>()
  for (const e of await as.store.sessions.endByProviderSession(provider, by.sid)) {
    const list = bySub.get(e.record.sub) ?? []
    list.push(e)
    bySub.set(e.record.sub, list)
  }
  const results: SessionsEnded[] = []
  for (const [sub, sessions] of bySub) results.push(await finish(as, sub, reason, sessions, options))
  return results
}

/** End one session by the id its cookie holds (hashed, as the store keeps it); null when it was not live. */
export async function endOneSession(as: AsContext, storedId: string, reason: SessionEndReason): Promise<SessionsEnded | null> {
  const ended = await as.store.sessions.delete(storedId)
  if (ended === null) return null
  return finish(as, ended.record.sub, reason, [ended], {})
}
