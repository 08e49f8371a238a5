/**
 * Attacks over HTTP/2 (h2c with prior knowledge) on the real binary that
 * test/e2e/http2.test.ts does not send (docs/threat-model.md, HTTP/2 and
 * gRPC): the header rules of HTTP/1.1 hold for HTTP/2 requests too, a
 * content-length that disagrees with the DATA frames (H2.CL desync against an
 * HTTP/1.1 upstream) forwards nothing, and a revoked token ends its HTTP/2
 * stream as it ends an HTTP/1.1 one.
 */
import t from 'tap'
import { connect, type ClientHttp2Session } from 'node:http2'
import { createServer, type IncomingMessage } from 'node:http'
import { asConfig, DEMO_SECRET } from '../helpers/as-config.js'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { basic } from '../helpers/client-auth.js'
import { closeServer, eventually, freePort, listen, postForm } from '../helpers/http.js'
import { startStreamingUpstream, type StreamingUpstream } from '../helpers/streams.js'

interface Seen {
  url: string
  rawHeaders: string[]
  body: string
}

/** An upstream that records every request, its raw headers and body; GET /orders/events is an endless stream. */
const seen: Seen[] = []
let streaming: StreamingUpstream
let bin: RunningBin
let session: ClientHttp2Session

t.before(async () => {
  streaming = await startStreamingUpstream()
  const recorder = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      seen.push({ url: req.url ?? '', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString() })
      res.end('ok')
    })
  })
  const { url: recorderUrl } = await listen(recorder)
  const port = await freePort()
  const config = await asConfig({
    port,
    upstream: streaming.url,
    routes: [{ name: 'app', match: { path: '/app' }, upstream: recorderUrl, public: true }],
    override: { http2: { cleartext: true } },
  })
  const cfg = await tempConfig(config)
  bin = await startBin(cfg.file)
  session = connect(bin.url)
  session.on('error', () => {})
  t.teardown(async () => {
    session.destroy()
    await bin.stop()
    await streaming.close()
    void closeServer(recorder)
    await cfg.cleanup()
  })
})

interface H2Answer {
  status: number | undefined
  rstCode: number
  body: string
}

function h2(headers: Record<string, string>, body?: string, on: ClientHttp2Session = session): Promise<H2Answer> {
  return new Promise((resolve) => {
    const req = on.request(headers, { endStream: body === undefined })
    let status: number | undefined
    let text = ''
    req.on('response', (h) => {
      status = Number(h[':status'])
    })
    req.on('data', (d: Buffer) => {
      text += d.toString()
    })
    req.on('error', () => {})
    req.on('close', () => resolve({ status, rstCode: req.rstCode, body: text }))
    if (body !== undefined) req.end(body)
  })
}

const valuesOf = (s: Seen | undefined, name: string): string[] => {
  const out: string[] = []
  const raw = s?.rawHeaders ?? []
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] ?? '').toLowerCase().replaceAll('_', '-') === name) out.push(raw[i + 1] ?? '')
  return out
}

t.test('over HTTP/2, client-sent identity, forwarding and override headers never reach the upstream', async (t) => {
  const before = seen.length
  const answer = await h2({
    ':method': 'GET',
    ':path': '/app/h2',
    'x-auth-subject': 'admin',
    x_auth_subject: 'admin2',
    'x-auth-scope': 'orders:write',
    'x-forwarded-for': '6.6.6.6',
    'x-forwarded-host': 'bank.example',
    forwarded: 'for=6.6.6.6;proto=https',
    'x-original-url': '/orders/secret',
    'x-rewrite-url': '/orders/secret',
  })
  t.equal(answer.status, 200)
  const got = seen.slice(before)[0]
  t.equal(got?.url, '/app/h2')
  for (const name of ['x-auth-subject', 'x-auth-scope', 'x-original-url', 'x-rewrite-url']) t.same(valuesOf(got, name), [], `no ${name}`)
  t.same(valuesOf(got, 'x-forwarded-for'), ['127.0.0.1'], 'X-Forwarded-For is the real peer only')
  t.notMatch(valuesOf(got, 'x-forwarded-host').join(), /bank/, 'no client-sent X-Forwarded-Host')
  t.notMatch(valuesOf(got, 'forwarded').join(), /6\.6\.6\.6/, 'no client-sent Forwarded element')
})

t.test('over HTTP/2, a content-length that disagrees with the body is reset and nothing is forwarded (H2.CL)', async (t) => {
  // nghttp2 refuses the stream; Node 20 resets only it (PROTOCOL_ERROR), Node 24 ends the whole
  // connection (GOAWAY). Either way nothing is forwarded, and only that client's connection is
  // touched: the malformed requests go on a connection of their own.
  const smuggled = 'GET /orders/secret HTTP/1.1\r\nHost: x\r\n\r\n'
  for (const [label, length, body] of [
    ['shorter than the body', '3', `abc${smuggled}`],
    ['longer than the body', '100', 'abc'],
  ] as const) {
    const own = connect(bin.url)
    own.on('error', () => {})
    let goaway = false
    own.on('goaway', () => (goaway = true))
    t.teardown(() => own.destroy())
    const before = seen.length
    const answer = await h2({ ':method': 'POST', ':path': '/app/cl', 'content-length': length }, body, own)
    t.equal(answer.status, undefined, `${label}: no answer, the stream was reset (RST_STREAM ${answer.rstCode})`)
    t.equal(seen.length, before, `${label}: nothing reached the upstream`)
    const after = await h2({ ':method': 'GET', ':path': '/app/after' }, undefined, own)
    t.ok(after.status === 200 || (after.status === undefined && goaway), `${label}: its connection serves on, or was ended with GOAWAY`)
  }
  t.equal((await h2({ ':method': 'GET', ':path': '/app/after' })).status, 200, 'another connection still serves')
})

t.test('a revoked token ends its HTTP/2 stream; another token’s stream goes on', async (t) => {
  const token = async (): Promise<string> => {
    const res = await postForm(`${bin.url}/token`, { grant_type: 'client_credentials', scope: 'orders:read' }, { authorization: basic('service', DEMO_SECRET) })
    return ((await res.json()) as { access_token: string }).access_token
  }
  const open = (tok: string): { chunks: number; closed: boolean; status: number } => {
    const s = { chunks: 0, closed: false, status: 0 }
    const req = session.request({ ':method': 'GET', ':path': '/orders/events', authorization: `Bearer ${tok}` })
    req.on('response', (h) => {
      s.status = Number(h[':status'])
    })
    req.on('data', () => {
      s.chunks++
    })
    req.on('error', () => {})
    req.on('close', () => {
      s.closed = true
    })
    return s
  }
  const doomed = await token()
  const kept = await token()
  const a = open(doomed)
  const b = open(kept)
  t.ok(await eventually(() => a.chunks > 1 && b.chunks > 1), 'both streams deliver')
  t.equal(a.status, 200)
  t.equal((await postForm(`${bin.url}/revoke`, { token: doomed }, { authorization: basic('service', DEMO_SECRET) })).status, 200)
  t.ok(await eventually(() => a.closed, 3000), 'the revoked token’s stream ends')
  const bBefore = b.chunks
  t.ok(await eventually(() => b.chunks > bBefore + 2), 'the other stream goes on')
  t.notOk(b.closed)
  t.ok(await eventually(() => streaming.streams.filter((s) => s.closedAt !== null).length === 1), 'the upstream exchange of the revoked one ended, only it')
})

t.test('a client that drops its HTTP/2 connection ends the upstream exchanges of its open streams', async (t) => {
  // node:http's sockets are half-open: the client's FIN used to leave the session, its streams
  // and their upstream exchanges open until shutdown (an endless stream, forever).
  const res = await postForm(`${bin.url}/token`, { grant_type: 'client_credentials', scope: 'orders:read' }, { authorization: basic('service', DEMO_SECRET) })
  const tok = ((await res.json()) as { access_token: string }).access_token
  const own = connect(bin.url)
  own.on('error', () => {})
  const before = streaming.streams.length
  let chunks = 0
  const req = own.request({ ':method': 'GET', ':path': '/orders/events', authorization: `Bearer ${tok}` })
  req.on('data', () => chunks++)
  req.on('error', () => {})
  t.ok(await eventually(() => chunks > 1), 'the stream delivers')
  const upstream = streaming.streams[before]
  t.ok(upstream, 'its upstream exchange is open')
  own.destroy()
  t.ok(await eventually(() => upstream?.closedAt !== null, 3000), 'the upstream exchange ends once the client is gone')
})
