/** The approval desk (src/as/approvals/desk.ts): bounds, audit events, the metric, and the decision listeners. */
import t from 'tap'
import { ApprovalDesk, type ApprovalRequest } from '../../src/as/approvals/desk.js'
import type { AuditRecord } from '../../src/audit/events.js'
import { ManualClock } from '../../src/clock.js'
import { Metrics } from '../../src/metrics.js'
import { MemoryStore } from '../../src/store/memory.js'

function request(o: Partial<ApprovalRequest> = {}): ApprovalRequest {
  return {
    kind: 'mcp_tool',
    sub: 'alice',
    clientId: 'agent',
    grantId: 'g1',
    binding: 'b1',
    subject: { kind: 'mcp_tool', route: 'mcp', tool: 'delete_order', argumentsJson: '{}', reuse: 'once' },
    signIn: { acr: [], maxAgeSec: 600 },
    ttlSec: 300,
    ...o,
  }
}

t.test('open, decide, consume: audited, counted, listeners told on the deciding instance', async (t) => {
  const clock = new ManualClock()
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  const audit: AuditRecord[] = []
  const metrics = new Metrics()
  const desk = new ApprovalDesk({ store, clock, audit: { record: (e: AuditRecord) => audit.push(e) } as never, metrics, maxPendingPerPerson: 2 })
  const decided: string[] = []
  const opened: string[] = []
  desk.onDecided((r) => {
    decided.push(`${r.id}:${r.status}`)
  })
  desk.onOpened((r) => {
    opened.push(r.id)
  })
  desk.onDecided(() => {
    throw new Error('a failing listener does not undo the decision')
  })
  const first = await desk.open(request())
  if (first.outcome !== 'created') throw new Error('not created')
  t.equal(first.record.id.length, 22, '128 random bits, base64url')
  t.equal((await desk.open(request())).outcome, 'pending')
  await desk.open(request({ binding: 'b2' }))
  t.equal((await desk.open(request({ binding: 'b3' }))).outcome, 'too_many', 'bounded per person')
  t.same(opened.length, 2)
  t.equal(metrics.approvals.get({ kind: 'mcp_tool', outcome: 'requested' }), 2)
  t.equal(metrics.approvals.get({ kind: 'mcp_tool', outcome: 'again' }), 1)
  t.equal(metrics.approvals.get({ kind: 'mcp_tool', outcome: 'refused' }), 1)

  const by = { sub: 'alice', acr: 'mfa', address: '192.0.2.1', userAgent: 'ua' }
  t.equal(await desk.decide(first.record.id, 'approved', { ...by, sub: 'bob' }, 60), null, 'not bob’s')
  const approved = await desk.decide(first.record.id, 'approved', by, 60)
  t.equal(approved?.expiresAt, Math.floor(clock.now() / 1000) + 60)
  t.same(decided, [`${first.record.id}:approved`])
  t.ok(await desk.consume('alice', 'agent', 'g1', 'b1'))
  t.equal(metrics.approvals.get({ kind: 'mcp_tool', outcome: 'passed' }), 1)
  t.same(
    audit.map((e) => [e.event, e.outcome, e.reason]),
    [
      ['approval.requested', 'success', 'mcp_tool'],
      ['approval.requested', 'success', 'still_pending'],
      ['approval.requested', 'success', 'mcp_tool'],
      ['approval.requested', 'failure', 'too_many_pending'],
      ['approval.approved', 'success', 'mcp_tool'],
    ],
  )
  t.match(audit[4], { actor: { kind: 'person', id: 'alice' }, subject: { kind: 'approval', id: first.record.id }, clientId: 'agent', address: '192.0.2.1' })
})
