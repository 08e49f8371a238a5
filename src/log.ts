import { pino, symbols as pinoSymbols, type Logger, type DestinationStream } from 'pino'
import { BatchedLines } from './log-batch.js'

export type { Logger }

/**
 * Paths pino blanks out wherever they appear in a logged object. Tokens,
 * secrets, passwords and cookies never reach the log (tested in test/log.test.ts).
 */
export const REDACT_PATHS: readonly string[] = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.authorization',
  '*.cookie',
  '*.password',
  '*.client_secret',
  '*.clientSecret',
  '*.secret',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.id_token',
  '*.code',
  '*.code_verifier',
  '*.device_code',
  'password',
  'client_secret',
  'token',
  'access_token',
  'refresh_token',
  'code_verifier',
]

/**
 * Log lines wait in memory until this many characters are batched (about
 * 250 access lines), or until {@link LOG_FLUSH_INTERVAL_MS} has passed since
 * the first of them, then go out together (in writes of at most PIPE_BUF
 * bytes each, log-batch.ts says why). Batches of 4 KiB, one write each, cost
 * the JWT route's throughput 19 % at `info` against `warn`; 64 KiB, 8 %
 * better than `warn` within the noise (docs/performance.md).
 */
export const LOG_BUFFER_BYTES = 65_536

/**
 * The longest a batched line waits. What is batched is also written on
 * process exit, whether by `process.exit` (SIGTERM, SIGINT), the end of the
 * event loop or an uncaught exception (log-batch.ts flushes synchronously on
 * 'exit'); only a process killed outright (SIGKILL, an OOM kill) loses what
 * it had batched: at most this interval's lines (docs/performance.md).
 */
export const LOG_FLUSH_INTERVAL_MS = 100

/**
 * What stdout may hold back when it is non-blocking and its reader stops
 * reading, before whole batches are dropped (and counted in a warning once
 * it reads again). A blocking stdout, the usual kind, blocks instead.
 */
export const LOG_BACKLOG_BYTES = 16 * 1024 * 1024

/** The warning written when the backlog overflowed: a line as pino writes one. */
function droppedLine(count: number): string {
  return `{"level":40,"time":"${new Date().toISOString()}","service":"bearward","pid":${process.pid},"dropped":${count},"msg":"log lines dropped: stdout was not reading"}\n`
}

/** stdout, batched (see {@link LOG_BUFFER_BYTES}), flushed on an interval and at exit (log-batch.ts says how). */
export function bufferedStdout(): DestinationStream {
  return BatchedLines.toFd(1, {
    maxChars: LOG_BUFFER_BYTES,
    maxWaitMs: LOG_FLUSH_INTERVAL_MS,
    maxBacklogBytes: LOG_BACKLOG_BYTES,
    retryMs: 10,
    droppedLine,
  })
}

/** `bindings`: fields on every line besides `service` (a worker process's index and pid). */
export function createLogger(level: string, destination?: DestinationStream, bindings: Readonly<Record<string, unknown>> = {}): Logger {
  return pino(
    {
      level,
      base: { service: 'bearward', ...bindings },
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? bufferedStdout(),
  )
}

/**
 * The logger for the per-request access line, which carries only fields the
 * gateway builds itself (request id, method, path without query, route
 * name, status, duration): no header, body or token can reach it. It skips
 * the redaction pass, whose wildcard paths cost more than the rest of the
 * line together (docs/performance.md, "The access line skips pino's
 * redaction pass"), on what is the default level's hottest log call.
 * Same destination and settings otherwise; its level is set with the root's.
 */
export function createAccessLogger(root: Logger): Logger {
  return root.child({}, { redact: { paths: [], censor: '[redacted]' } })
}

/** A JSON string literal; the common case (printable ASCII without `"` or `\\`) without JSON.stringify. */
function jsonString(value: string): string {
  return PLAIN.test(value) ? `"${value}"` : JSON.stringify(value)
}
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** `000` … `999`, the milliseconds of an ISO 8601 time. */
const MILLIS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'))

let timeMs = Number.NaN
let timePart = ''
let timeSec = Number.NaN
/** `,"time":"2026-11-29T08:09:48.` for the second of {@link timeSec}. */
let secondPart = ''

/**
 * The `,"time":"…"` part of a line for the epoch ms `now`: what
 * `new Date(now).toISOString()` writes (pino's isoTime), made once per
 * millisecond from a prefix made once per second. On Node 20
 * `toISOString()` took about 2 µs a call against 50-80 ns for this (2026-11-29,
 * 2 million calls each), and at a few thousand requests a second most
 * requests start a new millisecond.
 */
export function timeFieldAt(now: number): string {
  if (now !== timeMs) {
    const sec = Math.floor(now / 1000)
    if (sec !== timeSec) {
      timeSec = sec
      secondPart = `,"time":"${new Date(sec * 1000).toISOString().slice(0, -4)}`
    }
    timeMs = now
    timePart = `${secondPart}${MILLIS[now - sec * 1000]}Z"`
  }
  return timePart
}

/** pino's level number for `info`. */
const INFO = 30

/**
 * Write one access line at `info` through `log` (from
 * {@link createAccessLogger}), when its level lets info lines out. The line
 * is what `log.info({ req_id, trace_id, method, path, route, status, ms,
 * client_id, sub, reason }, 'request')` writes, byte for byte
 * (test/log.test.ts), built as one string: no object per request, no pino
 * serialization pass. A null `traceId`, `clientId`, `sub` or `reason` leaves
 * its field out, as pino leaves out an undefined one.
 */
export function writeAccessLine(
  log: Logger,
  reqId: string,
  traceId: string | null,
  method: string,
  path: string,
  route: string,
  status: number,
  ms: number,
  clientId: string | null = null,
  sub: string | null = null,
  reason: string | null = null,
): void {
  if (!log.isLevelEnabled('info')) return
  const stream = (log as unknown as Record<symbol, DestinationStream>)[pinoSymbols.streamSym]
  const bindings = (log as unknown as Record<symbol, string>)[pinoSymbols.chindingsSym]
  if (stream === undefined || typeof bindings !== 'string') {
    log.info(
      {
        req_id: reqId,
        trace_id: traceId ?? undefined,
        method,
        path,
        route,
        status,
        ms,
        client_id: clientId ?? undefined,
        sub: sub ?? undefined,
        reason: reason ?? undefined,
      },
      'request',
    )
    return
  }
  stream.write(
    `{"level":${INFO}${timeFieldAt(Date.now())}${bindings},"req_id":${jsonString(reqId)}${traceId === null ? '' : `,"trace_id":${jsonString(traceId)}`},"method":${jsonString(method)},"path":${jsonString(path)},"route":${jsonString(route)},"status":${status},"ms":${ms}${clientId === null ? '' : `,"client_id":${jsonString(clientId)}`}${sub === null ? '' : `,"sub":${jsonString(sub)}`}${reason === null ? '' : `,"reason":${jsonString(reason)}`},"msg":"request"}\n`,
  )
}

/** Remove userinfo (e.g. a Redis password) from a URL before it is logged. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.username || u.password) {
      u.username = u.username ? '[redacted]' : ''
      u.password = u.password ? '[redacted]' : ''
    }
    return u.toString()
  } catch {
    return '[unparseable url]'
  }
}
