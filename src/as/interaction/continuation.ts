import type { ServerResponse } from 'node:http'
import { InvalidRequest } from '../../errors.js'
import type { FormParams } from '../../http/body.js'
import type { UpstreamContinuation } from '../../store/types.js'
import type { AsContext } from '../context.js'
import { ACCOUNT_NEXT } from './account.js'
import { approvalIdOfNext } from './approval-next.js'
import { parseAuthorizationRequest, type AuthorizationRequest } from './authorization-request.js'
import { answerAuthorizationError } from './authorization-error.js'
import { showError } from './respond.js'
import { normalizeUserCode } from '../../tokens/user-code.js'

/** What a sign-in continues: an authorization request, a device approval, or the account page. */
export type Continuation =
  | { kind: 'authorize'; request: AuthorizationRequest }
  | { kind: 'device'; userCode: string }
  | { kind: 'account' }
  | { kind: 'approve'; id: string }

/**
 * The continuation a sign-in form carries (`request`, `user_code` or `next`),
 * the authorization request validated again. Null when it was refused; the
 * refusal has then been answered (an error page, or the client's redirect URI).
 */
export async function readContinuation(
  res: ServerResponse,
  as: AsContext,
  form: { request: string | undefined; userCode: string | undefined; next: string | undefined },
): Promise<Continuation | null> {
  if (form.request !== undefined) {
    const parsed = await parseAuthorizationRequest(form.request, as)
    if (parsed.kind === 'page') {
      showError(res, parsed.error)
      return null
    }
    if (parsed.kind === 'redirect') {
      // The person is still signing in: a client nobody vouched for gets no redirect yet.
      answerAuthorizationError(res, parsed.target, parsed.error, { status: 303, signedIn: false, client: parsed.client })
      return null
    }
    return { kind: 'authorize', request: parsed.request }
  }
  if (form.userCode !== undefined) {
    const userCode = normalizeUserCode(form.userCode)
    if (userCode === null) {
      showError(res, new InvalidRequest('The device code is not valid'))
      return null
    }
    return { kind: 'device', userCode }
  }
  if (form.next === ACCOUNT_NEXT) return { kind: 'account' }
  const approval = approvalIdOfNext(form.next)
  if (approval !== null) return { kind: 'approve', id: approval }
  showError(res, new InvalidRequest('The sign-in form does not say what it is for'))
  return null
}

/** A continuation as a store record keeps it (the authorization request as its raw query, validated again when read). */
export function storedContinuation(c: Continuation): UpstreamContinuation {
  if (c.kind === 'authorize') return { kind: 'authorize', request: c.request.raw }
  return c
}

/** The fields of a sign-in form that name its continuation. */
export function continuationFields(form: FormParams): { request: string | undefined; userCode: string | undefined; next: string | undefined } {
  return { request: form.get('request'), userCode: form.get('user_code'), next: form.get('next') }
}
