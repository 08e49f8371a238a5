import type { IncomingMessage, ServerResponse } from 'node:http'
import { InvalidRequest, OAuthError } from '../../errors.js'
import { AS_BODY_LIMIT, FormParams, isFormContentType, readBody } from '../../http/body.js'
import type { AsContext } from '../context.js'
import { isSameOrigin } from './csrf.js'
import { showError, showForbidden } from './respond.js'

/** Read a urlencoded form body as text (POST /authorize keeps it raw to carry it through login). */
export async function readFormText(req: IncomingMessage): Promise<string> {
  if (!isFormContentType(req.headers['content-type'])) {
    throw new InvalidRequest('Content-Type must be application/x-www-form-urlencoded')
  }
  return (await readBody(req, AS_BODY_LIMIT)).toString('utf8')
}

/** Read a urlencoded form body. */
export async function readFormParams(req: IncomingMessage): Promise<FormParams> {
  return FormParams.parse(await readFormText(req))
}

/**
 * The start of every page form's POST: a post that visibly comes from
 * another site gets the 403 page before its body is read, a body that is not
 * a form gets the error page. null once that answer is sent.
 */
export async function readPageForm(req: IncomingMessage, res: ServerResponse, as: AsContext): Promise<FormParams | null> {
  if (!isSameOrigin(req, as)) {
    showForbidden(res)
    return null
  }
  try {
    return await readFormParams(req)
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err
    showError(res, err)
    return null
  }
}
