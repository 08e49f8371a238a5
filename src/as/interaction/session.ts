import type { IncomingMessage } from 'node:http'
import { epochSeconds } from '../../clock.js'
import { ownCookieName, parseCookies, serializeCookie } from '../../http/cookies.js'
import { hashToken } from '../../store/hash.js'
import type { LocalPerson } from '../people/directory.js'
import type { SessionRecord, UpstreamContinuation } from '../../store/types.js'
import type { Person } from '../claims.js'
import type { AsContext } from '../context.js'
import type { SignInStrength } from '../sign-in-strength.js'
import { isTokenShaped, randomToken } from '../../crypto/random.js'
import { endOneSession } from '../sessions/end-sessions.js'

/**
 * The browser login session at the authorization server. The cookie holds a
 * random id; the store holds only its hash (like every other bearer value),
 * with the user, the login time, how they signed in (amr/acr) and the
 * session's CSRF token.
 */

/** Name of the session cookie; `__Host-` prefixed under https (no Domain, Path=/, Secure). */
export function sessionCookieName(secure: boolean): string {
  return ownCookieName('bw_session', secure)
}

export interface ActiveSession {
  id: string
  record: SessionRecord
  user: Person
}

/**
 * The session the request's cookie names, or null. A session whose user was
 * removed from the config (or whose sub changed) since login no longer counts.
 */
export async function currentSession(req: IncomingMessage, as: AsContext): Promise<ActiveSession | null> {
  const id = parseCookies(req.headers.cookie).get(sessionCookieName(as.secureCookies))
  if (!isTokenShaped(id)) return null
  const record = await as.store.sessions.get(hashToken(id))
  if (record === null || record.pending !== undefined) return null
  if (record.provider !== undefined) {
    // An upstream person: their provider must still be configured, their claims still known.
    if (!as.upstream.has(record.provider)) return null
    const person = await as.store.upstream.getPerson(record.sub)
    if (person === null || person.provider !== record.provider) return null
    return { id, record, user: { username: record.sub, sub: record.sub, claims: person.claims } }
  }
  const user = await as.people.byUsername(record.username)
  if (user === undefined || user.sub !== record.sub) return null
  return { id, record, user }
}

/**
 * Log the user in: always a new session id (no session fixation, RFC 9700 /
 * OWASP), the previous session, if any, deleted. `strength` says how they
 * proved who they are; `auth_time` is now. Returns the Set-Cookie.
 */
export async function startSession(
  as: AsContext,
  user: Person,
  previousId: string | null,
  strength: SignInStrength,
  provider?: string,
  providerSid?: string,
): Promise<{ session: ActiveSession; setCookie: string }> {
  const id = randomToken()
  const record: SessionRecord = {
    sub: user.sub,
    username: user.username,
    // The id relying parties know this session by (id_token `sid`): random, never the cookie value.
    sid: randomToken(),
    authTime: epochSeconds(as.clock),
    amr: [...strength.amr],
    ...(strength.acr === undefined ? {} : { acr: strength.acr }),
    csrf: randomToken(),
    ...(provider === undefined ? {} : { provider }),
    ...(provider === undefined || providerSid === undefined ? {} : { providerSid }),
  }
  await as.store.sessions.put(hashToken(id), record, as.as.session.ttlSec)
  if (previousId !== null) await as.store.sessions.delete(hashToken(previousId))
  const setCookie = serializeCookie('bw_session', id, {
    secure: as.secureCookies,
    maxAgeSec: as.as.session.ttlSec,
  })
  return { session: { id, record, user }, setCookie }
}

/** How long a person has to give their second factor after the password. */
export const PENDING_SESSION_TTL_SEC = 300

/**
 * The password was right and a second factor is due: a session that signs
 * nobody in yet (`pending`, short-lived, a new id as for a sign-in), holding
 * what the sign-in continues. The second-factor page finishes it.
 */
export async function startPendingSession(as: AsContext, user: Person, previousId: string | null, next: UpstreamContinuation): Promise<{ setCookie: string }> {
  const id = randomToken()
  const record: SessionRecord = {
    sub: user.sub,
    username: user.username,
    authTime: epochSeconds(as.clock),
    amr: ['pwd'],
    acr: 'pwd',
    pending: { next },
    csrf: randomToken(),
  }
  await as.store.sessions.put(hashToken(id), record, PENDING_SESSION_TTL_SEC)
  if (previousId !== null) await as.store.sessions.delete(hashToken(previousId))
  return { setCookie: serializeCookie('bw_session', id, { secure: as.secureCookies, maxAgeSec: PENDING_SESSION_TTL_SEC }) }
}

/** The pending sign-in of a local user this browser is in the middle of, or null. */
export interface PendingSession {
  id: string
  record: SessionRecord
  user: LocalPerson
  next: UpstreamContinuation
}

export async function pendingSession(req: IncomingMessage, as: AsContext): Promise<PendingSession | null> {
  const id = sessionIdOf(req, as)
  if (id === null) return null
  const record = await as.store.sessions.get(hashToken(id))
  if (record?.pending === undefined || record.provider !== undefined) return null
  const user = await as.people.byUsername(record.username)
  if (user === undefined || user.sub !== record.sub) return null
  return { id, record, user, next: record.pending.next }
}

/** The raw session id in the request's cookie, if it has one of the right shape. */
export function sessionIdOf(req: IncomingMessage, as: AsContext): string | null {
  const id = parseCookies(req.headers.cookie).get(sessionCookieName(as.secureCookies))
  return isTokenShaped(id) ? id : null
}

/**
 * End the session (the person signed out: its clients are told, see end-sessions.ts) and return
 * the Set-Cookie that clears the cookie.
 */
export async function endSession(as: AsContext, id: string | null): Promise<string> {
  if (id !== null) await endOneSession(as, hashToken(id), 'logout')
  return serializeCookie('bw_session', '', { secure: as.secureCookies, maxAgeSec: 0 })
}
