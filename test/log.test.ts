/**
 * The access line (src/log.ts writeAccessLine) is built as one string; it
 * must be exactly the line pino wrote for the same fields, so every reader
 * of the log sees what it saw before.
 */
import { Writable } from 'node:stream'
import t from 'tap'
import type { DestinationStream } from 'pino'
import { createAccessLogger, createLogger, timeFieldAt, writeAccessLine } from '../src/log.js'

/** A destination that keeps every line written to it. */
function capture(): { dest: DestinationStream; lines: string[] } {
  const lines: string[] = []
  const dest = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  return { dest: dest as unknown as DestinationStream, lines }
}

/** A line with its time value replaced, so two lines written a millisecond apart compare. */
const timeless = (line: string): string => line.replace(/"time":"[^"]*"/, '"time":"T"')

const CASES: Array<{ what: string; fields: [string, string | null, string, string, string, number, number] }> = [
  { what: 'a proxied request', fields: ['5f1c0a2b3c4d-1a', '4bf92f3577b34da6a3ce929d0e0e4736', 'GET', '/api/items', 'api', 200, 1.3] },
  { what: 'an AS endpoint refusal', fields: ['abc-123', '0af7651916cd43dd8448eb211c80319c', 'POST', '/token', 'as:token', 401, 12] },
  { what: 'no trace id', fields: ['abc-124', null, 'DELETE', '/', 'unmatched', 404, 0] },
  { what: 'a path with quotes and backslashes', fields: ['abc-125', null, 'GET', '/a"b\\c', 'api', 200, 0.1] },
  { what: 'a path with control characters and non-ASCII', fields: ['abc-126', null, 'GET', '/caf\u00e9/\u0001\u001f\u2028/\ud83d\ude00', 'api', 502, 30000.5] },
]

t.test('the access line is what pino wrote for the same fields, byte for byte but the time', async (t) => {
  for (const bindings of [{}, { worker: 2, pid: 4242 }]) {
    const ours = capture()
    const theirs = capture()
    const log = createAccessLogger(createLogger('info', ours.dest, bindings))
    const reference = createAccessLogger(createLogger('info', theirs.dest, bindings))
    for (const c of CASES) {
      const [reqId, traceId, method, path, route, status, ms] = c.fields
      writeAccessLine(log, reqId, traceId, method, path, route, status, ms)
      reference.info({ req_id: reqId, trace_id: traceId ?? undefined, method, path, route, status, ms }, 'request')
    }
    t.equal(ours.lines.length, CASES.length)
    CASES.forEach((c, i) => {
      t.equal(timeless(String(ours.lines[i])), timeless(String(theirs.lines[i])), `${c.what} (bindings ${JSON.stringify(bindings)})`)
      const parsed = JSON.parse(String(ours.lines[i])) as Record<string, unknown>
      t.equal(parsed.path, c.fields[3], 'the path reads back as it was')
      t.equal(Object.hasOwn(parsed, 'trace_id'), c.fields[1] !== null, 'trace_id only when there is one')
      t.match(parsed.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    })
  }
})

t.test('client_id, sub and a refusal reason are on the line when known, byte for byte as pino writes them', async (t) => {
  const ours = capture()
  const theirs = capture()
  const log = createAccessLogger(createLogger('info', ours.dest))
  const reference = createAccessLogger(createLogger('info', theirs.dest))
  const who: Array<[string | null, string | null, string | null]> = [
    ['web', 'alice', null],
    ['web', null, 'insufficient_scope'],
    [null, null, 'missing'],
    ['odd "client"\\', 'sub\u2028x', 'expired'],
  ]
  for (const [clientId, sub, reason] of who) {
    writeAccessLine(log, 'r1', null, 'GET', '/orders/1', 'orders', reason === null ? 200 : 401, 1, clientId, sub, reason)
    reference.info(
      {
        req_id: 'r1',
        method: 'GET',
        path: '/orders/1',
        route: 'orders',
        status: reason === null ? 200 : 401,
        ms: 1,
        client_id: clientId ?? undefined,
        sub: sub ?? undefined,
        reason: reason ?? undefined,
      },
      'request',
    )
  }
  who.forEach((w, i) => {
    t.equal(timeless(String(ours.lines[i])), timeless(String(theirs.lines[i])))
    const parsed = JSON.parse(String(ours.lines[i])) as Record<string, unknown>
    t.equal(parsed.client_id, w[0] ?? undefined)
    t.equal(parsed.sub, w[1] ?? undefined)
    t.equal(parsed.reason, w[2] ?? undefined)
  })
})

t.test('nothing is written when the level is above info, and the line comes back with it', async (t) => {
  const { dest, lines } = capture()
  const root = createLogger('warn', dest)
  const log = createAccessLogger(root)
  log.level = 'warn'
  writeAccessLine(log, 'quiet', null, 'GET', '/', 'r', 200, 1)
  t.same(lines, [])
  log.level = 'info'
  writeAccessLine(log, 'loud', null, 'GET', '/', 'r', 200, 1)
  t.equal(lines.length, 1)
  t.match(JSON.parse(String(lines[0])), { req_id: 'loud', level: 30, msg: 'request', service: 'bearward' })
})

t.test('the time field is what toISOString writes, across milliseconds, seconds, days and years, and back', async (t) => {
  const start = Date.UTC(2026, 11, 31, 23, 59, 58, 990)
  const times = [
    ...Array.from({ length: 3000 }, (_, i) => start + i), // 23:59:58.990 to the next year
    start + 5, // back in time: the cache must not keep the later second
    Date.UTC(2024, 1, 29, 12, 0, 0, 0), // a leap day, .000
    Date.UTC(1970, 0, 1, 0, 0, 0, 1),
    Date.UTC(2038, 0, 19, 3, 14, 8, 999),
    ...Array.from({ length: 2000 }, (_, i) => 1_700_000_000_000 + i * 7_919_993), // spread over months, every millisecond value
  ]
  let wrong = 0
  for (const ms of times) if (timeFieldAt(ms) !== `,"time":"${new Date(ms).toISOString()}"`) wrong++
  t.equal(wrong, 0, `${times.length} times written as toISOString writes them`)
  t.equal(timeFieldAt(start + 1010), ',"time":"2027-01-01T00:00:00.000Z"', 'the first millisecond of a year')
})
