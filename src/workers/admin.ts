/**
 * admin_listen when there are worker processes: the primary answers
 * /healthz itself and /readyz and /metrics for all workers together
 * (primary.ts asks each over IPC). Same paths and answers as a single
 * process's admin server, plus a `workers` list in /readyz.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { listenOn } from '../server/listen.js'
import type { ListenAddress } from '../config/types.js'
import { sendJson } from '../http/reply.js'
import type { Logger } from '../log.js'
import type { Primary } from './primary.js'

async function answer(primary: Primary, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET, HEAD' })
    return
  }
  if (path === '/healthz') {
    sendJson(res, 200, { status: 'ok' })
  } else if (path === '/readyz') {
    const { ready, body } = await primary.readiness()
    sendJson(res, ready ? 200 : 503, body, { 'cache-control': 'no-store' })
  } else if (path === '/metrics') {
    const text = await primary.metrics()
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  } else {
    sendJson(res, 404, { error: 'not_found' })
  }
}

/** Listen on `addr`; resolves with the server and its URL. */
export async function startPrimaryAdmin(primary: Primary, addr: ListenAddress, log: Logger): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    answer(primary, req, res).catch((err: unknown) => {
      log.error({ err }, 'admin request failed')
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' })
      else res.destroy()
    })
  })
  await listenOn(server, addr)
  const a = server.address() as AddressInfo
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address
  return { server, url: `http://${host}:${a.port}` }
}
