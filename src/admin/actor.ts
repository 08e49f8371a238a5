/** The audit trail's name for an admin API caller, and the fields of an admin request every event carries. */
import type { IncomingMessage } from 'node:http'
import type { AuditActor } from '../audit/events.js'
import type { AdminCaller } from './auth.js'

export function adminActor(caller: AdminCaller): AuditActor {
  return { kind: 'admin', id: caller.sub, as: caller.person ? 'person' : 'client' }
}

/** Address and user agent of `req` (the admin listener has no trusted proxies: the socket's peer). */
export function requestOrigin(req: IncomingMessage): { address: string | null; userAgent: string | null } {
  return { address: req.socket.remoteAddress ?? null, userAgent: req.headers['user-agent'] ?? null }
}
