/**
 * An upstream that answers with bytes the test writes, on a raw socket:
 * heads and trailers no HTTP library would send (pseudo-header names,
 * connection-specific fields, repeated singletons, invalid names and
 * values), and bodies cut mid-way. Each request's answer is taken from a
 * queue; with none queued it answers a plain 200 `ok`.
 */
import { createServer, type Server, type Socket } from 'node:net'
import { listen } from './http.js'

/** What the upstream does with one request: write these bytes, then end the connection or cut it. */
export interface RawAnswer {
  bytes: Buffer | string
  /** 'end' closes the connection cleanly after the bytes (the default); 'cut' destroys it (a reset mid-body). */
  close?: 'end' | 'cut'
}

export interface RawUpstream {
  url: string
  /** Requests whose head arrived, in order (the request line and headers, as text). */
  readonly heads: string[]
  /** Queue the answer to a request to come. */
  answer(a: RawAnswer): void
  close(): Promise<void>
}

export const OK_ANSWER: RawAnswer = { bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok' }

/** A chunked answer (200 unless told) with `head` fields, the body `hello` and `trailers` (each a raw `name: value` line, written as given). */
export function chunkedAnswer(head: readonly string[], trailers: readonly string[], status = 200): string {
  const fields = head.map((line) => `${line}\r\n`).join('')
  const trailer = trailers.map((line) => `${line}\r\n`).join('')
  return `HTTP/1.1 ${status} X\r\n${fields}transfer-encoding: chunked\r\nconnection: close\r\n\r\n5\r\nhello\r\n0\r\n${trailer}\r\n`
}

export async function startRawUpstream(): Promise<RawUpstream> {
  const heads: string[] = []
  const queue: RawAnswer[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    socket.on('error', () => undefined)
    let buffered = ''
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('latin1')
      const end = buffered.indexOf('\r\n\r\n')
      if (end === -1) return
      socket.off('data', onData)
      heads.push(buffered.slice(0, end))
      const answer = queue.shift() ?? OK_ANSWER
      socket.write(answer.bytes, () => {
        if (answer.close === 'cut') socket.destroy()
        else socket.end()
      })
    }
    socket.on('data', onData)
  })
  const { url } = await listen(server)
  return {
    url,
    heads,
    answer: (a) => void queue.push(a),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
