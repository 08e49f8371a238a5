/**
 * The body timeouts (src/http/body-timeouts.ts) bound how long a client may
 * take to send its body, never how long the server takes to answer: a body
 * that arrived whole with its headers is not watched, even while the server
 * leaves it unread (a token being verified, an upstream being connected).
 * A body still arriving is watched as before. Real sockets against a real
 * server on port 0; the server here never reads a body, as a slow judgement
 * would not.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect as connectHttp2,
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2'
import { connect, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import type { ClientTimeouts } from '../../src/config/validated-config.js'
import { watchBody, type BodyTimeout } from '../../src/http/body-timeouts.js'
import { closeServer, listen } from '../helpers/http.js'

const BODY_IDLE_MS = 150
const TIMEOUTS: ClientTimeouts = { headersMs: 5000, bodyIdleMs: BODY_IDLE_MS, requestMs: 400, keepAliveMs: 5000 }

interface Fired {
  readonly path: string
  readonly which: BodyTimeout
}

/**
 * What a server that watches every body, answers nothing and reads nothing
 * has seen: each timeout is recorded (and answered 408 by the server).
 */
interface Watched<Res> {
  readonly fired: Fired[]
  /** The next timeout to fire. */
  next(): Promise<Fired>
  /** Resolves when the request for `path` has arrived (its head read). */
  arrival(path: string): Promise<void>
  readonly pending: Map<string, Res>
}

/** The record both servers keep, and the request handler's part of it: `arrived` a request, `timedOut` its body. */
function watched<Res>(): Watched<Res> & { arrived(path: string, res: Res): void; timedOut(path: string, which: BodyTimeout): void } {
  const fired: Fired[] = []
  const waiting: Array<(f: Fired) => void> = []
  const pending = new Map<string, Res>()
  const arrivals = new Map<string, () => void>()
  return {
    fired,
    pending,
    next: () => new Promise<Fired>((resolve) => waiting.push(resolve)),
    arrival: (path) => new Promise<void>((resolve) => arrivals.set(path, resolve)),
    arrived(path, res) {
      pending.set(path, res)
      arrivals.get(path)?.()
    },
    timedOut(path, which) {
      const f = { path, which }
      fired.push(f)
      waiting.shift()?.(f)
    },
  }
}

/** An HTTP/1.1 server on port 0 whose bodies are watched and never read. */
interface Server extends Watched<ServerResponse> {
  readonly port: number
}

async function startServer(t: Test): Promise<Server> {
  const w = watched<ServerResponse>()
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? ''
    watchBody(req, res, TIMEOUTS, (which) => {
      w.timedOut(path, which)
      res.writeHead(408, { connection: 'close' }).end()
    })
    w.arrived(path, res)
  })
  const { port } = await listen(server)
  t.teardown(() => closeServer(server))
  return { ...w, port }
}

/** The answer a client reads on `socket` until the server closes it. */
function answerOn(socket: Socket): Promise<string> {
  let received = ''
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1')
  })
  return new Promise<string>((resolve) => socket.on('close', () => resolve(received)))
}

/** Trickle a body under body_idle until its request deadline: the clock of the tests that wait for nothing to happen. */
function trickleClock(t: Test, s: Server): Promise<Fired> {
  const clock = s.next()
  const socket = send(t, s.port, 'POST /trickle HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n')
  const trickle = setInterval(() => socket.write('x'), BODY_IDLE_MS / 3)
  t.teardown(() => clearInterval(trickle))
  return clock
}

/** After both timeouts passed for `path` (still unread), the server answers it late: the client must read that answer. */
async function answeredLate(t: Test, s: Server, path: string, socket: Socket, answer: Promise<string>): Promise<void> {
  t.same(await trickleClock(t, s), { path: '/trickle', which: 'request' })
  t.same(
    s.fired.map((f) => f.path),
    ['/trickle'],
    `${path} was never timed out`,
  )
  // Its connection is still there (an idle socket nobody handled is destroyed by Node): the late answer reaches the client.
  t.equal(socket.destroyed, false, `the connection of ${path} is open`)
  s.pending.get(path)?.writeHead(200, { connection: 'close', 'content-length': '6' }).end('judged')
  t.match(await answer, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\njudged$/, 'the answer arrived after both timeouts had passed')
}

function send(t: Test, port: number, text: string): Socket {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => undefined)
  socket.write(text)
  t.teardown(() => {
    socket.destroy()
  })
  return socket
}

t.test('a body sent whole with its headers is not timed out while the server leaves it unread', async (t) => {
  const s = await startServer(t)
  const whole = send(t, s.port, 'POST /whole HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello')
  const answer = answerOn(whole)
  await s.arrival('/whole')
  // The clock starts after the whole body's watch would have: its deadline would pass first.
  await answeredLate(t, s, '/whole', whole, answer)
})

t.test('a body completed after its head, then left unread: not timed out, the connection kept', async (t) => {
  const s = await startServer(t)
  const arrived = s.arrival('/split')
  const split = send(t, s.port, 'POST /split HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n')
  const answer = answerOn(split)
  await arrived
  // The watch has started (its check ran in the check phase after the head): the body now comes whole.
  await new Promise<void>((resolve) => setImmediate(resolve))
  split.write('hello')
  await answeredLate(t, s, '/split', split, answer)
})

t.test('a body whose first bytes came with the headers and the rest never comes: 408 after body_idle', async (t) => {
  const s = await startServer(t)
  const fired = s.next()
  const sent = performance.now()
  send(t, s.port, 'POST /part HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789')
  t.same(await fired, { path: '/part', which: 'body_idle' })
  t.ok(performance.now() - sent >= BODY_IDLE_MS - 20, 'not before body_idle')
})

t.test('a body trickled under body_idle still meets the request deadline', async (t) => {
  const s = await startServer(t)
  const fired = s.next()
  const socket = send(t, s.port, 'POST /trickle HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n')
  const sent = performance.now()
  const trickle = setInterval(() => socket.write('x'), BODY_IDLE_MS / 3)
  t.teardown(() => clearInterval(trickle))
  t.same(await fired, { path: '/trickle', which: 'request' })
  t.ok(performance.now() - sent >= TIMEOUTS.requestMs - 20, 'at the deadline, not before')
})

/**
 * Over HTTP/2 Node counts a request complete only once its body is read, so
 * "received whole" is the stream's own state: the client ended it
 * (END_STREAM), whether or not the server has read what came.
 */
interface Http2Server extends Watched<Http2ServerResponse> {
  readonly client: ClientHttp2Session
}

/** startServer's twin over HTTP/2 (cleartext), with one client session to it. */
async function startHttp2(t: Test): Promise<Http2Server> {
  const w = watched<Http2ServerResponse>()
  const server = createHttp2Server((req: Http2ServerRequest, res: Http2ServerResponse) => {
    const path = req.url
    watchBody(req as unknown as IncomingMessage, res as unknown as ServerResponse, TIMEOUTS, (which) => {
      w.timedOut(path, which)
      res.writeHead(408).end()
    })
    w.arrived(path, res)
  })
  const { port } = await listen(server)
  const client = connectHttp2(`http://127.0.0.1:${port}`)
  client.on('error', () => undefined)
  t.teardown(() => {
    client.destroy()
    return closeServer(server)
  })
  return { ...w, client }
}

/** A POST on its own stream; what the client reads of its answer. */
function postHttp2(s: Http2Server, path: string, length: number): { stream: ClientHttp2Stream; answer: Promise<{ status: number; body: string }> } {
  const stream = s.client.request({ ':method': 'POST', ':path': path, 'content-length': String(length) })
  stream.on('error', () => undefined)
  stream.setEncoding('utf8')
  let body = ''
  stream.on('data', (chunk: string) => {
    body += chunk
  })
  const answer = new Promise<{ status: number; body: string }>((resolve) => {
    let status = 0
    stream.on('response', (h) => {
      status = Number(h[':status'])
    })
    stream.on('close', () => resolve({ status, body }))
  })
  return { stream, answer }
}

t.test('HTTP/2: a body the client ended is not timed out while the server leaves it unread', async (t) => {
  const s = await startHttp2(t)
  const arrived = s.arrival('/whole')
  const whole = postHttp2(s, '/whole', 5)
  whole.stream.end('hello')
  await arrived
  // The clock: a second stream trickled under body_idle until its request deadline, which comes after /whole's body_idle would have.
  const clock = s.next()
  const trickle = postHttp2(s, '/trickle', 1000)
  const drip = setInterval(() => trickle.stream.write('x'), BODY_IDLE_MS / 3)
  t.teardown(() => clearInterval(drip))
  t.same(await clock, { path: '/trickle', which: 'request' })
  t.same(
    s.fired.map((f) => f.path),
    ['/trickle'],
    '/whole was never timed out',
  )
  s.pending.get('/whole')?.writeHead(200).end('judged')
  t.same(await whole.answer, { status: 200, body: 'judged' }, 'the late answer is the one the client reads')
})

t.test('HTTP/2: a body whose client stops sending gets 408 after body_idle', async (t) => {
  const s = await startHttp2(t)
  const fired = s.next()
  const sent = performance.now()
  const part = postHttp2(s, '/part', 100)
  part.stream.write('0123456789')
  t.same(await fired, { path: '/part', which: 'body_idle' })
  t.ok(performance.now() - sent >= BODY_IDLE_MS - 20, 'not before body_idle')
  t.equal((await part.answer).status, 408)
})
