/**
 * The support-desk actions of the admin pages, each audited with the admin
 * as actor. They go through the functions the rest of bearward uses for the
 * same thing (endSessionsOf, withdrawAccess, the factor and people stores),
 * so a revocation reaches every instance the way the account page's does.
 *
 * NOTE for the merge with the admin API's people endpoints (a-people): when
 * `DELETE /people/{id}/factors`, `DELETE /people/{id}/sessions` and the
 * disable update land, these should call the same functions they do.
 */
import type { IncomingMessage } from 'node:http'
import { epochSeconds } from '../../clock.js'
import type { AuditActor, AuditRecord } from '../../audit/events.js'
import type { AsContext } from '../../as/context.js'
import { configUserBySub } from '../../as/people/directory.js'
import { endSessionsOf } from '../../as/sessions/end-sessions.js'
import { withdrawAccess } from '../../as/withdraw-access.js'
import type { PersonRow } from './views.js'

/** Who is acting and from where, for the audit trail. */
export interface ActingAdmin {
  readonly sub: string
  readonly clientId: string
  readonly req: IncomingMessage
}

function record(as: AsContext, by: ActingAdmin, event: Omit<AuditRecord, 'actor' | 'address' | 'userAgent'>): void {
  const actor: AuditActor = { kind: 'admin', id: by.sub, as: 'person' }
  as.audit.record({
    ...event,
    actor,
    clientId: event.clientId ?? by.clientId,
    address: by.req.socket.remoteAddress ?? null,
    userAgent: by.req.headers['user-agent'] ?? null,
  })
}

/** The person whose `sub` this is (YAML or managed here, disabled or not), or null. */
export async function findPerson(as: AsContext, sub: string): Promise<PersonRow | null> {
  const users = new Map([...as.people.configUsers()].map((u) => [u.username, u]))
  const yaml = configUserBySub(users, sub)
  if (yaml !== undefined) return { username: yaml.username, sub: yaml.sub, source: 'config', disabled: await as.store.people.configDisabled(yaml.username) }
  const stored = await as.store.people.bySub(sub)
  return stored === null ? null : { username: stored.username, sub: stored.sub, source: 'admin', disabled: stored.disabled }
}

/** Remove the person's authenticator app and every passkey; returns how many factors were removed. */
export async function resetFactors(as: AsContext, by: ActingAdmin, sub: string): Promise<number> {
  let removed = 0
  if ((await as.store.totp.get(sub)) !== null) {
    await as.store.totp.delete(sub)
    removed++
    record(as, by, { event: 'factor.removed', subject: { kind: 'factor', id: 'totp', person: sub }, outcome: 'success' })
  }
  for (const p of await as.store.passkeys.list(sub)) {
    if (await as.store.passkeys.remove(sub, p.credentialId)) {
      removed++
      record(as, by, { event: 'factor.removed', subject: { kind: 'factor', id: p.credentialId, person: sub }, outcome: 'success' })
    }
  }
  return removed
}

/** End every session of the person, on every instance; returns how many ended. */
export async function signOutEverywhere(as: AsContext, by: ActingAdmin, sub: string): Promise<number> {
  const ended = await endSessionsOf(as, sub, 'admin')
  record(as, by, { event: 'session.ended', subject: { kind: 'person', id: sub }, outcome: 'success' })
  return ended.sessions.length
}

/** Disable the person: they cannot sign in, their sessions end and their grants are revoked. */
export async function disablePerson(as: AsContext, by: ActingAdmin, person: PersonRow): Promise<void> {
  if (person.source === 'config') await as.store.people.setConfigDisabled(person.username, true)
  else await as.store.people.update(person.username, null, { disabled: true }, epochSeconds(as.clock))
  await endSessionsOf(as, person.sub, 'admin', { grants: true })
  record(as, by, { event: 'person.disabled', subject: { kind: 'person', id: person.sub }, outcome: 'success' })
}

/** Revoke what the person allowed the client: its tokens are refused at once, its refresh families end. */
export async function revokeGrant(as: AsContext, by: ActingAdmin, sub: string, clientId: string): Promise<number> {
  const revoked = await withdrawAccess(as, sub, clientId)
  record(as, by, { event: 'grant.revoked', subject: { kind: 'person', id: sub }, clientId, outcome: 'success' })
  return revoked
}
