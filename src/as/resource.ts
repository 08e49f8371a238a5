/**
 * Resource indicators (RFC 8707): a `resource` parameter narrows the access
 * token's audience to one resource this server issues tokens for.
 */
import { InvalidTarget } from '../errors.js'
import type { FormParams } from '../http/body.js'
import type { AsContext } from './context.js'

/**
 * The `resource` named by a token or device authorization request, or null.
 * It must be one of the audiences the configured routes accept (or the
 * issuer itself); anything else is `invalid_target`.
 * @see https://www.rfc-editor.org/rfc/rfc8707#section-2
 */
export function requestedResource(form: FormParams, as: AsContext): string | null {
  const resource = form.get('resource')
  if (resource === undefined) return null
  if (!as.resources.has(resource)) throw new InvalidTarget(undefined, { cause: 'resource not configured' })
  return resource
}

/**
 * The audience of a token under a grant that was bound to `bound` (or to no
 * resource): a request may repeat the bound resource but not change it.
 */
export function audienceFor(as: AsContext, requested: string | null, bound: string | null): string {
  if (requested !== null && bound !== null && requested !== bound) {
    throw new InvalidTarget('The resource differs from the one authorized', { cause: 'resource differs from grant' })
  }
  return requested ?? bound ?? as.issuer
}
