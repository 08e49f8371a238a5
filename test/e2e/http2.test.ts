import t from 'tap'
import { connect, constants, createSecureServer, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2'
import { readFileSync } from 'node:fs'
import { Agent, fetch as undiciFetch } from 'undici'
import { startBin, tempConfig } from '../helpers/bin.js'
import { eventually, listen } from '../helpers/http.js'
import { selfSignedCert } from '../helpers/tls.js'
import { startUpstream } from '../helpers/upstream.js'
import { chunkedAnswer, startRawUpstream } from '../helpers/raw-upstream.js'

/**
 * HTTP/2 clients through bin/bearward (issue #33): h2 by ALPN beside
 * HTTP/1.1 on a TLS listen, h2c with prior knowledge beside HTTP/1.1 on a
 * plain one, and an HTTP/2 upstream. The checks HTTP/1.1 gets hold on
 * HTTP/2: refusals, path normalisation, header size; and the rapid-reset
 * attack (CVE-2023-44487) ends the attacker's connection only.
 */

interface H2Reply {
  status: number | undefined
  headers: IncomingHttpHeaders
  body: string
  rstCode: number | undefined
}

/** One request on `session`; resolves when its stream closes, however it closes. */
function request(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string): Promise<H2Reply> {
  return new Promise((resolve) => {
    const stream = session.request(headers, { endStream: body === undefined })
    let reply: IncomingHttpHeaders = {}
    let text = ''
    stream.on('response', (h) => (reply = h))
    stream.on('data', (d: Buffer) => (text += d.toString('utf8')))
    stream.on('error', () => undefined)
    stream.on('close', () => resolve({ status: reply[':status'] as number | undefined, headers: reply, body: text, rstCode: stream.rstCode }))
    if (body !== undefined) stream.end(body)
  })
}

function opened(session: ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => {
    session.once('connect', () => resolve())
    session.once('error', reject)
  })
}

t.test('h2c with prior knowledge beside HTTP/1.1 on a plain listen', async (t) => {
  const up = await startUpstream('app', (req, res, body) => {
    if (req.url?.startsWith('/hang')) return // never answers: the rapid-reset client's target
    const payload = JSON.stringify({ url: req.url, body, host: req.headers.host, forwardedHost: req.headers['x-forwarded-host'] })
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) })
    res.end(payload)
  })
  const cfg = await tempConfig(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://gw.test
log: { level: info }
http2: { cleartext: true, max_resets: 20, reset_window: 10s }
authorization_server:
  clients: []
routes:
  - name: public
    match: { path: /public }
    upstream: ${up.url}
    public: true
  - name: small
    match: { path: /small }
    upstream: ${up.url}
    public: true
    max_body: 1kb
  - name: hang
    match: { path: /hang }
    upstream: ${up.url}
    public: true
  - name: private
    match: { path: /private }
    upstream: ${up.url}
    token: jwt
`)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const session = connect(bin.url)
  t.teardown(() => session.destroy())
  await opened(session)

  await t.test('an ordinary route: the answer, :authority as the Host the upstream is told of', async (t) => {
    const got = await request(session, { ':path': '/public/a?x=1', ':method': 'POST', 'content-type': 'text/plain' }, 'hello over h2')
    t.equal(got.status, 200)
    t.match(got.headers['x-request-id'], /^[0-9a-f]{12}-[0-9a-z]+$/)
    const seen = JSON.parse(got.body) as { url: string; body: string; forwardedHost: string }
    t.same(seen, { url: '/public/a?x=1', body: 'hello over h2', host: new URL(up.url).host, forwardedHost: new URL(bin.url).host })
    const traceId = 'c'.repeat(32)
    const traced = await request(session, { ':path': '/public/traced', traceparent: `00-${traceId}-${'d'.repeat(16)}-01` })
    t.equal(traced.status, 200)
    t.match(up.seen.at(-1)?.headers.traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), 'the trace continues to the upstream')
    t.ok(await eventually(() => bin.lines.some((l) => l.includes(`"trace_id":"${traceId}"`))), 'the access line names the trace')
    const raw = up.seen.at(-1)?.rawHeaders ?? []
    t.notOk(
      raw.some((name, i) => i % 2 === 0 && name.startsWith(':')),
      'no pseudo-header reaches the upstream',
    )
  })

  await t.test('HTTP/1.1 keeps working on the same port', async (t) => {
    const res = await fetch(`${bin.url}/public/h1`)
    t.equal(res.status, 200)
    t.match(await res.json(), { url: '/public/h1' })
  })

  await t.test('a refusal: the same status, challenge and JSON body as over HTTP/1.1; nothing upstream', async (t) => {
    const before = up.seen.length
    const got = await request(session, { ':path': '/private/x' })
    t.equal(got.status, 401)
    t.match(got.headers['www-authenticate'], /^Bearer realm="bearward"/)
    t.equal(got.headers['content-type'], 'application/json')
    t.same(JSON.parse(got.body), { error_description: 'A bearer access token is required' })
    const h1 = await fetch(`${bin.url}/private/x`)
    t.equal(h1.status, got.status)
    t.equal(h1.headers.get('www-authenticate'), got.headers['www-authenticate'])
    t.same(await h1.json(), JSON.parse(got.body))
    t.equal(up.seen.length, before)
  })

  await t.test('path normalisation: a dot-segment walk from a public route to a private one is judged as the private one', async (t) => {
    const before = up.seen.length
    for (const path of ['/public/../private/x', '/public/%2e%2e/private/x', '/public/%2E%2E%2Fprivate/x', '/public/..%2fprivate/x']) {
      const got = await request(session, { ':path': path })
      t.not(got.status, 200, `${path} is not served as public`)
      t.ok(got.status === 401 || got.status === 400 || got.status === 404, `${path}: ${got.status}`)
    }
    t.equal(up.seen.length, before, 'nothing reached the upstream')
  })

  await t.test('a Host that names another authority than :authority is refused', async (t) => {
    const before = up.seen.length
    const got = await request(session, { ':path': '/public/x', ':authority': 'gw.test', host: 'other.test' })
    t.equal(got.status, 400)
    t.match(JSON.parse(got.body), { error: 'invalid_request' })
    t.equal(up.seen.length, before)
  })

  await t.test('an oversized header list: the stream is reset before anything is forwarded; the connection lives on', async (t) => {
    const before = up.seen.length
    const got = await request(session, { ':path': '/public/big', 'x-big': 'a'.repeat(20_000) })
    t.equal(got.status, undefined, 'no answer')
    t.equal(got.rstCode, constants.NGHTTP2_ENHANCE_YOUR_CALM)
    t.equal(up.seen.length, before)
    const after = await request(session, { ':path': '/public/after' })
    t.equal(after.status, 200, 'the same connection still serves')
  })

  await t.test('max_body holds for HTTP/2 bodies, with and without a length', async (t) => {
    const before = up.seen.length
    const declared = await request(session, { ':path': '/small/a', ':method': 'POST', 'content-length': '4096' }, 'x'.repeat(4096))
    t.equal(declared.status, 413, 'a declared length past max_body')
    t.equal(up.seen.length, before, 'refused before anything is forwarded')
    const streamed = await request(session, { ':path': '/small/b', ':method': 'POST' }, 'x'.repeat(4096))
    t.equal(streamed.status, 413, 'a body without a length, counted as it streams')
    t.equal(up.seen.filter((r) => r.url === '/small/b').length, 0, 'the upstream never got a whole request')
    const fits = await request(session, { ':path': '/small/c', ':method': 'POST' }, 'x'.repeat(512))
    t.equal(fits.status, 200)
  })

  await t.test('a stream the client resets aborts its upstream exchange', async (t) => {
    const seen = up.seen.length
    const closed = new Promise<void>((resolve) => up.server.once('request', (req) => req.socket.once('close', () => resolve())))
    const stream = session.request({ ':path': '/hang/one' })
    stream.on('error', () => undefined)
    t.ok(await eventually(() => up.seen.length > seen), 'the upstream has the request')
    stream.close(constants.NGHTTP2_CANCEL)
    // Left open, the exchange would hold the upstream connection until bearward stops.
    await closed
    t.pass('the upstream connection is released')
  })

  await t.test('rapid reset: a client that opens and resets streams gets GOAWAY; others are served', async (t) => {
    const attacker = connect(bin.url)
    t.teardown(() => attacker.destroy())
    await opened(attacker)
    const goaway = new Promise<number>((resolve) => attacker.once('goaway', (code: number) => resolve(code)))
    attacker.on('error', () => undefined)
    let resets = 0
    for (let i = 0; i < 60 && !attacker.destroyed && !attacker.closed; i++) {
      const seen = up.seen.length
      const stream = attacker.request({ ':path': `/hang/${i}` })
      stream.on('error', () => undefined)
      // Reset once the stream is open at both ends (the upstream has the request, the answer is pending).
      if (!(await eventually(() => up.seen.length > seen || attacker.destroyed, 2000, 1))) break
      stream.close(constants.NGHTTP2_CANCEL)
      resets++
    }
    t.equal(await goaway, constants.NGHTTP2_ENHANCE_YOUR_CALM)
    t.ok(resets > 20 && resets < 60, `GOAWAY after max_resets (${resets} resets sent)`)
    t.ok(await eventually(() => attacker.destroyed || attacker.closed), 'the connection is closed')
    t.ok(await eventually(() => bin.lines.some((l) => l.includes('reset too many streams'))), 'and logged')
    const other = connect(bin.url)
    t.teardown(() => other.destroy())
    const got = await request(other, { ':path': '/public/still' })
    t.equal(got.status, 200, 'another client is served')
    const mine = await request(session, { ':path': '/public/mine' })
    t.equal(mine.status, 200, 'so is the first connection')
  })
})

t.test('h2 by ALPN beside HTTP/1.1 on a TLS listen, to an HTTP/2 upstream over TLS', async (t) => {
  const cfg = await tempConfig('')
  const listenCert = selfSignedCert(cfg.dir, 'listen')
  const upstreamCert = selfSignedCert(cfg.dir, 'upstream')
  // An HTTP/2-only upstream: it answers with the protocol it was spoken to in, and a trailer.
  const upstream = createSecureServer({ cert: readFileSync(upstreamCert.certFile), key: readFileSync(upstreamCert.keyFile) }, (req, res) => {
    res.setHeader('content-type', 'application/json')
    res.addTrailers({ 'x-checksum': 'abc' })
    res.end(JSON.stringify({ version: req.httpVersion, url: req.url }))
  })
  const upstreamAt = await listen(upstream)
  const upstreamUrl = `https://127.0.0.1:${upstreamAt.port}`
  await import('node:fs/promises').then((fs) =>
    fs.writeFile(
      cfg.file,
      `
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
tls: { cert_file: ${listenCert.certFile}, key_file: ${listenCert.keyFile} }
http2: { tls: true }
routes:
  - name: h2
    match: { path: /h2 }
    upstream: ${upstreamUrl}
    http2: true
    upstream_ca: ${upstreamCert.certFile}
    public: true
`,
    ),
  )
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await new Promise<void>((resolve) => upstream.close(() => resolve()))
    await cfg.cleanup()
  })
  const session = connect(bin.url, { ca: listenCert.cert, servername: 'localhost' })
  t.teardown(() => session.destroy())
  await opened(session)
  t.equal(session.alpnProtocol, 'h2', 'ALPN chose h2')
  const trailers = new Promise<IncomingHttpHeaders>((resolve) => {
    const stream = session.request({ ':path': '/h2/x' })
    stream.on('trailers', resolve)
    stream.resume()
  })
  const got = await request(session, { ':path': '/h2/y' })
  t.equal(got.status, 200)
  t.same(JSON.parse(got.body), { version: '2.0', url: '/h2/y' }, 'the upstream was spoken to in HTTP/2')
  t.equal((await trailers)['x-checksum'], 'abc', "the upstream's trailer reaches the client")

  const dispatcher = new Agent({ connect: { ca: listenCert.cert, servername: 'localhost' } })
  t.teardown(() => dispatcher.close())
  const h1 = await undiciFetch(`${bin.url}/h2/z`, { dispatcher })
  t.equal(h1.status, 200, 'an HTTP/1.1 client on the same port')
  t.same(await h1.json(), { version: '2.0', url: '/h2/z' })
})

t.test('an upstream trailer HTTP/2 cannot carry does not end the process (issue #38)', async (t) => {
  const raw = await startRawUpstream()
  const cfg = await tempConfig(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
http2: { cleartext: true }
routes:
  - name: raw
    match: { path: /raw }
    upstream: ${raw.url}
    public: true
`)
  const bin = await startBin(cfg.file)
  let exitCode: number | null | undefined
  void bin.exited.then((code) => (exitCode = code))
  t.teardown(async () => {
    await bin.stop()
    await raw.close()
    await cfg.cleanup()
  })
  const session = connect(bin.url)
  t.teardown(() => session.destroy())
  session.on('error', () => undefined)
  await opened(session)
  for (const trailers of [['http2-settings: AAMAAABk'], ['content-type: a/b', 'content-type: c/d'], ['etag: "1"', 'etag: "2"']]) {
    raw.answer({ bytes: chunkedAnswer(['content-type: text/plain'], trailers) })
    const got = await request(session, { ':path': '/raw/x' })
    t.equal(got.status, 200, `${trailers.join(', ')}: answered`)
    t.equal(got.body, 'hello')
    t.equal(got.rstCode, constants.NGHTTP2_NO_ERROR)
  }
  const after = await fetch(`${bin.url}/raw/after`)
  t.equal(after.status, 200, 'bearward still serves')
  t.equal(exitCode, undefined, 'and has not exited')
})
