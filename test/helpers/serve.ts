import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import type { Face, RequestContext } from '../../src/context.js'
import type { Logger } from '../../src/log.js'
import { sendError } from '../../src/http/reply.js'
import { NotFound, OAuthError, ServerError } from '../../src/errors.js'

/**
 * Serve one face on 127.0.0.1, port 0, the way src/app.ts dispatches to it:
 * a request the face does not take is a 404; an escaped error is a 500.
 */
export async function serveFace(face: Face, log: Logger): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const raw = req.url ?? '/'
    const q = raw.indexOf('?')
    const ctx: RequestContext = {
      id: randomUUID(),
      log,
      rawPath: q === -1 ? raw : raw.slice(0, q),
      rawQuery: q === -1 ? '' : raw.slice(q + 1),
      routeLabel: 'test',
      closeListener: null,
    }
    face
      .handle(req, res, ctx)
      .then((handled) => {
        if (!handled) sendError(res, new NotFound())
      })
      .catch((err: unknown) => {
        sendError(res, err instanceof OAuthError ? err : new ServerError())
      })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
