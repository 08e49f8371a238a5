import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { closeServer, listen } from './http.js'

export interface SeenRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
  rawHeaders: string[]
  body: string
}

/**
 * A real upstream on 127.0.0.1:0 that records what it receives and answers
 * with JSON naming itself, unless `handler` answers instead.
 */
export async function startUpstream(
  name: string,
  handler?: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<{ url: string; seen: SeenRequest[]; server: Server; close(): Promise<void> }> {
  const seen: SeenRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body })
      if (handler) return handler(req, res, body)
      const payload = JSON.stringify({ upstream: name, method: req.method, url: req.url })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) })
      res.end(payload)
    })
  })
  const { url } = await listen(server)
  return {
    url,
    seen,
    server,
    close: () => closeServer(server),
  }
}
