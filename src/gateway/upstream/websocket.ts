import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { BadGateway, GatewayTimeout } from '../../errors.js'
import { errorOnSocket } from '../../http/reply.js'
import type { Logger } from '../../log.js'
import { responseHeaderList } from '../response-headers.js'
import { dropOwnSetCookies } from '../own-cookies.js'
import type { EndReason, Endable, OpenExchange } from '../open-exchanges.js'
import { closeFrame, FrameCutter, POLICY_VIOLATION } from './ws-frames.js'

/**
 * The WebSocket path (RFC 6455 4.1) on node:http alone: an authorized upgrade
 * request becomes an `http.request` with the same Upgrade headers on a fresh
 * connection to the upstream; its `101 Switching Protocols` is relayed and the
 * two sockets are piped together, each direction ending the other (so a
 * half-close travels through), and either socket closing closes both. HTTP
 * requests go through undici instead (see exchange.ts).
 *
 * A tunnel whose token is revoked or expires is ended by the gateway
 * (open-exchanges.ts): after the upstream's frame in flight, the client gets
 * a Close frame with 1008 (policy violation) and a short reason, then the
 * connection is closed; the upstream's connection is closed at once.
 */

/** Time an ending tunnel waits for the upstream's frame in flight to end before cutting both connections. */
const FRAME_END_WAIT_MS = 250
/** Time the client has to answer our Close frame and close before its connection is destroyed. */
const CLIENT_CLOSE_WAIT_MS = 1000

const CLOSE_REASON: Readonly<Record<EndReason, string>> = {
  revoked: 'access token revoked',
  expired: 'access token expired',
}

export interface WebSocketUpstreamOptions {
  /** Upstream URL; only its scheme, host and port are used (the path comes with each request). */
  url: URL
  /** PEM CA bundle for an https/wss upstream, or null for the system roots. */
  ca: string | null
  /** Time allowed from dispatch to the upstream's answer to the handshake (connect + headers). */
  handshakeTimeoutMs: number
  /** TLS name when the URL dials an address found for a host name (a pool target); else taken from the URL. */
  servername?: string
}

/** What the upstream should receive: the route's header rules and the path the policy judged. */
export interface UpgradeRequest {
  method: string
  path: string
  headers: Record<string, string | string[]>
}

/** Raised when the upstream does not answer the handshake in time. */
class HandshakeTimeout extends Error {
  constructor() {
    super('upstream WebSocket handshake timed out')
    this.name = 'HandshakeTimeout'
  }
}

/** A response head from a status line and a flat header list, as latin1 bytes (node:http's header encoding). */
function responseHead(statusLine: string, flat: readonly string[]): Buffer {
  let head = statusLine + '\r\n'
  for (let i = 0; i + 1 < flat.length; i += 2) head += `${flat[i] as string}: ${flat[i + 1] as string}\r\n`
  return Buffer.from(head + '\r\n', 'latin1')
}

/** One upstream's connection options, built per Runtime. */
export class WebSocketUpstream {
  readonly #secure: boolean
  readonly #host: string
  readonly #port: number
  readonly #ca: string | null
  readonly #timeoutMs: number
  /**
   * The TLS name for a wss/https upstream's handshake: its own name for SNI
   * and the certificate check ('' for an IP literal: no SNI, the address is
   * checked). Without it Node takes the name from the Host header, which
   * with `preserve_host` is the client's.
   */
  readonly #servername: string

  constructor(options: WebSocketUpstreamOptions) {
    const { url } = options
    this.#secure = url.protocol === 'https:' || url.protocol === 'wss:'
    // URL.hostname keeps IPv6 brackets; http.request wants the bare address.
    this.#host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    this.#port = url.port === '' ? (this.#secure ? 443 : 80) : Number(url.port)
    this.#ca = options.ca
    this.#timeoutMs = options.handshakeTimeoutMs
    this.#servername = options.servername ?? (isIP(this.#host) !== 0 ? '' : this.#host)
  }

  /**
   * Relay one upgrade: `upstream` holds what the upstream should see. Throws
   * synchronously when node:http refuses a header value (nothing was sent);
   * every later failure is answered on `socket`. The tunnel it returns can
   * be ended (its token revoked or expired). `failed` hears the error code
   * of a handshake that got no answer (a pool target's health counts it).
   */
  forward(upstream: UpgradeRequest, socket: Duplex, head: Buffer, log: Logger, failed: ((code: string) => void) | null = null): Tunnel {
    const common = {
      host: this.#host,
      port: this.#port,
      method: upstream.method,
      path: upstream.path,
      headers: upstream.headers,
      // A connection of its own: a tunnel never returns to a pool.
      agent: false,
    } as const
    const proxyReq = this.#secure
      ? httpsRequest({ ...common, servername: this.#servername, ...(this.#ca !== null ? { ca: this.#ca } : {}) })
      : httpRequest(common)
    // Node leaves an upgraded socket without an error listener; a client reset
    // must not crash the process.
    socket.on('error', () => socket.destroy())
    const handshake = new Handshake(proxyReq, socket, head, log, this.#timeoutMs, failed)
    handshake.start()
    return handshake
  }
}

/** An upgrade as the gateway's open exchanges see it. */
export interface Tunnel extends Endable {
  /** Registered among the open exchanges; forgotten when the client's connection closes. */
  track(open: OpenExchange): void
}

/** One upgrade in flight: from the request sent upstream to a tunnel (or an answer written to the client). */
class Handshake implements Tunnel {
  readonly #proxyReq: ClientRequest
  readonly #socket: Duplex
  readonly #head: Buffer
  readonly #log: Logger
  readonly #timer: NodeJS.Timeout
  /** The upstream answered (101 or otherwise): a later error cannot become a 502. */
  #answered = false
  /** Set once the two sockets are joined. */
  #upstream: Socket | null = null
  #frames: FrameCutter | null = null
  /** The gateway is ending the tunnel: the upstream's close must not cut our Close frame short. */
  #ending = false

  readonly #failed: ((code: string) => void) | null

  constructor(proxyReq: ClientRequest, socket: Duplex, head: Buffer, log: Logger, timeoutMs: number, failed: ((code: string) => void) | null) {
    this.#proxyReq = proxyReq
    this.#failed = failed
    this.#socket = socket
    this.#head = head
    this.#log = log
    this.#timer = setTimeout(() => proxyReq.destroy(new HandshakeTimeout()), timeoutMs)
    this.#timer.unref()
  }

  start(): void {
    const proxyReq = this.#proxyReq
    proxyReq.once('close', () => clearTimeout(this.#timer))
    proxyReq.on('error', (err) => this.#fail(err))
    proxyReq.once('upgrade', (res: IncomingMessage, upstream: Socket, upstreamHead: Buffer) => this.#tunnel(res, upstream, upstreamHead))
    proxyReq.once('response', (res: IncomingMessage) => this.#refused(res))
    // The client left before the handshake finished: stop the upstream one.
    this.#socket.once('close', () => {
      if (!this.#answered) proxyReq.destroy()
    })
    proxyReq.end()
  }

  /** `101 Switching Protocols`: relay it and join the two sockets. */
  #tunnel(res: IncomingMessage, upstream: Socket, upstreamHead: Buffer): void {
    clearTimeout(this.#timer)
    this.#answered = true
    const socket = this.#socket
    upstream.on('error', () => upstream.destroy())
    // Either side gone takes the other with it (unless we are ending it: then our Close frame goes first).
    socket.once('close', () => upstream.destroy())
    upstream.once('close', () => {
      if (!this.#ending) socket.destroy()
    })
    if (socket.destroyed) {
      upstream.destroy()
      return
    }
    upstream.setNoDelay(true)
    upstream.setKeepAlive(true, 0)
    const headers = [...res.rawHeaders]
    dropOwnSetCookies(headers, { log: this.#log }, null)
    socket.write(responseHead(`HTTP/1.1 101 ${res.statusMessage || 'Switching Protocols'}`, headers))
    // The upstream's frames pass through a boundary tracker, so a Close frame of ours can follow a whole frame.
    const frames = new FrameCutter()
    frames.on('error', () => socket.destroy())
    this.#upstream = upstream
    this.#frames = frames
    if (upstreamHead.length > 0) frames.write(upstreamHead)
    if (this.#head.length > 0) upstream.write(this.#head)
    // pipe() ends the destination when its source ends: a FIN is passed on.
    upstream.pipe(frames).pipe(socket)
    socket.pipe(upstream)
  }

  track(open: OpenExchange): void {
    if (this.#socket.destroyed) open.close()
    else this.#socket.once('close', () => open.close())
  }

  /**
   * The token is revoked or expired. A tunnel: the client gets a Close frame
   * (1008 and why) after the upstream's frame in flight, then its connection
   * is closed, and the upstream's at once. Before the tunnel (the handshake
   * in flight, or a refusal being relayed): both connections are closed.
   */
  endExchange(reason: EndReason): void {
    const socket = this.#socket
    if (socket.destroyed || this.#ending) return
    this.#ending = true
    const upstream = this.#upstream
    const frames = this.#frames
    if (upstream === null || frames === null) {
      this.#answered = true
      this.#proxyReq.destroy()
      socket.destroy()
      return
    }
    // What the client sends now (its own Close frame) goes nowhere.
    socket.unpipe(upstream)
    socket.resume()
    socket.once('end', () => socket.destroy())
    const frameWait = setTimeout(() => {
      upstream.destroy()
      socket.destroy()
    }, FRAME_END_WAIT_MS)
    frameWait.unref()
    socket.once('close', () => clearTimeout(frameWait))
    frames.cut(closeFrame(POLICY_VIOLATION, CLOSE_REASON[reason]), () => {
      clearTimeout(frameWait)
      upstream.unpipe(frames)
      upstream.destroy()
      const closeWait = setTimeout(() => socket.destroy(), CLIENT_CLOSE_WAIT_MS)
      closeWait.unref()
      socket.once('close', () => clearTimeout(closeWait))
    })
  }

  /**
   * The upstream answered without switching (a 403, a 404...): the client
   * gets that answer, hop-by-hop headers dropped, the body delimited by the
   * connection closing.
   */
  #refused(res: IncomingMessage): void {
    clearTimeout(this.#timer)
    this.#answered = true
    const socket = this.#socket
    if (socket.destroyed) {
      res.destroy()
      return
    }
    const headers = responseHeaderList(res.rawHeaders)
    dropOwnSetCookies(headers, { log: this.#log }, null)
    headers.push('connection', 'close')
    socket.write(responseHead(`HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}`, headers))
    res.on('error', () => socket.destroy())
    res.pipe(socket)
  }

  #fail(err: Error): void {
    clearTimeout(this.#timer)
    const socket = this.#socket
    if (this.#answered || socket.destroyed) {
      socket.destroy()
      return
    }
    this.#answered = true
    const failure = err instanceof HandshakeTimeout ? new GatewayTimeout() : new BadGateway()
    const code = (err as NodeJS.ErrnoException).code ?? err.name
    this.#failed?.(code)
    this.#log.warn({ code, status: failure.status }, 'websocket upstream failed')
    errorOnSocket(socket, failure)
  }
}
