import type { UpstreamContinuation } from '../upstream/types.js'

/** A browser login session at the authorization server. */
export interface SessionRecord {
  sub: string
  username: string
  /** Set when the person signed in at this upstream identity provider (its id); absent for local users. */
  provider?: string
  /** Epoch seconds of the login. */
  authTime: number
  /** How the person signed in (src/as/sign-in-strength.ts); absent on sessions of an older version. */
  amr?: string[]
  acr?: string
  /**
   * Set while the person has given their password and not yet their second factor: such a session
   * signs nobody in (currentSession ignores it); it only lets the second-factor page finish the sign-in.
   */
  pending?: { next: UpstreamContinuation }
  /** CSRF token bound to this session. */
  csrf: string
}

/** Browser login sessions at the authorization server, bound to a cookie. */
export interface SessionStore {
  put(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void>
  get(sessionId: string): Promise<SessionRecord | null>
  delete(sessionId: string): Promise<void>
}

/** Remembered consent for (sub, client): the scopes granted. */
export interface ConsentStore {
  put(sub: string, clientId: string, scopes: string[], ttlSec: number): Promise<void>
  get(sub: string, clientId: string): Promise<string[] | null>
}
