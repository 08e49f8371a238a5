/**
 * An upstream's answer relayed to HTTP/2 and HTTP/1.1 clients (issue #38):
 * nothing an upstream sends may throw outside a handler (node:http2 throws
 * on trailers HTTP/2 cannot carry from inside a native callback, which
 * ended the process), and a cut answer must not look whole to an HTTP/2
 * client (a stream reset with NO_ERROR reads as a normal end). A fuzz of
 * upstream heads and trailers, sent by a raw-socket upstream, holds both.
 */
import t from 'tap'
import fc from 'fast-check'
import { constants, type ClientHttp2Session } from 'node:http2'
import { startGateway, send, type Harness, type Reply } from './fixture.js'
import { h2Request, openSession, type H2Reply } from '../helpers/http2.js'
import { chunkedAnswer, startRawUpstream, type RawUpstream } from '../helpers/raw-upstream.js'

async function gatewayBefore(raw: RawUpstream): Promise<Harness> {
  return startGateway({
    routes: (up) => `
  - name: raw
    match: { path: /raw }
    upstream: ${raw.url}
    public: true
  - name: orders
    match: { path: /orders }
    upstream: ${raw.url}
  - name: ok
    match: { path: /ok }
    upstream: ${up}
    public: true
`,
    extra: 'http2: { cleartext: true }',
  })
}

/** An HTTP/1.1 request that resolves with the answer or the error the client saw. */
async function h1(gw: Harness, target: string, headers: Record<string, string> = {}): Promise<Reply | Error> {
  try {
    return await send(gw.url, target, { headers })
  } catch (err) {
    return err as Error
  }
}

t.test('trailers HTTP/2 cannot carry are dropped, and the process stays up', async (t) => {
  const raw = await startRawUpstream()
  const gw = await gatewayBefore(raw)
  const session: ClientHttp2Session = await openSession(gw.url)
  t.teardown(async () => {
    session.destroy()
    await gw.close()
    await raw.close()
  })

  const cases: [string, string[], Record<string, string | undefined>][] = [
    ['an http2-settings trailer', ['http2-settings: AAMAAABkAAQAoAAAAAIAAAAA', 'x-sum: 1'], { 'x-sum': '1', 'http2-settings': undefined }],
    ['two content-type trailers', ['content-type: text/plain', 'content-type: text/html', 'x-sum: 2'], { 'content-type': 'text/plain', 'x-sum': '2' }],
    ['two etag trailers', ['etag: "a"', 'etag: "b"'], { etag: '"a"' }],
    [
      'connection-specific trailers',
      ['keep-alive: timeout=5', 'proxy-connection: close', 'upgrade: h2c', 'te: trailers', 'x-sum: 3'],
      { 'x-sum': '3', te: undefined, upgrade: undefined },
    ],
  ]
  for (const [name, trailers, expected] of cases) {
    await t.test(name, async (t) => {
      raw.answer({ bytes: chunkedAnswer(['content-type: text/plain', 'trailer: x-sum'], trailers) })
      const got = await h2Request(session, { ':path': '/raw/t', te: 'trailers' })
      t.equal(got.status, 200)
      t.equal(got.body, 'hello')
      t.equal(got.rstCode, constants.NGHTTP2_NO_ERROR, 'a clean end')
      t.match(got.trailers ?? {}, expected, 'the trailers the client could be sent')
      for (const [field, value] of Object.entries(expected)) if (value === undefined) t.notOk(field in (got.trailers ?? {}), `no ${field} trailer`)
      raw.answer({ bytes: chunkedAnswer([], trailers) })
      const h1got = await h1(gw, '/raw/t', { te: 'trailers' })
      t.notOk(h1got instanceof Error, 'an HTTP/1.1 client gets the answer too')
      if (!(h1got instanceof Error)) t.equal(h1got.body, 'hello')
      const after = await h2Request(session, { ':path': '/ok/after' })
      t.equal(after.status, 200, 'the gateway still answers')
    })
  }

  await t.test('a content-length trailer, which undici refuses: a clean error on both protocols', async (t) => {
    raw.answer({ bytes: chunkedAnswer([], ['content-length: 99']) })
    const got = await h2Request(session, { ':path': '/raw/cl' })
    t.equal(got.rstCode, constants.NGHTTP2_INTERNAL_ERROR)
    t.notOk(got.ended, 'never a clean end')
    raw.answer({ bytes: chunkedAnswer([], ['content-length: 99']) })
    t.ok((await h1(gw, '/raw/cl')) instanceof Error, 'the HTTP/1.1 client sees its connection cut')
  })

  await t.test('a repeated singleton in the head reaches an HTTP/2 client once', async (t) => {
    raw.answer({
      bytes: chunkedAnswer(
        ['content-type: text/plain', 'content-type: text/html', 'etag: "1"', 'etag: "2"', 'http2-settings: x', 'x-many: a', 'x-many: b'],
        [],
      ),
    })
    const got = await h2Request(session, { ':path': '/raw/h' })
    t.equal(got.status, 200, "the upstream's answer, not a 502")
    t.equal(got.headers['content-type'], 'text/plain')
    t.equal(got.headers.etag, '"1"')
    t.notOk('http2-settings' in got.headers)
    t.equal(got.headers['x-many'], 'a, b', 'other repeats are kept')
    t.equal(got.body, 'hello')
  })
})

t.test('a cut answer is reset with an error code, never NO_ERROR', async (t) => {
  const raw = await startRawUpstream()
  const gw = await gatewayBefore(raw)
  const session: ClientHttp2Session = await openSession(gw.url)
  t.teardown(async () => {
    session.destroy()
    await gw.close()
    await raw.close()
  })

  await t.test('the upstream dies mid-body', async (t) => {
    raw.answer({ bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\npartial', close: 'cut' })
    const got = await h2Request(session, { ':path': '/raw/cut' })
    t.equal(got.status, 200)
    t.equal(got.rstCode, constants.NGHTTP2_INTERNAL_ERROR)
    t.equal(got.error?.code, 'ERR_HTTP2_STREAM_ERROR', 'the client sees an error')
    t.notOk(got.ended, 'the partial body never ends as a whole one')
    raw.answer({ bytes: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n7\r\npartial\r\n', close: 'cut' })
    const chunked = await h2Request(session, { ':path': '/raw/cut' })
    t.equal(chunked.rstCode, constants.NGHTTP2_INTERNAL_ERROR, 'a chunked body cut alike')
    t.notOk(chunked.ended)
    // A clean FIN before the last chunk, or before Content-Length bytes: cut alike.
    raw.answer({ bytes: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n7\r\npartial\r\n', close: 'end' })
    const fin = await h2Request(session, { ':path': '/raw/fin' })
    t.equal(fin.rstCode, constants.NGHTTP2_INTERNAL_ERROR, 'a chunked body ended by FIN')
    t.notOk(fin.ended)
    raw.answer({ bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial', close: 'end' })
    const short = await h2Request(session, { ':path': '/raw/fin' })
    t.equal(short.rstCode, constants.NGHTTP2_INTERNAL_ERROR, 'a sized body ended short by FIN')
    t.notOk(short.ended)
  })

  await t.test('the token is revoked while the answer streams', async (t) => {
    const jti = 'revoked-mid-stream'
    const token = await gw.mint({ scope: 'orders:read', claims: { jti } })
    // An answer that never ends: the head and a first chunk, then nothing.
    raw.answer({ bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n6\r\ndata:1\r\n', close: 'end' })
    const pending = new Promise<H2Reply>((resolve) => {
      const stream = session.request({ ':path': '/orders/events', authorization: `Bearer ${token}` })
      let status: number | undefined
      let error: (Error & { code?: string }) | null = null
      let ended = false
      stream.on('response', (h) => {
        status = h[':status'] as number
        gw.revocations.add({ kind: 'jti', id: jti, exp: Math.floor(gw.clock.now() / 1000) + 600 })
      })
      stream.on('data', () => undefined)
      stream.on('end', () => (ended = true))
      stream.on('error', (err: Error) => (error = err))
      stream.on('close', () => resolve({ status, headers: {}, body: '', trailers: null, rstCode: stream.rstCode, error, ended }))
    })
    const got = await pending
    t.equal(got.status, 200)
    t.equal(got.rstCode, constants.NGHTTP2_INTERNAL_ERROR)
    t.equal(got.error?.code, 'ERR_HTTP2_STREAM_ERROR')
    t.notOk(got.ended)
  })
})

/** Field names an upstream may send, good and bad, weighted towards the ones node:http2 refuses. */
const NAMES = [
  'x-a',
  'X-B',
  'set-cookie',
  'cache-control',
  'content-type',
  'etag',
  'location',
  'date',
  'age',
  'content-length',
  'content-encoding',
  'last-modified',
  'user-agent',
  'authorization',
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'http2-settings',
  'trailer',
  ':status',
  ':path',
  ':authority',
  ':x',
  'bad name',
  'x\u0001y',
  'x(y)',
  'é',
  '',
  'grpc-status',
  'x-request-id',
]
const VALUES = [
  '1',
  'text/plain',
  'trailers',
  'close',
  'chunked',
  '',
  ' padded ',
  'a\u0000b',
  'a\u007fb',
  'caf\u00e9',
  '\t',
  'x'.repeat(300),
  'a\rb',
  '"q"',
  '0',
  '-1',
]

/** Statuses whose answers carry no body (204, 304), interim ones (100, 103), one for an upgrade never asked for (101), odd ones. */
const STATUSES = [200, 200, 200, 204, 304, 100, 101, 103, 205, 404, 502, 599, 999]

const field = fc.tuple(fc.constantFrom(...NAMES), fc.constantFrom(...VALUES)).map(([n, v]) => `${n}: ${v}`)

t.test('fuzz: whatever heads and trailers the upstream sends, each client gets an answer or a clean error, and the process stays up', async (t) => {
  const raw = await startRawUpstream()
  const gw = await gatewayBefore(raw)
  const session: ClientHttp2Session = await openSession(gw.url)
  t.teardown(async () => {
    session.destroy()
    await gw.close()
    await raw.close()
  })
  let runs = 0
  await fc.assert(
    fc.asyncProperty(fc.array(field, { maxLength: 6 }), fc.array(field, { maxLength: 6 }), fc.constantFrom(...STATUSES), async (head, trailers, status) => {
      runs++
      const bytes = chunkedAnswer(head, trailers, status)
      raw.answer({ bytes })
      const got = await h2Request(session, { ':path': '/raw/f', te: 'trailers' })
      // A response that ended cleanly carries the whole body; anything else ended with an error code.
      if (got.ended && got.rstCode === constants.NGHTTP2_NO_ERROR && got.status === 200) {
        if (got.body !== 'hello') throw new Error(`h2: a clean end with a partial body: ${JSON.stringify(got.body)}`)
      } else if (got.status === undefined || got.status === 200) {
        if (got.rstCode === constants.NGHTTP2_NO_ERROR && got.error === null) throw new Error(`h2: no answer and no error for ${JSON.stringify(bytes)}`)
      }
      raw.answer({ bytes })
      const plain = await h1(gw, '/raw/f', { te: 'trailers' })
      if (!(plain instanceof Error) && plain.status === 200 && plain.body !== 'hello') throw new Error(`h1: a partial body: ${JSON.stringify(plain.body)}`)
      const after = await h2Request(session, { ':path': '/ok/alive' })
      if (after.status !== 200) throw new Error(`the gateway stopped answering after ${JSON.stringify(bytes)}`)
    }),
    { numRuns: 150, seed: Number(process.env.FUZZ_SEED ?? 3801), endOnFailure: true },
  )
  t.equal(runs > 0, true, `${runs} upstream answers relayed`)
  const last = await h1(gw, '/ok/last')
  t.notOk(last instanceof Error)
})
