/**
 * The hook every ending of sessions goes through: a listener list, owned by the Runtime's
 * authorization server (AsContext.sessionEnds). Back-channel logout delivery subscribes to it, and
 * so does the Shared Signals transmitter (CAEP session-revoked). A listener that throws or
 * rejects is logged; it never fails the ending nor stops the other listeners.
 */
import type { EndedSession } from '../../store/types.js'

/** Why sessions ended: what logs, metrics and listeners (CAEP `reason_admin`) tell. */
export type SessionEndReason =
  /** The person signed out (RP-initiated logout, or our own "Sign out" button). */
  | 'logout'
  /** "Sign out everywhere" on the account page. */
  | 'sign_out_everywhere'
  /** The upstream identity provider's back-channel logout token. */
  | 'provider_logout'
  /** A Shared Signals event from a transmitter. */
  | 'signal'
  /** An operator's action. */
  | 'admin'

/** What one ending did, for one person. */
export interface SessionsEnded {
  /** The person whose sessions ended. */
  readonly sub: string
  readonly reason: SessionEndReason
  /** The sessions ended (each once, across instances); may be empty when none was live. */
  readonly sessions: readonly EndedSession[]
  /** How many grants were revoked with them; null when grants were not asked to end. */
  readonly grantsRevoked: number | null
}

export type SessionsEndedListener = (ended: SessionsEnded) => void | Promise<void>

/** The logger the hook reports a failing listener to. */
interface HookLog {
  error(obj: object, msg: string): void
}

export class SessionEnds {
  readonly #listeners = new Set<SessionsEndedListener>()
  readonly #log: HookLog

  constructor(log: HookLog) {
    this.#log = log
  }

  /** Subscribe; returns the unsubscribe. */
  on(listener: SessionsEndedListener): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /** Tell every listener, in parallel; resolves when all have settled. */
  async emit(ended: SessionsEnded): Promise<void> {
    await Promise.all(
      [...this.#listeners].map(async (l) => {
        try {
          await l(ended)
        } catch (err) {
          this.#log.error({ event: 'session_end_listener_failed', reason: ended.reason, err }, 'a listener of ended sessions failed')
        }
      }),
    )
  }
}
