import type { IncomingMessage } from 'node:http'

/**
 * How many field lines named `lowerName` the request carried. Node keeps the
 * first of some repeated headers and joins others with `, `, so only the raw
 * list tells a repeated header from a single one; a header that must appear
 * once (Host, Authorization, DPoP) is checked here.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-5.3
 */
export function headerCount(req: IncomingMessage, lowerName: string): number {
  const raw = req.rawHeaders
  let seen = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) seen++
  }
  return seen
}
