/**
 * What the people endpoints do beyond reading: find the person an id names
 * (a YAML user or an admin-managed person), disable, remove factors, end
 * sessions, and audit each change. One module for the API and the pages.
 */
import type { IncomingMessage } from 'node:http'
import type { AuditActor, AuditEventName, AuditRecord } from '../../audit/events.js'
import type { AsContext } from '../../as/context.js'
import { endSessionsOf } from '../../as/sessions/end-sessions.js'
import type { UserConfig } from '../../config/validated-config.js'
import type { PersonRecord } from '../../store/types.js'
import type { AdminCaller } from '../auth.js'
import { notFound } from '../problem.js'

/** The person `id` (a username) names: a YAML user or a stored person; 404 otherwise. */
export type Found = { kind: 'config'; user: UserConfig; disabled: boolean } | { kind: 'admin'; record: PersonRecord }

export async function findPerson(as: AsContext, id: string): Promise<Found> {
  const user = as.people.configUser(id)
  if (user !== undefined) return { kind: 'config', user, disabled: await as.store.people.configDisabled(id) }
  const record = await as.store.people.get(id)
  if (record === null) throw notFound('No person with this id')
  return { kind: 'admin', record }
}

export function subOf(found: Found): string {
  return found.kind === 'config' ? found.user.sub : found.record.sub
}

export function adminActor(caller: AdminCaller): AuditActor {
  return { kind: 'admin', id: caller.sub, as: caller.person ? 'person' : 'client' }
}

/** Record an admin action on a person in the audit trail. */
export function auditPerson(as: AsContext, req: IncomingMessage, caller: AdminCaller, event: AuditEventName, subject: AuditRecord['subject']): void {
  as.audit.record({
    event,
    actor: adminActor(caller),
    subject,
    clientId: caller.clientId,
    address: as.clientAddress.of(req),
    userAgent: req.headers['user-agent'] ?? null,
    outcome: 'success',
  })
}

/** End every session of `sub` and, with `grants`, revoke their grants (tokens refused, streams ended, on every instance). */
export async function endEverything(as: AsContext, caller: AdminCaller, sub: string, grants: boolean): Promise<{ sessions: number; grants: number }> {
  // endSessionsOf records session.ended (and grant.revoked) with this actor.
  const ended = await endSessionsOf(as, sub, 'admin', { grants, actor: adminActor(caller) })
  return { sessions: ended.sessions.length, grants: ended.grantsRevoked ?? 0 }
}

/** Remove every passkey and the authenticator app of `sub`; returns what was removed (by factor id). */
export async function removeFactors(as: AsContext, sub: string, only: string | null): Promise<string[]> {
  const removed: string[] = []
  if (only === null || only === 'totp') {
    const totp = await as.store.totp.get(sub)
    if (totp !== null) {
      await as.store.totp.delete(sub)
      removed.push('totp')
    }
  }
  for (const p of await as.store.passkeys.list(sub)) {
    if (only !== null && only !== p.credentialId) continue
    if (await as.store.passkeys.remove(sub, p.credentialId)) removed.push(p.credentialId)
  }
  return removed
}
