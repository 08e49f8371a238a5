/**
 * An HTTP/2 client for tests, on node:http2: a session to a server that
 * speaks h2c with prior knowledge (or h2 by ALPN), and one request on it
 * resolved however its stream ends, with what the client saw: status,
 * headers, body, trailers, and the stream's reset code and error.
 */
import { connect, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders, type SecureClientSessionOptions } from 'node:http2'

export interface H2Reply {
  /** undefined when the stream ended without a response head. */
  status: number | undefined
  headers: IncomingHttpHeaders
  body: string
  trailers: IncomingHttpHeaders | null
  /** The RST_STREAM code the stream closed with (0: NO_ERROR, a clean end). */
  rstCode: number | undefined
  /** The error the client's stream emitted, if any (an error code other than NO_ERROR and CANCEL). */
  error: (Error & { code?: string }) | null
  /** Whether node:http2 saw the response body end (END_STREAM), as a client that trusts the body would. */
  ended: boolean
}

/** Open a session to `url` and wait for it to connect. */
export function openSession(url: string, options: SecureClientSessionOptions = {}): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connect(url, options)
    session.once('connect', () => {
      session.off('error', reject)
      session.on('error', () => undefined)
      resolve(session)
    })
    session.once('error', reject)
  })
}

/** One request on `session`; resolves when its stream closes, however it closes. */
export function h2Request(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string | Buffer): Promise<H2Reply> {
  return new Promise((resolve) => {
    const stream = session.request(headers, { endStream: body === undefined })
    let reply: IncomingHttpHeaders = {}
    let trailers: IncomingHttpHeaders | null = null
    let error: (Error & { code?: string }) | null = null
    let ended = false
    const chunks: Buffer[] = []
    stream.on('response', (h) => (reply = h))
    stream.on('trailers', (h) => (trailers = h))
    stream.on('data', (d: Buffer) => chunks.push(d))
    stream.on('end', () => (ended = true))
    stream.on('error', (err: Error) => (error = err))
    stream.on('close', () =>
      resolve({
        status: reply[':status'] as number | undefined,
        headers: reply,
        body: Buffer.concat(chunks).toString('utf8'),
        trailers,
        rstCode: stream.rstCode,
        error,
        ended,
      }),
    )
    if (body !== undefined) stream.end(body)
  })
}

/** One HTTP/2 frame: 9-byte header (RFC 9113 4.1) and payload. */
function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9)
  head.writeUIntBE(payload.length, 0, 3)
  head[3] = type
  head[4] = flags
  head.writeUInt32BE(streamId & 0x7fffffff, 5)
  return Buffer.concat([head, payload])
}

/** An HPACK integer with an N-bit prefix (RFC 7541 5.1), first byte's high bits set to `high`. */
function hpackInt(value: number, prefix: number, high: number): Buffer {
  const max = (1 << prefix) - 1
  if (value < max) return Buffer.from([high | value])
  const out = [high | max]
  let rest = value - max
  while (rest >= 128) {
    out.push((rest % 128) + 128)
    rest = Math.floor(rest / 128)
  }
  out.push(rest)
  return Buffer.from(out)
}

/** A header block of literal fields without indexing, names and values as raw (non-Huffman) strings (RFC 7541 6.2.2). */
function headerBlock(fields: readonly [string, string][]): Buffer {
  const parts: Buffer[] = []
  for (const [name, value] of fields) {
    const n = Buffer.from(name, 'latin1')
    const v = Buffer.from(value, 'latin1')
    parts.push(Buffer.from([0x00]), hpackInt(n.length, 7, 0), n, hpackInt(v.length, 7, 0), v)
  }
  return Buffer.concat(parts)
}

/**
 * Send one request over h2c as raw frames, fields exactly as given (pseudo
 * ones included), for what node:http2's client refuses to send (an
 * `http2-settings` field, connection-specific ones). Resolves with the
 * socket once written; the caller watches the upstream and destroys it.
 */
export function rawH2Request(url: string, fields: readonly [string, string][]): Promise<import('node:net').Socket> {
  return import('node:net').then(
    ({ connect: connectTcp }) =>
      new Promise((resolve, reject) => {
        const { hostname, port } = new URL(url)
        const socket = connectTcp(Number(port), hostname, () => {
          const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1')
          // SETTINGS (empty), then HEADERS with END_STREAM | END_HEADERS on stream 1.
          socket.write(Buffer.concat([preface, frame(0x4, 0, 0, Buffer.alloc(0)), frame(0x1, 0x1 | 0x4, 1, headerBlock(fields))]))
          resolve(socket)
        })
        socket.on('data', (chunk: Buffer) => {
          // Acknowledge the server's SETTINGS so it keeps the connection (a bare scan: SETTINGS without ACK).
          for (let i = 0; i + 9 <= chunk.length; ) {
            const length = chunk.readUIntBE(i, 3)
            if (chunk[i + 3] === 0x4 && (chunk[i + 4] ?? 0) === 0) socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0)))
            i += 9 + length
          }
        })
        socket.on('error', reject)
      }),
  )
}
