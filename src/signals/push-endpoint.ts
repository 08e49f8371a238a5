/**
 * `POST /signals/events`: push delivery of Security Event Tokens (RFC 8935 §2).
 * The body is one SET, `Content-Type: application/secevent+jwt`, at most
 * 64 KiB (a larger declared body is refused before a byte of it is read;
 * the connection is closed so an undeclared one is not read to its end).
 * Answers 202 with no body when the SET was acknowledged (acted on, a
 * repeated `jti`, or about nobody bearward knows), 400 `{"err", "description"}`
 * with RFC 8935 §2.4 codes when it was refused, 503 when the transmitter's
 * keys or the store cannot be reached (the transmitter retries).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestContext } from '../context.js'
import { PayloadTooLarge, StoreUnavailableError } from '../errors.js'
import { readBody } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import type { SignalReceiver } from './receiver.js'
import { SetRefused } from './set-error.js'

/** RFC 8935 does not bound a SET; one is a few hundred bytes. */
export const SET_BODY_LIMIT = 64 * 1024

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
}

function refuse(res: ServerResponse, status: number, body: { err: string; description: string }, close = false): void {
  sendJson(res, status, body, close ? { ...NO_STORE, connection: 'close' } : NO_STORE)
}

/** The handler; `receiver` verifies and acts. */
export function pushEndpoint(receiver: SignalReceiver): (req: IncomingMessage, res: ServerResponse, ctx: RequestContext) => Promise<void> {
  return async (req, res, ctx) => {
    if (mediaType(req.headers['content-type']) !== 'application/secevent+jwt') {
      refuse(res, 400, { err: 'invalid_request', description: 'The body must be a SET with Content-Type application/secevent+jwt' })
      return
    }
    let body: Buffer
    try {
      body = await readBody(req, SET_BODY_LIMIT)
    } catch (err) {
      if (err instanceof PayloadTooLarge) {
        refuse(res, 413, { err: 'invalid_request', description: 'The SET is larger than 64 KiB' }, true)
        return
      }
      throw err
    }
    try {
      const outcome = await receiver.receive(body.toString('utf8').trim(), { kind: 'push' })
      ctx.log.debug({ outcome }, 'SET received')
      res.statusCode = 202
      res.setHeader('content-length', '0')
      res.end()
    } catch (err) {
      if (err instanceof SetRefused) {
        ctx.log.info({ set_err: err.err, code: err.code, reason: err.cause instanceof Error ? err.cause.message : err.cause }, 'SET refused')
        if (err.status === 503) res.setHeader('retry-after', '5')
        refuse(res, err.status, err.toJSON())
        return
      }
      if (err instanceof StoreUnavailableError) {
        res.setHeader('retry-after', '5')
        refuse(res, 503, { err: 'temporarily_unavailable', description: 'The SET could not be recorded; try again later' })
        return
      }
      throw err
    }
  }
}
