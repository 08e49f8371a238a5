/**
 * What a signal ends, as the receiver asks for it. The receiver decides
 * which sessions and grants go; ending them (sessions found by person or by
 * provider session, grants revoked with their tokens, refresh families and
 * open streams on every instance) is the session module's (src/as/sessions),
 * wired in by the authorization server's build.
 */
import type { GrantRecord, SessionRecord } from '../store/types.js'

/** Selects the records to end; null: all of them. */
export type Which<T> = ((record: T) => boolean) | null

export interface AccessEnder {
  /** End the sessions of `sub` that `which` selects; resolves to how many ended. */
  endSessions(sub: string, which: Which<SessionRecord>, reason: string): Promise<number>
  /** End the bearward sessions that came from one provider session (a `sid` there); resolves to how many. */
  endProviderSession(provider: string, sid: string, reason: string): Promise<number>
  /** Revoke the grants of `sub` that `which` selects (tokens refused, refresh families ended, streams ended); resolves to how many. */
  endGrants(sub: string, which: Which<GrantRecord>, reason: string): Promise<number>
}
