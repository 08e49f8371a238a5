/**
 * Resource indicators (RFC 8707): a `resource` parameter narrows the access
 * token's audience to one resource this server issues tokens for: the
 * issuer itself (the default audience), a route's `audience`, or a route's
 * RFC 9728 resource identifier (public_url plus its path, by default).
 *
 * One `resource` per request: every token this server issues carries one
 * audience, and RFC 8707 2 lets a server refuse a combination it will not
 * issue (invalid_target) rather than mint a token good at several resources.
 */
import { InvalidTarget } from '../errors.js'
import type { FormParams } from '../http/body.js'
import type { AsContext } from './context.js'

/**
 * The one rule for a `resource` value, at /authorize and /token alike: an
 * absolute URI without a fragment (RFC 8707 2), naming a resource this
 * server knows; otherwise `invalid_target`.
 * @see https://www.rfc-editor.org/rfc/rfc8707#section-2
 */
export function checkResource(value: string, as: AsContext): string {
  if (!isAbsoluteWithoutFragment(value)) {
    throw new InvalidTarget('The resource must be an absolute URI without a fragment', { cause: 'resource not an absolute URI' })
  }
  if (!as.resources.has(value)) throw new InvalidTarget(undefined, { cause: 'resource not configured' })
  return value
}

function isAbsoluteWithoutFragment(value: string): boolean {
  if (value.includes('#')) return false
  // RFC 3986 4.3: absolute-URI = scheme ":" hier-part [ "?" query ]
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value)) return false
  try {
    new URL(value)
    return true
  } catch {
    return false
  }
}

/**
 * The `resource` named by a token or device authorization request, or null.
 * Repeated is `invalid_target` (one audience per token, see above).
 * @see https://www.rfc-editor.org/rfc/rfc8707#section-2.2
 */
export function requestedResource(form: FormParams, as: AsContext): string | null {
  const all = form.getAll('resource')
  if (all.length === 0) return null
  if (all.length > 1) throw new InvalidTarget('Only one resource may be requested', { cause: 'repeated resource' })
  return checkResource(all[0] as string, as)
}

/**
 * The audience of a token under a grant that was bound to `bound` (or to no
 * resource): a request may repeat the bound resource but not change it; a
 * grant bound to no resource may narrow to one (RFC 8707 2.2).
 */
export function audienceFor(as: AsContext, requested: string | null, bound: string | null): string {
  if (requested !== null && bound !== null && requested !== bound) {
    throw new InvalidTarget('The resource differs from the one authorized', { cause: 'resource differs from grant' })
  }
  return requested ?? bound ?? as.issuer
}
