/**
 * Entity tags of the admin API's resources and the `If-Match` rule of its
 * writes (docs/admin.md, "Concurrency"):
 * - a stored resource's ETag is its revision, a number every write bumps
 *   atomically in the store, so two writes made against the same ETag cannot
 *   both win (the store compares and sets in one step);
 * - a read-only resource (a YAML client) has the hash of its representation;
 * - `PATCH` requires `If-Match` (428 without it); `DELETE` and actions take
 *   it when given. A stale one is 412.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { AdminProblem } from './problem.js'

/** The strong ETag of a stored revision. */
export function revisionTag(revision: number): string {
  return `"r${revision}"`
}

/** The strong ETag of a representation nothing writes (its content hash). */
export function contentTag(body: unknown): string {
  return `"h${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 22)}"`
}

/** The revision an `If-Match` names, null when absent; `*` matches any (-1). A list or a weak tag is 400. */
export function ifMatchRevision(req: IncomingMessage): number | null {
  const raw = req.headers['if-match']
  if (raw === undefined) return null
  const value = raw.trim()
  if (value === '*') return -1
  // Strong comparison (RFC 9110 8.8.3.2) is of the characters: "r01" is not the tag "r1" we sent.
  const m = /^"r([1-9][0-9]{0,14})"$/.exec(value)
  if (m === null) {
    // Another resource's tag, a weak one, or a list: it can never match a revision of ours.
    throw new AdminProblem(412, 'precondition_failed', 'If-Match does not name the current revision')
  }
  return Number(m[1])
}

/** `If-Match` of a write that requires it: 428 when missing. */
export function requiredIfMatch(req: IncomingMessage): number {
  const revision = ifMatchRevision(req)
  if (revision === null) throw new AdminProblem(428, 'precondition_required', 'Send If-Match with the ETag of the resource you read')
  return revision
}

/** Throw 412 unless `expected` (from If-Match; -1 is `*`, null absent) matches `current`. */
export function checkRevision(expected: number | null, current: number): void {
  if (expected === null || expected === -1) return
  if (expected !== current) throw new AdminProblem(412, 'precondition_failed', 'The resource changed since you read it: read it again')
}
