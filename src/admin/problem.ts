/**
 * The admin API's errors: RFC 9457 problem details (`application/problem+json`
 * with type, title, status, detail). `type` is a stable URI per kind of
 * problem under docs/admin.md, so a script can switch on it.
 * @see https://www.rfc-editor.org/rfc/rfc9457
 */
import { STATUS_CODES, type ServerResponse } from 'node:http'
import { NO_STORE } from '../http/reply.js'

/** The problem types the API answers with; each is documented in docs/admin.md. */
export type ProblemKind =
  | 'invalid_request'
  | 'invalid_cursor'
  | 'not_found'
  | 'method_not_allowed'
  | 'unsupported_media_type'
  | 'body_too_large'
  | 'precondition_failed'
  | 'precondition_required'
  | 'conflict'
  | 'read_only'
  | 'unauthorized'
  | 'forbidden'
  | 'store_unavailable'
  | 'server_error'

export const PROBLEM_TYPE_BASE = 'https://bearward.dev/problems/admin/'

/** A refusal the admin API renders as a problem document. */
export class AdminProblem extends Error {
  readonly status: number
  readonly kind: ProblemKind
  readonly detail: string
  readonly headers: Readonly<Record<string, string>>
  /** A code for the audit trail and logs (an OAuth error such as `insufficient_scope`); absent: `kind`. */
  readonly reason: string | undefined
  constructor(status: number, kind: ProblemKind, detail: string, headers: Readonly<Record<string, string>> = {}, reason?: string) {
    super(detail)
    this.status = status
    this.kind = kind
    this.detail = detail
    this.headers = headers
    this.reason = reason
  }
}

export const notFound = (detail = 'No such resource'): AdminProblem => new AdminProblem(404, 'not_found', detail)
export const badRequest = (detail: string): AdminProblem => new AdminProblem(400, 'invalid_request', detail)
export const conflict = (detail: string): AdminProblem => new AdminProblem(409, 'conflict', detail)

/** The problem document of `p`. */
export function problemBody(p: { status: number; kind: ProblemKind; detail: string }): Record<string, unknown> {
  return { type: `${PROBLEM_TYPE_BASE}${p.kind}`, title: STATUS_CODES[p.status] ?? 'Error', status: p.status, detail: p.detail }
}

/** Write a problem answer (never cached: it may name what the caller may not do). */
export function sendProblem(res: ServerResponse, p: AdminProblem, extraHeaders: Readonly<Record<string, string>> = {}): void {
  const payload = JSON.stringify(problemBody(p))
  res.statusCode = p.status
  for (const [name, value] of Object.entries({ ...NO_STORE, ...extraHeaders, ...p.headers })) res.setHeader(name, value)
  res.setHeader('content-type', 'application/problem+json')
  res.setHeader('content-length', Buffer.byteLength(payload))
  res.end(res.req.method === 'HEAD' ? undefined : payload)
}
