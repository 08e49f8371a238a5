import type { ClientRequest, IncomingMessage } from 'node:http'
import { isIP, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import httpProxy from 'http-proxy'
import { BadGateway, GatewayTimeout } from '../errors.js'
import { errorOnSocket } from '../http/reply.js'
import type { Logger } from '../log.js'

/**
 * The WebSocket path (RFC 6455 4.1): an authorized upgrade request is handed
 * to http-proxy, which opens a fresh connection to the upstream, relays the
 * `101 Switching Protocols` and then pipes the two sockets together. HTTP
 * requests go through undici instead (see proxy.ts); http-proxy keeps the
 * upgrade path it does well.
 */

export interface WebSocketUpstreamOptions {
  /** Upstream URL; only its scheme, host and port are used (the path comes with each request). */
  url: URL
  /** PEM CA bundle for an https/wss upstream, or null for the system roots. */
  ca: string | null
  /** Time allowed from dispatch to the upstream's answer to the handshake (connect + headers). */
  handshakeTimeoutMs: number
}

/** Raised when the upstream does not answer the handshake in time. */
class HandshakeTimeout extends Error {
  constructor() {
    super('upstream WebSocket handshake timed out')
    this.name = 'HandshakeTimeout'
  }
}

/** One http-proxy instance per upstream, built per Runtime. */
export class WebSocketUpstream {
  readonly #proxy: httpProxy
  readonly #timeoutMs: number
  /**
   * TLS options for a wss/https upstream's handshake: its own name for SNI
   * and the certificate check ('' for an IP literal: no SNI, the address is
   * checked). Without it Node takes the name from the Host header, which
   * with `preserve_host` is the client's. null for plain http.
   */
  readonly #tls: { servername: string } | null
  /** Client sockets the upstream already answered (101 or otherwise): a later error cannot become a 502. */
  readonly #answered = new WeakSet<Duplex>()

  constructor(options: WebSocketUpstreamOptions) {
    const { url } = options
    const secure = url.protocol === 'https:' || url.protocol === 'wss:'
    // URL.hostname keeps IPv6 brackets; http.request wants the bare address.
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    this.#timeoutMs = options.handshakeTimeoutMs
    this.#tls = secure ? { servername: isIP(hostname) !== 0 ? '' : hostname } : null
    this.#proxy = httpProxy.createProxyServer({
      target: {
        protocol: secure ? 'https:' : 'http:',
        host: hostname,
        hostname,
        port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
        ...(options.ca !== null ? { ca: options.ca } : {}),
      },
      ws: true,
      secure: true,
      // We write X-Forwarded-*, Host and the path ourselves (headers.ts).
      xfwd: false,
      changeOrigin: false,
      ignorePath: true,
    })
    this.#proxy.on('proxyReqWs', (proxyReq, req, socket) => this.#prepare(proxyReq, req, socket))
    // Failures arrive through the per-request callback; this keeps an
    // unexpected one from becoming an uncaught 'error' event.
    this.#proxy.on('error', () => {})
  }

  /**
   * Relay one upgrade. `req.headers` and `req.url` must already hold what the
   * upstream should see (the proxy sets them from the route's header rules and
   * the path the policy judged).
   */
  forward(req: IncomingMessage, socket: Duplex, head: Buffer, log: Logger): void {
    // Node leaves an upgraded socket without an error listener; a client reset
    // must not crash the process.
    socket.on('error', () => socket.destroy())
    // A fresh `ssl` object per call: http-proxy writes each request's options into it.
    const perCall = this.#tls === null ? {} : { ssl: { ...this.#tls } }
    this.#proxy.ws(req, socket, head, perCall, (err) => this.#fail(err, socket, log))
  }

  /** Runs before http-proxy sends the handshake upstream. */
  #prepare(proxyReq: ClientRequest, req: IncomingMessage, socket: Socket): void {
    // http-proxy rebuilds the path through url.parse and collapses slashes;
    // send the exact path the policy judged instead.
    proxyReq.path = req.url ?? '/'
    const timer = setTimeout(() => proxyReq.destroy(new HandshakeTimeout()), this.#timeoutMs)
    timer.unref()
    proxyReq.once('close', () => clearTimeout(timer))
    proxyReq.once('response', () => {
      clearTimeout(timer)
      this.#answered.add(socket)
    })
    proxyReq.once('upgrade', (_res, upstreamSocket: Socket) => {
      clearTimeout(timer)
      this.#answered.add(socket)
      // http-proxy ends the upstream socket on a client error but not on a
      // plain close; tie both lifetimes together.
      socket.once('close', () => upstreamSocket.destroy())
      upstreamSocket.once('close', () => socket.destroy())
    })
    // The client left before the handshake finished: stop the upstream one.
    socket.once('close', () => {
      if (!this.#answered.has(socket)) proxyReq.destroy()
    })
  }

  #fail(err: Error, socket: Duplex, log: Logger): void {
    if (this.#answered.has(socket) || socket.destroyed) {
      socket.destroy()
      return
    }
    const failure = err instanceof HandshakeTimeout ? new GatewayTimeout() : new BadGateway()
    log.warn({ code: (err as NodeJS.ErrnoException).code ?? err.name, status: failure.status }, 'websocket upstream failed')
    errorOnSocket(socket, failure)
  }
}
