/**
 * An MCP server built with the SDK 2.x (`@modelcontextprotocol/server`) the
 * way its users deploy it: `createMcpHandler(factory)` is a fetch-shaped
 * handler (web `Request` in, `Response` out), served here on a port-0
 * node:http server through a small adapter (what `@modelcontextprotocol/node`'s
 * `toNodeHandler` does; that package is not a dependency). Every request
 * that reaches the server is recorded, so a test can assert that nothing of
 * a refused request got through.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { McpHttpHandler } from '@modelcontextprotocol/server'
import { closeServer, listen } from './http.js'

/** One request as the MCP server received it. */
export interface SeenMcpRequest {
  readonly method: string
  readonly headers: IncomingMessage['headers']
  readonly body: string
}

export interface RunningMcpHandler {
  /** Base URL (no path): the handler answers on every path. */
  readonly url: string
  readonly seen: SeenMcpRequest[]
  readonly server: Server
  /** Responses still streaming (a `subscriptions/listen` stream stays open until one side ends it). */
  readonly open: Set<ServerResponse>
  close(): Promise<void>
}

function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers()
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string)
  return headers
}

/** Write a web Response to a node response, streaming its body until it ends or the client goes away. */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  res.writeHead(response.status, headers)
  if (response.body === null) {
    res.end()
    return
  }
  res.flushHeaders()
  const reader = response.body.getReader()
  res.on('close', () => {
    reader.cancel().catch(() => {})
  })
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    res.write(value)
  }
  res.end()
}

/** Serve `handler` (from createMcpHandler) over HTTP on 127.0.0.1, port 0. */
export async function serveMcpHandler(handler: McpHttpHandler): Promise<RunningMcpHandler> {
  const seen: SeenMcpRequest[] = []
  const open = new Set<ServerResponse>()
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      seen.push({ method: req.method ?? '', headers: req.headers, body: body.toString('utf8') })
      const abort = new AbortController()
      open.add(res)
      res.on('close', () => {
        open.delete(res)
        abort.abort()
      })
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
      const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`, {
        method: req.method ?? 'GET',
        headers: webHeaders(req),
        body: hasBody ? body : null,
        signal: abort.signal,
      })
      handler
        .fetch(request)
        .then((response) => writeResponse(response, res))
        .catch(() => res.destroy())
    })
  })
  const { url } = await listen(server)
  return {
    url,
    seen,
    server,
    open,
    async close() {
      await handler.close()
      await closeServer(server)
    },
  }
}
