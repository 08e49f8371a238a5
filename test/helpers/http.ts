/**
 * The small network helpers every kind of test needs, once: a server started
 * on port 0 and closed with its connections, a free port for a process that
 * must know its port before it starts, and a bounded poll for effects that
 * happen in another process or after a message crosses a connection.
 */
import { createServer, type AddressInfo, type Server } from 'node:net'

/**
 * Ports this helper hands out: below Linux's ephemeral range (32768–60999 by
 * default), where the kernel picks the source port of every outgoing
 * connection and the port of every bind to port 0. A port taken from that
 * range by binding port 0 and closing could be reused by any of the
 * suite's thousands of connections, or by another test process, before the
 * program meant to bind it did (the race issue #17 names); up here only
 * another caller of this helper competes, and it checks the port is free.
 */
const FREE_PORT_RANGE = { first: 12000, last: 32000 }
const handedOut = new Set<number>()

function canBind(port: number): Promise<boolean> {
  const s = createServer()
  return new Promise((resolve) => {
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

/**
 * A TCP port on 127.0.0.1 that is free now, for a program that must know its
 * port before it starts: redis-server, or bin/bearward when its config names
 * its own address (public_url, redirect URIs). Anything else listens on port 0
 * and reports what it bound (startBin reads bearward's `listen` line).
 */
export async function freePort(): Promise<number> {
  const span = FREE_PORT_RANGE.last - FREE_PORT_RANGE.first
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = FREE_PORT_RANGE.first + Math.floor(Math.random() * span)
    if (handedOut.has(port)) continue
    if (await canBind(port)) {
      handedOut.add(port)
      return port
    }
  }
  throw new Error(`no free port found in ${FREE_PORT_RANGE.first}-${FREE_PORT_RANGE.last} on 127.0.0.1 after 200 tries`)
}

/**
 * Start `server` (any node:net server: http, https, http2, a raw TCP one) on
 * `host`, port 0, and resolve once it is bound with the port the kernel
 * picked and its base URL (`http://127.0.0.1:<port>`; an IPv6 host in brackets).
 */
export async function listen(server: Server, host = '127.0.0.1'): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  return { port, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}` }
}

/**
 * A server closeServer stops: a node:http or node:https one, which has
 * closeAllConnections(), or a node:http2 one, which has not.
 */
export interface HttpServerLike {
  close(callback?: (err?: Error) => void): unknown
  closeAllConnections?(): void
}

/**
 * Stop a server a test started: destroy its connections (when it can), then
 * close it; resolves once it is closed. close() alone stops accepting but
 * waits for every open connection to end, and a client's keep-alive
 * connection can hold a teardown open until it times out. An http2 server
 * has no closeAllConnections: it is just closed. Never rejects: a server that
 * was not listening (close's callback gets ERR_SERVER_NOT_RUNNING) counts as
 * closed.
 */
export function closeServer(server: HttpServerLike): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections?.()
    server.close(() => resolve())
  })
}

/**
 * Poll `check` every `stepMs` until it holds or `ms` passes; resolves to
 * whether it held (assert on that). For effects of another process, of
 * pub/sub, or of a file watcher, which no event in this process announces.
 * `check` is called once more at the deadline, so a slow machine that
 * misses every step still gets a final answer.
 */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5000, stepMs = 20): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, stepMs))
  }
  return check()
}

/**
 * POST `params` as application/x-www-form-urlencoded (pairs, so a name can
 * repeat), without following redirects: a test sees the 302/303 itself.
 */
export function postForm(url: string, params: Record<string, string> | Array<[string, string]>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  })
}

/** An answer read to the end: status, headers, the body as text and, when it is JSON, parsed. */
export interface Reply {
  status: number
  headers: Headers
  text: string
  /** The parsed JSON body, or null when the body is not JSON. */
  json: Record<string, unknown> | null
}

/** Read a response to the end (e.g. `await reply(postForm(...))`). */
export async function reply(response: Response | Promise<Response>): Promise<Reply> {
  const res = await response
  const text = await res.text()
  let json: Record<string, unknown> | null = null
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = null
  }
  return { status: res.status, headers: res.headers, text, json }
}
