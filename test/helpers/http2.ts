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
