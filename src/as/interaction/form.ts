import type { IncomingMessage } from 'node:http'
import { InvalidRequest } from '../../errors.js'
import { AS_BODY_LIMIT, FormParams, isFormContentType, readBody } from '../../http/body.js'

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
