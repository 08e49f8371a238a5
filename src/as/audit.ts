/**
 * The authorization server's audit events (src/audit/): who a request came
 * from, and the sign-in, grant and token events recorded at the one place
 * each happens. The admin API records its own through `as.audit` the same way.
 */
import type { IncomingMessage } from 'node:http'
import type { AuditActor, AuditRecord } from '../audit/events.js'
import type { AsContext } from './context.js'

/** The caller's address (as the throttles see it) and user agent, for an event. */
export function requestOrigin(as: AsContext, req: IncomingMessage): { address: string; userAgent: string | null } {
  const ua = req.headers['user-agent']
  return { address: as.clientAddress.of(req), userAgent: typeof ua === 'string' ? ua : null }
}

/** How a sign-in went: `method` names the factor (`password`, `totp`, `passkey`, `provider:ID`), as a reason code does. */
export function auditSignIn(
  as: AsContext,
  req: IncomingMessage,
  outcome: { ok: true; sub: string; method: string } | { ok: false; sub: string | null; reason: string },
): void {
  const origin = requestOrigin(as, req)
  // A failed sign-in names the person only when the username is one: what was typed into the
  // username field may be a password typed in the wrong box, and is never written.
  const event: AuditRecord = outcome.ok
    ? {
        event: 'signin.succeeded',
        actor: { kind: 'person', id: outcome.sub },
        subject: { kind: 'person', id: outcome.sub },
        ...origin,
        outcome: 'success',
        reason: outcome.method,
      }
    : {
        event: 'signin.failed',
        actor: { kind: 'anonymous' },
        subject: outcome.sub === null ? { kind: 'none' } : { kind: 'person', id: outcome.sub },
        ...origin,
        outcome: 'failure',
        reason: outcome.reason,
      }
  as.audit.record(event)
}

/** Who revoked grants on withdrawal: the person themself (account page) by default, or another actor (an operator). */
export interface GrantEnding {
  readonly event: 'grant.withdrawn' | 'grant.revoked'
  readonly actor: AuditActor
  readonly reason?: string
  /** The request that asked, when there was one. */
  readonly origin?: { address: string; userAgent: string | null }
}

/** A person's factor added or removed on their account page. `id`: `totp`, or a passkey's credential id (public). */
export function auditFactor(as: AsContext, req: IncomingMessage, event: 'factor.added' | 'factor.removed', sub: string, id: string): void {
  as.audit.record({
    event,
    actor: { kind: 'person', id: sub },
    subject: { kind: 'factor', id, person: sub },
    ...requestOrigin(as, req),
    outcome: 'success',
  })
}
