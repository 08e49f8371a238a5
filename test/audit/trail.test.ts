/**
 * The audit trail written to a file and checked (src/audit/): a chain that
 * holds verifies; a line changed, removed or moved is found by its line
 * number; two processes' chains interleaved in one file verify apart; a
 * secret has no field to land in.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ManualClock } from '../../src/clock.js'
import { Metrics } from '../../src/metrics.js'
import { AuditTrail } from '../../src/audit/trail.js'
import { verifyAuditText } from '../../src/audit/chain.js'
import { tokenByJti } from '../../src/audit/events.js'

const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImp0aSI6Imp0aS0xIn0.c2lnbmF0dXJlLWJ5dGVz'

function writeTrail(path: string, clock = new ManualClock(), metrics = new Metrics()): AuditTrail {
  const trail = new AuditTrail({ kind: 'file', path }, clock, metrics.auditEvents)
  for (let i = 0; i < 5; i++) {
    trail.record({
      event: 'signin.succeeded',
      actor: { kind: 'person', id: `user${i}` },
      subject: { kind: 'person', id: `user${i}` },
      clientId: 'web',
      address: '203.0.113.7',
      userAgent: 'test-agent',
      outcome: 'success',
    })
    clock.advance(1000)
  }
  return trail
}

function freshFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'bearward-audit-')), 'audit.jsonl')
}

t.test('a trail written to a file verifies, with a marker line first', async (t) => {
  const path = freshFile()
  const metrics = new Metrics()
  writeTrail(path, new ManualClock(), metrics).close()
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n')
  t.equal(lines.length, 6)
  const first = JSON.parse(lines[0] as string) as Record<string, unknown>
  t.match(first, { log: 'audit', event: 'audit.started', seq: 0, prev: null })
  const second = JSON.parse(lines[1] as string) as Record<string, unknown>
  t.match(second, {
    event: 'signin.succeeded',
    seq: 1,
    actor: { kind: 'person', id: 'user0' },
    client_id: 'web',
    address: '203.0.113.7',
    user_agent: 'test-agent',
    outcome: 'success',
    reason: null,
  })
  t.match(second.time, /^\d{4}-\d\d-\d\dT/)
  t.same(verifyAuditText(readFileSync(path, 'utf8')), { ok: true, lines: 6, events: 5, chains: 1, skipped: 0 })
  t.equal(metrics.auditEvents.get({ event: 'signin.succeeded' }), 5)
  t.match(metrics.render(), /bearward_audit_events_total\{event="signin.succeeded"\} 5/)
})

t.test('a changed line is found at the line after it, which names it', async (t) => {
  const path = freshFile()
  writeTrail(path).close()
  const lines = readFileSync(path, 'utf8').split('\n')
  lines[2] = (lines[2] as string).replace('"user1"', '"mallory"')
  const result = verifyAuditText(lines.join('\n'))
  t.match(result, { ok: false, line: 4, reason: /line 3 was changed/ })
})

t.test('a removed line is found where the sequence breaks', async (t) => {
  const path = freshFile()
  writeTrail(path).close()
  const lines = readFileSync(path, 'utf8').split('\n')
  lines.splice(2, 1)
  t.match(verifyAuditText(lines.join('\n')), { ok: false, line: 3, reason: /seq 3 .* where 2 was expected/ })
})

t.test('two lines swapped are found', async (t) => {
  const path = freshFile()
  writeTrail(path).close()
  const lines = readFileSync(path, 'utf8').split('\n')
  ;[lines[2], lines[3]] = [lines[3] as string, lines[2] as string]
  t.match(verifyAuditText(lines.join('\n')), { ok: false, line: 3, reason: /seq 3 .* where 2 was expected/ })
})

t.test('a removed start marker is found', async (t) => {
  const path = freshFile()
  writeTrail(path).close()
  const lines = readFileSync(path, 'utf8').split('\n')
  lines.splice(0, 1)
  t.match(verifyAuditText(lines.join('\n')), { ok: false, line: 1, reason: /no `audit.started` line/ })
})

t.test('chains of two processes in one file verify apart; log lines are skipped', async (t) => {
  const path = freshFile()
  const a = writeTrail(path)
  const b = writeTrail(path)
  a.record({ event: 'session.ended', actor: { kind: 'person', id: 'x' }, subject: { kind: 'session', id: 's1' }, outcome: 'success' })
  a.close()
  b.close()
  writeFileSync(path, `${readFileSync(path, 'utf8')}{"level":30,"msg":"a log line"}\n`)
  t.same(verifyAuditText(readFileSync(path, 'utf8')), { ok: true, lines: 14, events: 11, chains: 2, skipped: 1 })
})

t.test('a token has no field to land in: a jti is taken from claims, a token-shaped value is not written', async (t) => {
  const path = freshFile()
  const trail = new AuditTrail({ kind: 'file', path }, new ManualClock(), new Metrics().auditEvents)
  trail.record({
    event: 'token.revoked',
    actor: { kind: 'client', id: TOKEN },
    subject: tokenByJti({ jti: 'jti-1' }),
    clientId: TOKEN,
    userAgent: TOKEN,
    outcome: 'failure',
    reason: `bad token ${TOKEN}`,
  })
  trail.close()
  const text = readFileSync(path, 'utf8')
  t.notOk(text.includes(TOKEN), 'the token appears nowhere')
  t.match(text, /"subject":\{"kind":"token","jti":"jti-1"\}/)
  t.match(text, /"reason":"unspecified"/)
  t.throws(() => tokenByJti({ jti: TOKEN }), /a jti was expected/)
  t.ok(verifyAuditText(text).ok)
})

t.test('lines are in the file as soon as they are recorded (nothing waits in memory)', async (t) => {
  const path = freshFile()
  const trail = new AuditTrail({ kind: 'file', path }, new ManualClock(), new Metrics().auditEvents)
  t.teardown(() => trail.close())
  trail.record({ event: 'config.reloaded', actor: { kind: 'system' }, subject: { kind: 'config', digest: 'abc' }, outcome: 'success' })
  t.equal(readFileSync(path, 'utf8').trimEnd().split('\n').length, 2)
})
