/**
 * Long exchanges for the stream-ending tests: an upstream that streams
 * server-sent events forever (and a WebSocket that sends a frame every few
 * milliseconds forever), recording when each connection closed on its side;
 * and clients that record when each event arrived and when their stream
 * ended, so a test measures with timestamps instead of sleeping.
 */
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Duplex } from 'node:stream'
import { WebSocket } from 'undici'
import { closeServer, listen } from './http.js'

/** One connection the upstream served: when it opened and when it saw it close (performance.now()). */
export interface UpstreamStream {
  readonly url: string
  readonly openedAt: number
  closedAt: number | null
}

export interface StreamingUpstream {
  url: string
  /** Every SSE response and WebSocket tunnel the upstream served, in order. */
  streams: UpstreamStream[]
  server: Server
  close(): Promise<void>
}

const EVENT_EVERY_MS = 40

/** A server frame (unmasked, RFC 6455 5.2) carrying `text`. */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text)
  return Buffer.concat([Buffer.from([0x81, payload.length]), payload])
}

/**
 * An upstream on 127.0.0.1:0: every GET is an endless `text/event-stream`
 * (an event every 40 ms), and so is a POST of an MCP `subscriptions/listen`
 * (revision 2026-07-28: the listen stream is the POST's response); every
 * WebSocket upgrade is an endless series of text frames; an MCP `initialize`
 * POST opens session `session-1` (a 2025 stateful server's `Mcp-Session-Id`);
 * any other request is a plain 200.
 */
export async function startStreamingUpstream(): Promise<StreamingUpstream> {
  const streams: UpstreamStream[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString()
      const listen = req.method === 'POST' && body.includes('"subscriptions/listen"')
      if (req.method === 'GET' || listen) stream(req, res)
      else if (req.method === 'POST' && body.includes('"initialize"')) {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' })
        res.end('{"jsonrpc":"2.0","id":1,"result":{}}')
      } else res.end('ok')
    })
  })
  const stream = (req: IncomingMessage, res: ServerResponse): void => {
    const seen: UpstreamStream = { url: req.url ?? '', openedAt: performance.now(), closedAt: null }
    streams.push(seen)
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
    let n = 0
    const send = (): void => {
      res.write(`id: ${++n}\ndata: {"n":${n}}\n\n`)
    }
    send()
    const timer = setInterval(send, EVENT_EVERY_MS)
    res.on('close', () => {
      clearInterval(timer)
      seen.closedAt = performance.now()
    })
  }
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    const seen: UpstreamStream = { url: req.url ?? '', openedAt: performance.now(), closedAt: null }
    streams.push(seen)
    socket.on('error', () => socket.destroy())
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key'] ?? ''}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64')
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`)
    let n = 0
    const timer = setInterval(() => socket.write(textFrame(`event ${++n}`)), EVENT_EVERY_MS)
    // The client's Close frame (opcode 8; its first frame after the handshake in these tests) is answered, then the connection ends.
    socket.on('data', (data: Buffer) => {
      if (((data[0] ?? 0) & 0x0f) !== 0x8) return
      clearInterval(timer)
      socket.end(Buffer.from([0x88, 0x02, 0x03, 0xe8]))
    })
    socket.on('close', () => {
      clearInterval(timer)
      seen.closedAt = performance.now()
    })
  })
  const { url } = await listen(server)
  return {
    url,
    streams,
    server,
    close: () => closeServer(server),
  }
}

/** A client's view of one streamed response. */
export interface ClientStream {
  status: number
  /** performance.now() of each chunk received. */
  readonly chunks: number[]
  /** When the response ended or was cut (null while open). */
  endedAt: number | null
  /** Whether the body ended complete (the terminating chunk arrived): false when the gateway cut it. */
  complete: boolean
  /** Resolves when the stream ends, whichever way. */
  readonly ended: Promise<void>
  /** Resolves with the first chunk time after `t` (for "still delivering after that point"). */
  chunkAfter(t: number): Promise<number>
  close(): void
}

/** A request other than a plain GET (an MCP listen POST). */
export interface StreamRequest {
  method: string
  headers: Record<string, string>
  body: string
}

/** GET `url` (or send `init`) with the bearer token and keep reading; resolves once the response head arrived. */
export function openStream(url: string, token: string, init?: StreamRequest): Promise<ClientStream> {
  return new Promise((resolve, reject) => {
    const headers = { accept: 'text/event-stream', ...init?.headers, authorization: `Bearer ${token}` }
    const req = request(url, { method: init?.method ?? 'GET', headers, agent: false })
    req.on('error', reject)
    req.on('response', (res) => {
      const waiters: Array<{ after: number; resolve: (t: number) => void }> = []
      let ended!: () => void
      const stream: ClientStream = {
        status: res.statusCode ?? 0,
        chunks: [],
        endedAt: null,
        complete: false,
        ended: new Promise<void>((r) => (ended = r)),
        chunkAfter: (after) =>
          new Promise((r) => {
            const last = stream.chunks.at(-1)
            if (last !== undefined && last > after) r(last)
            else waiters.push({ after, resolve: r })
          }),
        close: () => req.destroy(),
      }
      const finish = (): void => {
        if (stream.endedAt !== null) return
        stream.endedAt = performance.now()
        ended()
      }
      res.on('data', () => {
        const now = performance.now()
        stream.chunks.push(now)
        for (const w of waiters.splice(0)) {
          if (now > w.after) w.resolve(now)
          else waiters.push(w)
        }
      })
      res.on('end', () => {
        stream.complete = true
        finish()
      })
      res.on('error', finish)
      res.on('close', finish)
      req.on('error', finish)
      resolve(stream)
    })
    req.end(init?.body)
  })
}

/** A client's view of one WebSocket through the gateway. */
export interface ClientSocket {
  readonly messages: number[]
  closedAt: number | null
  code: number | null
  reason: string | null
  readonly closed: Promise<void>
  messageAfter(t: number): Promise<number>
  close(): void
}

/** Open a WebSocket (undici's client, as a browser would speak it) with the bearer token; resolves once open. */
export async function openSocket(url: string, token: string): Promise<ClientSocket> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), { headers: { authorization: `Bearer ${token}` } })
  const waiters: Array<{ after: number; resolve: (t: number) => void }> = []
  let closed!: () => void
  const socket: ClientSocket = {
    messages: [],
    closedAt: null,
    code: null,
    reason: null,
    closed: new Promise<void>((r) => (closed = r)),
    messageAfter: (after) =>
      new Promise((r) => {
        const last = socket.messages.at(-1)
        if (last !== undefined && last > after) r(last)
        else waiters.push({ after, resolve: r })
      }),
    close: () => ws.close(),
  }
  ws.addEventListener('message', () => {
    const now = performance.now()
    socket.messages.push(now)
    for (const w of waiters.splice(0)) {
      if (now > w.after) w.resolve(now)
      else waiters.push(w)
    }
  })
  ws.addEventListener('close', (e) => {
    socket.closedAt = performance.now()
    socket.code = e.code
    socket.reason = e.reason
    closed()
  })
  const opened = await Promise.race([once(ws, 'open').then(() => true), once(ws, 'close').then(() => false), once(ws, 'error').then(() => false)])
  if (!opened) throw new Error(`WebSocket to ${url} did not open`)
  return socket
}

/**
 * Whether `p` settles within `ms`: a stream that is never ended fails its
 * test at once instead of holding it until tap's timeout.
 */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  try {
    return await Promise.race([p.then(() => true), late])
  } finally {
    clearTimeout(timer)
  }
}
