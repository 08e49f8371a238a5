/**
 * readBody (src/http/body.ts) over real HTTP/1.1 and HTTP/2 servers: the
 * body comes back byte for byte whether it arrived in one chunk or many; a
 * body over the limit is refused; and a body read over HTTP/2, whose chunks
 * are views into the connection's reads, is copied into memory of its own,
 * so a small body does not keep a whole read of the connection alive.
 */
import { createServer, request, type IncomingMessage } from 'node:http'
import { createServer as createH2Server, type Http2ServerRequest } from 'node:http2'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { PayloadTooLarge } from '../../src/errors.js'
import { readBody } from '../../src/http/body.js'
import { closeServer, listen } from '../helpers/http.js'
import { h2Request, openSession } from '../helpers/http2.js'

type Read = { body: Buffer } | { error: unknown }

/**
 * An HTTP/1.1 server that reads each body with `limit`; `reads` holds each
 * outcome, recorded before the answer is sent, so it is there once the client has its status.
 */
async function h1Server(limit: number): Promise<{ url: string; reads: Read[]; close(): Promise<void> }> {
  const reads: Read[] = []
  const server = createServer((req: IncomingMessage, res) => {
    readBody(req, limit).then(
      (body) => {
        reads.push({ body })
        res.end('ok')
      },
      (error: unknown) => {
        reads.push({ error })
        res.statusCode = 413
        res.end()
      },
    )
  })
  const { url } = await listen(server)
  return { url, reads, close: () => closeServer(server) }
}

/** POST `parts` one write each; resolves with the status. */
function post(url: string, parts: readonly Buffer[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/octet-stream' } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    for (const part of parts) req.write(part)
    req.end()
  })
}

t.test('HTTP/1.1: a body in one chunk and one in many come back byte for byte', async (t) => {
  const server = await h1Server(1 << 20)
  t.teardown(() => server.close())

  const small = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_order' } }))
  t.equal(await post(server.url, [small]), 200)
  const one = server.reads[0]
  t.ok(one !== undefined && 'body' in one && one.body.equals(small), 'the one-chunk body is the bytes sent')

  // 300 KiB in 30 writes: more than one socket read, so more than one chunk.
  const parts = Array.from({ length: 30 }, (_, i) => Buffer.alloc(10 * 1024, i))
  t.equal(await post(server.url, parts), 200)
  const many = server.reads[1]
  t.ok(many !== undefined && 'body' in many && many.body.equals(Buffer.concat(parts)), 'the many-chunk body is the bytes sent, in order')
})

t.test('HTTP/1.1: a body over the limit is refused with PayloadTooLarge', async (t) => {
  const server = await h1Server(1024)
  t.teardown(() => server.close())
  t.equal(await post(server.url, [Buffer.alloc(600), Buffer.alloc(600)]), 413)
  const read = server.reads[0]
  t.ok(read !== undefined && 'error' in read && read.error instanceof PayloadTooLarge, 'refused as too large')
})

t.test('HTTP/2: the body is the bytes sent, in memory of its own', async (t) => {
  const bodies: Buffer[] = []
  const chunks: Buffer[] = []
  const server = createH2Server((req: Http2ServerRequest, res) => {
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    readBody(req as unknown as IncomingMessage, 1 << 20).then(
      (body) => {
        bodies.push(body)
        res.end('ok')
      },
      () => {
        res.statusCode = 500
        res.end()
      },
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => closeServer(server))
  const session = await openSession(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  t.teardown(() => session.close())

  const sent = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}')
  const { status } = await h2Request(session, { ':method': 'POST', ':path': '/', 'content-type': 'application/json' }, sent)
  t.equal(status, 200)
  const body = bodies[0]
  t.ok(body?.equals(sent), 'the body is the bytes sent')
  // Each chunk is a view into a read of the connection (frame headers and other streams' data
  // around it): the body is a copy, so keeping it does not keep that read.
  t.equal(chunks.length, 1, 'the body came in one chunk')
  t.ok(chunks[0] !== undefined && chunks[0].buffer.byteLength > sent.length, 'a view into a larger read')
  t.not(body?.buffer, chunks[0]?.buffer, 'the body does not share its memory')
})
