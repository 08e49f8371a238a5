/**
 * How a sign-in comes back to the approval page (issue #41): the login forms' `next` field holds
 * `approve:<id>`, and the page's path carries the id in its query (`approve?id=`), like `device?user_code=`.
 * The page lives beside the others, so its relative links (the stylesheet, the login form) keep working.
 */

/** An approval id as the desk makes them: 16 random bytes, base64url. Anything else is no approval. */
const APPROVAL_ID = /^[A-Za-z0-9_-]{22}$/

const NEXT_PREFIX = 'approve:'

export function isApprovalId(value: string | undefined): value is string {
  return value !== undefined && APPROVAL_ID.test(value)
}

/** The approval page, relative to the issuer (and to the other pages). */
export function approvalPagePath(id: string): string {
  return `approve?id=${encodeURIComponent(id)}`
}

/** The approval page's absolute URL: what the gateway's elicitation and the notification carry. */
export function approvalPageUrl(issuer: string, id: string): string {
  return `${issuer}/${approvalPagePath(id)}`
}

/** The login forms' `next` value that returns to approval `id`. */
export function approvalNext(id: string): string {
  return `${NEXT_PREFIX}${id}`
}

/** The approval id a `next` value names, or null. */
export function approvalIdOfNext(next: string | undefined): string | null {
  if (next === undefined || !next.startsWith(NEXT_PREFIX)) return null
  const id = next.slice(NEXT_PREFIX.length)
  return isApprovalId(id) ? id : null
}
