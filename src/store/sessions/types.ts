import type { UpstreamContinuation } from '../upstream/types.js'

/** A browser login session at the authorization server. */
export interface SessionRecord {
  sub: string
  username: string
  /** Set when the person signed in at this upstream identity provider (its id); absent for local users. */
  provider?: string
  /**
   * The session's own id for relying parties (the id_token's `sid`, OIDC Back-Channel Logout 1.0
   * section 2.1): random, never the cookie value. Absent on sessions of an older version.
   */
  sid?: string
  /**
   * The upstream provider's session id (its id_token's `sid`), when it sent one: a logout token
   * from that provider naming this `sid` ends this session (endByProviderSession).
   */
  providerSid?: string
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

/** A session that was ended, with what ending it must tell others. */
export interface EndedSession {
  record: SessionRecord
  /** The clients that received an id_token in this session (noteClient), in no particular order. */
  clients: string[]
}

/** At most this many live sessions per person: a new one beyond it ends the oldest (so each stays findable). */
export const MAX_SESSIONS_PER_PERSON = 64
/** At most this many clients remembered per session (noteClient): later ones are not remembered. */
export const MAX_CLIENTS_PER_SESSION = 32

/**
 * Browser login sessions at the authorization server, bound to a cookie, indexed by person (`sub`)
 * and by upstream provider session (`provider`, `providerSid`) so they can be ended by either.
 * Every index expires with the sessions it names and is bounded (MAX_SESSIONS_PER_PERSON).
 */
export interface SessionStore {
  /**
   * Store the session and index it. When the person already has MAX_SESSIONS_PER_PERSON live
   * sessions, the oldest (soonest to expire) ends.
   */
  put(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void>
  get(sessionId: string): Promise<SessionRecord | null>
  /** End one session: returns what it was (and which clients it told), or null when it was not live. */
  delete(sessionId: string): Promise<EndedSession | null>
  /**
   * Remember that `clientId` received an id_token in this live session (bounded by
   * MAX_CLIENTS_PER_SESSION; kept as long as the session). No-op for a session that is not live.
   */
  noteClient(sessionId: string, clientId: string): Promise<void>
  /** End every live session of `sub`; returns each, once (a concurrent end returns it to one caller). */
  endAllOf(sub: string): Promise<EndedSession[]>
  /** End every live session that came from `provider`'s session `providerSid`. */
  endByProviderSession(provider: string, providerSid: string): Promise<EndedSession[]>
}

/** Remembered consent for (sub, client): the scopes granted. */
export interface ConsentStore {
  put(sub: string, clientId: string, scopes: string[], ttlSec: number): Promise<void>
  get(sub: string, clientId: string): Promise<string[] | null>
}
