/** An Audit for tests served in-process: keeps each record, in order, and counts it as the real trail does. */
import type { AuditRecord } from '../../src/audit/events.js'
import type { Audit } from '../../src/audit/trail.js'
import type { Metrics } from '../../src/metrics.js'

export function recordingAudit(into: AuditRecord[], metrics: Metrics): Audit {
  return {
    record(event) {
      into.push(event)
      metrics.auditEvents.inc({ event: event.event })
    },
    flushSync: () => undefined,
    close: () => undefined,
  }
}
