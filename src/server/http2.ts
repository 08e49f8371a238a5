import {
  constants,
  createServer as createH2Server,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type ServerHttp2Stream,
} from 'node:http2'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { ClientTimeouts, Config, Http2Config } from '../config/validated-config.js'
import { holdContinue } from '../http/expect-continue.js'
import { adaptHttp2Request } from '../http/http2-request.js'
import type { Logger } from '../log.js'

/**
 * HTTP/2 on `listen`, beside HTTP/1.1 on the same port. The
 * http(s) server keeps every HTTP/1.1 connection as before; a connection
 * that speaks HTTP/2 (ALPN `h2` on TLS, or the client connection preface on
 * a plain listen with `http2.cleartext`) is handed to a node:http2 server
 * that never listens itself. Its requests reach the same dispatcher through
 * node:http2's compatibility API (http/http2-request.ts makes them read like
 * HTTP/1.1 ones).
 *
 * What HTTP/1.1 bounds by the connection, HTTP/2 bounds per connection and
 * per stream: concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS), the
 * decoded header list (SETTINGS_MAX_HEADER_LIST_SIZE: a larger one is reset
 * with ENHANCE_YOUR_CALM before any handler sees it), resets (a client that
 * resets more than `max_resets` streams within `reset_window` is sent GOAWAY
 * ENHANCE_YOUR_CALM and dropped: the rapid-reset attack, CVE-2023-44487,
 * costs the server each stream it opens and the client nothing; and since
 * connections cost the client little more, the connections of one client
 * address share `max_resets_per_address`, past which all of them go), and idle
 * connections (closed after `client_timeouts.keep_alive` without an open stream).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9113#section-3.4
 * @see https://www.rfc-editor.org/rfc/rfc9113#section-6.5.2
 */

/** The client connection preface (RFC 9113 3.4), which an h2c client with prior knowledge starts with. */
export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1')

/**
 * What a cleartext connection's first bytes say: `h2` once they are the
 * preface, `http/1.1` as soon as they cannot be, null while too few arrived
 * to tell.
 */
export function prefaceVerdict(head: Buffer): 'h2' | 'http/1.1' | null {
  const n = Math.min(head.length, H2_PREFACE.length)
  if (head.compare(H2_PREFACE, 0, n, 0, n) !== 0) return 'http/1.1'
  return n === H2_PREFACE.length ? 'h2' : null
}

/** Resets counted in a window: a connection's, or a client address's over all its connections. */
interface ResetCount {
  resets: number
  windowStart: number
}

/** `::ffff:a.b.c.d`: an IPv4 client on a dual-stack listen. */
const IPV4_MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i

/**
 * The client address whose connections share a reset budget: an IPv4
 * address (IPv4-mapped IPv6 read as IPv4), or an IPv6 address's /64, which
 * one client holds whole (RFC 6177): a budget per IPv6 address would be a
 * budget per connection to a client that picks a new source address for
 * each.
 */
export function resetBudgetKey(address: string): string {
  if (!address.includes(':')) return address
  const mapped = IPV4_MAPPED.exec(address)
  if (mapped !== null) return mapped[1] as string
  const zone = address.indexOf('%')
  const plain = (zone === -1 ? address : address.slice(0, zone)).toLowerCase()
  const gap = plain.indexOf('::')
  const head = (gap === -1 ? plain : plain.slice(0, gap)).split(':').filter((g) => g !== '')
  const tail =
    gap === -1
      ? []
      : plain
          .slice(gap + 2)
          .split(':')
          .filter((g) => g !== '')
  // A dotted IPv4 tail stands for two groups (RFC 4291 2.2).
  const tailGroups = tail.length + (tail.at(-1)?.includes('.') === true ? 1 : 0)
  const groups = gap === -1 ? head : [...head, ...new Array<string>(Math.max(0, 8 - head.length - tailGroups)).fill('0'), ...tail]
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`
}

/** What a session carries for the bounds: its open streams and its resets in the current window. */
interface SessionState extends ResetCount {
  open: number
  /** GOAWAY was sent: the resets that follow are not counted or logged again. */
  goneAway: boolean
  /** Its client's address, whose connections share a reset budget. */
  address: string
}

/** A client address's sessions and their resets together. */
interface AddressState extends ResetCount {
  sessions: Set<Http2Session>
}

export type Http2Handler = (req: Http2ServerRequest, res: Http2ServerResponse) => void

/** The node:http2 server that takes the HTTP/2 connections of `listen`, and its sessions. */
export class Http2Front {
  readonly server: Http2Server
  readonly #settings: Http2Config
  readonly #log: Logger
  readonly #sessions = new Map<Http2Session, SessionState>()
  /** By client address, while it has a session open. */
  readonly #addresses = new Map<string, AddressState>()
  readonly #now: () => number

  constructor(settings: Http2Config, timeouts: ClientTimeouts, log: Logger, handler: Http2Handler, now: () => number = Date.now) {
    this.#settings = settings
    this.#log = log
    this.#now = now
    this.server = createH2Server(
      {
        settings: { maxConcurrentStreams: settings.maxConcurrentStreams, maxHeaderListSize: settings.maxHeaderListBytes, enablePush: false },
        maxHeaderListPairs: 256,
        // A client opening more streams than the settings allow (it has not
        // seen them yet) is refused per stream; past this, the session ends.
        peerMaxConcurrentStreams: settings.maxConcurrentStreams,
      },
      handler,
    )
    // Idle sessions: the listener keeps node:http2 from destroying a session
    // whose streams are merely quiet (a gRPC stream may be), see #onTimeout.
    this.server.setTimeout(timeouts.keepAliveMs)
    this.server.on('timeout', (session: Http2Session) => this.#onTimeout(session))
    this.server.on('session', (session: Http2Session) => this.#onSession(session))
    this.server.on('sessionError', (err: Error) => log.debug({ code: (err as NodeJS.ErrnoException).code }, 'http2 session error'))
  }

  /**
   * Take a connection whose protocol is HTTP/2 (bytes already read were put
   * back with unshift). node:http's listener makes its sockets half-open: a
   * client's end of the connection would leave the socket, its session and
   * every stream's upstream exchange open until a timeout. HTTP/2 has no use
   * for a half-closed connection, so the client's end closes it, as on
   * node:http2's own server.
   */
  adopt(socket: Socket): void {
    socket.once('end', () => socket.destroy())
    this.server.emit('connection', socket)
  }

  #onSession(session: Http2Session): void {
    const address = resetBudgetKey(session.socket?.remoteAddress ?? '')
    const state: SessionState = { open: 0, resets: 0, windowStart: this.#now(), goneAway: false, address }
    this.#sessions.set(session, state)
    let peer = this.#addresses.get(address)
    if (peer === undefined) {
      peer = { resets: 0, windowStart: state.windowStart, sessions: new Set() }
      this.#addresses.set(address, peer)
    }
    peer.sessions.add(session)
    const shared = peer
    session.on('close', () => {
      this.#sessions.delete(session)
      shared.sessions.delete(session)
      // The count outlives the address's connections until its window ends: else a client
      // would reset its budget by closing them all and connecting again.
      if (shared.sessions.size === 0) this.#forgetLater(address, shared)
    })
    session.on('stream', (stream: ServerHttp2Stream) => {
      state.open++
      stream.once('close', () => state.open--)
      // 'aborted': the client reset a stream we had not finished answering.
      stream.once('aborted', () => this.#onReset(session, state))
    })
  }

  #onReset(session: Http2Session, state: SessionState): void {
    if (state.goneAway) return
    const now = this.#now()
    const overConnection = this.#count(state, now) > this.#settings.maxResets
    const peer = this.#addresses.get(state.address)
    const overAddress = peer !== undefined && this.#count(peer, now) > this.#settings.maxResetsPerAddress
    if (overAddress) {
      // Every connection of the address: the budget is theirs together.
      this.#log.warn(
        { resets: peer.resets, connections: peer.sessions.size, window_ms: this.#settings.resetWindowMs },
        'http2 client address reset too many streams; its connections closed',
      )
      for (const s of peer.sessions) this.#goAway(s)
      return
    }
    if (!overConnection) return
    this.#log.warn({ resets: state.resets, window_ms: this.#settings.resetWindowMs }, 'http2 client reset too many streams; connection closed')
    this.#goAway(session)
  }

  /** Forget an address without connections once its reset window has passed, unless it came back. */
  #forgetLater(address: string, peer: AddressState): void {
    const left = peer.windowStart + this.#settings.resetWindowMs - this.#now()
    const forget = (): void => {
      if (peer.sessions.size === 0 && this.#addresses.get(address) === peer) this.#addresses.delete(address)
    }
    if (left <= 0) forget()
    else setTimeout(forget, left).unref()
  }

  /** One more reset in `count`'s window (a new window once the last one passed); returns the count. */
  #count(count: ResetCount, now: number): number {
    if (now - count.windowStart >= this.#settings.resetWindowMs) {
      count.windowStart = now
      count.resets = 0
    }
    return ++count.resets
  }

  /** GOAWAY ENHANCE_YOUR_CALM, then the session is dropped. */
  #goAway(session: Http2Session): void {
    const state = this.#sessions.get(session)
    if (state === undefined || state.goneAway || session.destroyed || session.closed) return
    state.goneAway = true
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM)
    // After the GOAWAY is written; the streams still open are cut.
    setImmediate(() => session.destroy())
  }

  #onTimeout(session: Http2Session): void {
    const state = this.#sessions.get(session)
    if (state === undefined || state.open === 0) session.close()
  }

  /** Open sessions (tests and shutdown). */
  get sessions(): number {
    return this.#sessions.size
  }

  /** Shutdown: GOAWAY to every session; streams under way may finish (RFC 9113 6.8). */
  closeIdle(): void {
    for (const session of this.#sessions.keys()) session.close()
  }

  /** Shutdown, past the grace: every session is dropped. */
  destroyAll(): void {
    for (const session of this.#sessions.keys()) session.destroy()
  }
}

/**
 * Hand the `listen` server's HTTP/2 connections to `front`. On TLS the ALPN
 * outcome decides ('secureConnection'); on a plain listen the first bytes
 * do (h2c with prior knowledge). Everything else goes to the http(s)
 * server's own connection listener, untouched.
 */
export function routeConnections(server: Server, front: Http2Front, tls: boolean, preludeTimeoutMs: number): void {
  const event = tls ? 'secureConnection' : 'connection'
  const listeners = server.listeners(event) as Array<(socket: Socket) => void>
  const http1 = listeners[0]
  if (http1 === undefined) throw new Error(`the listen server has no ${event} listener`)
  server.removeListener(event, http1)
  if (tls) {
    server.on(event, (socket: Socket & { alpnProtocol?: string | false }) => {
      if (socket.alpnProtocol === 'h2') front.adopt(socket)
      else http1.call(server, socket)
    })
    return
  }
  server.on(event, (socket: Socket) => sniffPreface(socket, preludeTimeoutMs, (h2) => (h2 ? front.adopt(socket) : http1.call(server, socket))))
}

/**
 * Read until the first bytes tell HTTP/2's preface from an HTTP/1.1 request
 * line, put them back, and hand the socket on. A client that sends nothing
 * within `timeoutMs` (client_timeouts.headers) is dropped, as HTTP/1.1's
 * headers timeout would.
 */
function sniffPreface(socket: Socket, timeoutMs: number, decided: (h2: boolean) => void): void {
  let head: Buffer = Buffer.alloc(0)
  const timer = setTimeout(() => socket.destroy(), timeoutMs)
  const done = (h2: boolean): void => {
    clearTimeout(timer)
    socket.off('data', onData)
    socket.off('close', onClose)
    socket.pause()
    socket.unshift(head)
    decided(h2)
    // node:http2 reads what was put back itself, on the next tick (resuming
    // would hand it to no one); node:http's parser takes it as 'data' once
    // the socket flows again, before anything read later.
    if (!h2) socket.resume()
  }
  const onData = (chunk: Buffer): void => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk])
    const verdict = prefaceVerdict(head)
    if (verdict !== null) done(verdict === 'h2')
  }
  const onClose = (): void => clearTimeout(timer)
  socket.on('data', onData)
  socket.once('close', onClose)
}

/**
 * HTTP/2 beside HTTP/1.1 on `server` (the `listen` server): its requests,
 * made to read like HTTP/1.1 ones (http/http2-request.ts), go to `onRequest`,
 * the handler HTTP/1.1 requests go to; `Expect: 100-continue` is held as on
 * HTTP/1.1 (http/expect-continue.ts).
 */
export function serveHttp2(server: Server, config: Config, log: Logger, onRequest: (req: IncomingMessage, res: ServerResponse) => void): Http2Front {
  const front = new Http2Front(config.http2, config.clientTimeouts, log, (req, res) => onRequest(adaptHttp2Request(req), res as unknown as ServerResponse))
  front.server.on('checkContinue', (req: Http2ServerRequest, res: Http2ServerResponse) => {
    const request = adaptHttp2Request(req)
    holdContinue(request, res as unknown as ServerResponse)
    onRequest(request, res as unknown as ServerResponse)
  })
  routeConnections(server, front, config.tls !== null, config.clientTimeouts.headersMs)
  return front
}
