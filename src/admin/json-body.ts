/**
 * Request bodies of the admin API: JSON objects only, at most
 * ADMIN_BODY_LIMIT bytes (refused before buffering, as at the AS endpoints).
 */
import type { IncomingMessage } from 'node:http'
import { PayloadTooLarge } from '../errors.js'
import { readBody } from '../http/body.js'
import { AdminProblem, badRequest } from './problem.js'

/** Far more than any client or person document needs; a bound on what a caller makes us buffer. */
export const ADMIN_BODY_LIMIT = 64 * 1024

function isJsonType(value: string | undefined): boolean {
  const type = value?.split(';')[0]?.trim().toLowerCase()
  if (type === undefined) return false
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/** The body as a JSON object; an empty body is `{}`. */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const declared = req.headers['content-length']
  const chunked = req.headers['transfer-encoding'] !== undefined
  if ((declared === undefined || declared === '0') && !chunked) return {}
  if (!isJsonType(req.headers['content-type'])) throw new AdminProblem(415, 'unsupported_media_type', 'Send the body as application/json')
  let raw: Buffer
  try {
    raw = await readBody(req, ADMIN_BODY_LIMIT)
  } catch (err) {
    if (err instanceof PayloadTooLarge) throw new AdminProblem(413, 'body_too_large', `The body is over ${ADMIN_BODY_LIMIT} bytes`)
    throw err
  }
  if (raw.length === 0) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(raw.toString('utf8'))
  } catch {
    throw badRequest('The body is not valid JSON')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest('The body must be a JSON object')
  return parsed as Record<string, unknown>
}
