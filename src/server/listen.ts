import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { readFile } from 'node:fs/promises'
import { createSecureContext, type TLSSocket } from 'node:tls'
import type { Config, ListenAddress } from '../config/validated-config.js'

/** Binding the servers and the settings Node's server applies itself. */

/**
 * How often Node looks for request heads past `client_timeouts.headers`.
 * Its default (30 s) would let a slowloris hold a socket up to 30 s past the
 * bound; a quarter of the bound, at most 1 s, costs one walk of the
 * connection list per tick.
 */
export function connectionsCheckingInterval(headersMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(headersMs / 4)))
}

/** The timeouts Node's server applies itself; set at start and on every reload. */
export function applyServerTimeouts(server: Server, config: Config): void {
  const t = config.clientTimeouts
  server.headersTimeout = t.headersMs
  // Off: a whole-request bound in Node cuts the socket from under a request
  // we may still answer; body bounds are http/body-timeouts.ts's.
  server.requestTimeout = 0
  server.keepAliveTimeout = t.keepAliveMs
}

/** Read and check the TLS files, so a bad pair (or CA file) refuses the reload before anything is swapped. */
export async function secureContextOptions(tls: NonNullable<Config['tls']>): Promise<{ cert: Buffer; key: Buffer; ca?: Buffer }> {
  const [cert, key, ca] = await Promise.all([readFile(tls.certFile), readFile(tls.keyFile), tls.clientCaFile === null ? null : readFile(tls.clientCaFile)])
  const options = ca === null ? { cert, key } : { cert, key, ca }
  createSecureContext(options)
  return options
}

/**
 * What the handshake asks of clients (RFC 8705 2): with `client_ca`, a
 * certificate. `optional` lets a client without one, or with one `client_ca`
 * does not vouch for, complete the handshake (the request goes on without a
 * verified certificate: http/client-certificate.ts reads `socket.authorized`);
 * `required` makes the handshake refuse it. Read by Node per connection, so a
 * reload applies it to the next connection.
 */
export function clientCertificateOptions(tls: NonNullable<Config['tls']>): { requestCert: boolean; rejectUnauthorized: boolean } {
  return { requestCert: tls.clientCertificates !== 'off', rejectUnauthorized: tls.clientCertificates === 'required' }
}

/** Apply {@link clientCertificateOptions} to a running server (node:tls reads them per connection; setSecureContext does not set them). */
export function applyClientCertificateOptions(server: Server, tls: NonNullable<Config['tls']>): void {
  Object.assign(server, clientCertificateOptions(tls))
}

/** The URL a bound address is reached at. */
export function urlOf(addr: AddressInfo, tls: boolean): string {
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address
  return `${tls ? 'https' : 'http'}://${host}:${addr.port}`
}

/** Listen on `addr`; a refusal (address in use, no permission) rejects with a message naming the address. */
export function listenOn(server: Server, addr: ListenAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      server.off('listening', onListening)
      const why = err.code === 'EADDRINUSE' ? 'the address is already in use' : err.code === 'EACCES' ? 'permission denied' : err.message
      reject(new Error(`cannot listen on ${addr.host}:${addr.port}: ${why}`))
    }
    const onListening = (): void => {
      server.off('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(addr.port, addr.host)
  })
}

/**
 * The `listen` server: https when `tls` is set (its certificate pair read
 * now), else http, with the client timeouts and half-open connections.
 */
export async function createListenServer(config: Config, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> {
  // Node's defaults leave slow clients holding sockets for long; bound them.
  const options = {
    connectionsCheckingInterval: connectionsCheckingInterval(config.clientTimeouts.headersMs),
    headersTimeout: config.clientTimeouts.headersMs,
    requestTimeout: 0,
    keepAliveTimeout: config.clientTimeouts.keepAliveMs,
  }
  let server: Server
  if (config.tls) {
    const secure = await secureContextOptions(config.tls)
    // allowHalfOpen: the TLS socket outlives the client's FIN (see httpAllowHalfOpen below).
    // With `http2.tls`, ALPN offers h2 first; server/http2.ts takes those connections.
    const alpn = config.http2.tls ? { ALPNProtocols: ['h2', 'http/1.1'] } : {}
    // A handshake gets the time a request head gets: Node's default (120 s) would let a
    // client that stops mid-handshake hold a socket that long.
    const handshakeTimeout = config.clientTimeouts.headersMs
    server = createHttpsServer({ ...secure, ...clientCertificateOptions(config.tls), allowHalfOpen: true, handshakeTimeout, ...alpn, ...options }, handler)
    refuseRenegotiation(server)
  } else {
    server = createHttpServer(options, handler)
  }
  applyServerTimeouts(server, config)
  trackSockets(server)
  // A client that half-closes after its request (shuts its write side, as
  // some clients and load balancers do) still reads: without this Node
  // ends the socket at the client's FIN, and the answer, and possibly a
  // forwarded request's response, is lost. The socket ends after the last
  // answer instead.
  ;(server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true
  return server
}

/**
 * A TLS 1.2 client may renegotiate and present another certificate on a
 * connection whose first one was already read (and cached per connection,
 * http/client-certificate.ts): renegotiation is refused on every connection.
 * Nothing else needs it, and it is a denial-of-service lever besides.
 */
export function refuseRenegotiation(server: Server): void {
  server.on('secureConnection', (socket: TLSSocket) => socket.disableRenegotiation())
}

/** Every raw connection of a `listen` server, from accept to close. */
const OPEN_SOCKETS = Symbol('bearward.openSockets')
type TrackingServer = Server & { [OPEN_SOCKETS]?: Set<Socket> }

/**
 * Keep the server's raw sockets: Node's closeAllConnections() reaches only
 * connections its HTTP parser has seen, so a TLS client that stopped
 * mid-handshake (half-open, as `allowHalfOpen` keeps it) would hold
 * server.close(), and so shutdown, until the backstop.
 */
function trackSockets(server: Server): void {
  const open = new Set<Socket>()
  ;(server as TrackingServer)[OPEN_SOCKETS] = open
  server.on('connection', (socket: Socket) => {
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
}

/** Destroy whatever sockets of `server` are still open (shutdown, after the drain). */
export function destroyOpenSockets(server: Server): void {
  for (const socket of (server as TrackingServer)[OPEN_SOCKETS] ?? []) socket.destroy()
}
