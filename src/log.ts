import { pino, destination as pinoDestination, type Logger, type DestinationStream } from 'pino'

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

/** `bindings`: fields on every line besides `service` (a worker process's index and pid). */
export function createLogger(level: string, destination?: DestinationStream, bindings: Readonly<Record<string, unknown>> = {}): Logger {
  return pino(
    {
      level,
      base: { service: 'bearward', ...bindings },
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pinoDestination({ fd: 1, sync: false }),
  )
}

/**
 * The logger for the per-request access line, which carries only fields the
 * gateway builds itself (request id, method, path without query, route
 * name, status, duration): no header, body or token can reach it. It skips
 * the redaction pass, whose wildcard paths cost more than the rest of the
 * line together (about 17 of 23 µs per line on a 2-core bench machine,
 * docs/performance.md), on what is the default level's hottest log call.
 * Same destination and settings otherwise; its level is set with the root's.
 */
export function createAccessLogger(root: Logger): Logger {
  return root.child({}, { redact: { paths: [], censor: '[redacted]' } })
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
