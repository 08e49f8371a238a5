/**
 * Hostile and broken clients against the real binary (issue 16): bodies
 * that stop arriving, heads that never end, oversized heads and targets,
 * half-closed connections, `Expect: 100-continue` without a token, TRACE,
 * path-override and client-IP headers, absolute-form targets at the
 * authorization server, and case tricks on paths.
 *
 * Timeouts are configured short (hundreds of ms) and every wait is on an
 * event (the answer, the connection's close), with the elapsed time asserted
 * against the configured bound. After every refusal the upstream must have
 * received nothing.
 */
import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'
import type { JWK } from 'jose'
import { generatePrivateJwk, publicMembers } from '../../src/keys/keyset.js'
import { connect, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { accessClaims, AT_HEADER, basic, healthy, rawHttp, send, signEs256, startTarget, type RawResponse, type Target } from '../helpers/attack.js'
import type { SeenRequest } from '../helpers/upstream.js'
import { closeServer, listen } from '../helpers/http.js'

const BODY_IDLE_MS = 400
const REQUEST_MS = 1500
const HEADERS_MS = 600
/** Scheduling slack on a shared, busy 2-core machine; a missing timeout would never close the connection at all. */
const SLACK_MS = 2000

/** What an upstream saw of one request, including requests cut off mid-body. */
interface Arrival {
  url: string
  complete: boolean
  bytes: number
}

/** An upstream that records every request when it closes, complete or not. */
async function startRecorder(): Promise<{ url: string; arrivals: Arrival[]; closed: Promise<Arrival>[]; close(): Promise<void> }> {
  const arrivals: Arrival[] = []
  const closed: Promise<Arrival>[] = []
  const server = createServer((req: IncomingMessage, res) => {
    let bytes = 0
    closed.push(
      new Promise((resolve) => {
        req.on('data', (c: Buffer) => (bytes += c.length))
        req.on('end', () => {
          const text = `got ${bytes}`
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': text.length })
          res.end(text)
        })
        req.on('close', () => {
          const a = { url: req.url ?? '', complete: req.complete, bytes }
          arrivals.push(a)
          resolve(a)
        })
      }),
    )
  })
  const serverAt = await listen(server)
  return {
    url: serverAt.url,
    arrivals,
    closed,
    close: () => closeServer(server),
  }
}

/**
 * A JWKS server for two issuers (`a`, `b`) that holds each key set's first
 * fetch until the test releases it, so the gateway's decision on a token of
 * that issuer waits while the test acts on the client's connection.
 */
async function startHeldJwks(): Promise<{
  url: string
  keys: Record<'a' | 'b', JWK>
  fetched(which: 'a' | 'b'): Promise<void>
  release(which: 'a' | 'b'): void
  close(): Promise<void>
}> {
  const keys = { a: await generatePrivateJwk('ES256', 'held-a-1'), b: await generatePrivateJwk('ES256', 'held-b-1') }
  const held = new Map<string, ServerResponse>()
  const waiting = new Map<string, () => void>()
  const server = createServer((req, res) => {
    const which = req.url === '/a.json' ? 'a' : 'b'
    held.set(which, res)
    waiting.get(which)?.()
  })
  const serverAt = await listen(server)
  return {
    url: serverAt.url,
    keys,
    fetched: (which) => (held.has(which) ? Promise.resolve() : new Promise((resolve) => waiting.set(which, resolve))),
    release(which) {
      const res = held.get(which)
      res?.writeHead(200, { 'content-type': 'application/jwk-set+json' })
      res?.end(JSON.stringify({ keys: [publicMembers(keys[which])].map((k) => ({ ...k, kid: keys[which].kid, alg: 'ES256', use: 'sig' })) }))
    },
    close: () => closeServer(server),
  }
}

let target: Target
let recorder: Awaited<ReturnType<typeof startRecorder>>
let jwks: Awaited<ReturnType<typeof startHeldJwks>>

t.before(async () => {
  recorder = await startRecorder()
  jwks = await startHeldJwks()
  const heldIssuer = (which: 'a' | 'b'): string => `
  - id: held-${which}
    issuer: https://held-${which}.example
    jwks_uri: ${jwks.url}/${which}.json
    algorithms: [ES256]
    jwks: { min_ttl: 60s, max_ttl: 1h, cooldown: 30s, stale: 1h, first_fetch_wait: 20s, timeout: 20s }`
  target = await startTarget({
    top: `client_timeouts: { headers: ${HEADERS_MS}ms, body_idle: ${BODY_IDLE_MS}ms, request: ${REQUEST_MS}ms }
issuers:${heldIssuer('a')}${heldIssuer('b')}`,
    gateway: '{ trusted_proxies: [127.0.0.2] }',
    routes: (upstream) => `
  - name: pub
    match: { path: /pub }
    upstream: ${upstream}
    public: true
  - name: stream
    match: { path: /stream }
    upstream: ${recorder.url}
    public: true
  - name: secure
    match: { path: /Secure, case_insensitive: true }
    upstream: ${upstream}
    scopes: { "*": [orders:write] }
  - name: strict
    match: { path: /strict }
    upstream: ${upstream}
    scopes: { "*": [orders:write] }
  - name: traceable
    match: { path: /traceable }
    upstream: ${upstream}
    public: true
    allow_trace: true
  - name: trace-listed
    match: { path: /trace-listed, methods: [GET, TRACE] }
    upstream: ${upstream}
    scopes: { "*": [orders:read] }
  - name: held-a
    match: { path: /held-a }
    upstream: ${upstream}
    audience: https://api.held.example
    issuers: [held-a]
  - name: held-b
    match: { path: /held-b }
    upstream: ${upstream}
    audience: https://api.held.example
    issuers: [held-b]
`,
  })
})
t.teardown(async () => {
  await target.close()
  await recorder.close()
  await jwks.close()
})

/** A token of a held issuer, signed with its key. */
function heldToken(which: 'a' | 'b'): string {
  const now = Math.floor(Date.now() / 1000)
  const claims = {
    iss: `https://held-${which}.example`,
    aud: 'https://api.held.example',
    sub: 'alice',
    iat: now,
    exp: now + 300,
    jti: randomBytes(8).toString('hex'),
  }
  return signEs256(jwks.keys[which], { alg: 'ES256', typ: 'at+jwt', kid: jwks.keys[which].kid }, claims)
}

const tokenWith = (scope: string): string => signEs256(target.key, AT_HEADER, accessClaims(target, { scope }))

/** Send raw request text (`Connection: close` added unless present). */
function raw(head: string, body = ''): Promise<RawResponse> {
  const full = /\r\nconnection:/i.test(head) ? head : `${head}\r\nConnection: close`
  return rawHttp(target.url, `${full}\r\n\r\n${body}`, { timeoutMs: 5000 })
}

/** Run `send` and return its answer plus what the upstream received meanwhile. */
async function observe<T>(run: () => Promise<T>): Promise<{ answer: T; seen: SeenRequest[] }> {
  const before = target.upstream.seen.length
  const answer = await run()
  return { answer, seen: target.upstream.seen.slice(before) }
}

/** A raw connection the test writes to piece by piece. */
interface Conn {
  socket: Socket
  /** Everything received so far, latin1. */
  text(): string
  /** Resolves with the time (performance.now()) the server closed or reset the connection. */
  closed: Promise<number>
  /** Resolves once the received text matches `re`. */
  waitFor(re: RegExp, ms?: number): Promise<string>
}

async function open(): Promise<Conn> {
  const { hostname, port } = new URL(target.url)
  const socket = connect({ host: hostname, port: Number(port) })
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  let received = ''
  const waiters: Array<{ re: RegExp; resolve: (s: string) => void }> = []
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1')
    for (const w of [...waiters]) {
      if (w.re.test(received)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(received)
      }
    }
  })
  socket.on('error', () => undefined)
  // Bounded: a server that never closes fails the test here instead of hanging it.
  const closed = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after 15 s; got ${JSON.stringify(received.slice(0, 80))}`)), 15_000)
    timer.unref()
    socket.once('close', () => {
      clearTimeout(timer)
      resolve(performance.now())
    })
  })
  return {
    socket,
    text: () => received,
    closed,
    waitFor: (re, ms = 5000) =>
      new Promise((resolve, reject) => {
        if (re.test(received)) return resolve(received)
        const w = { re, resolve }
        waiters.push(w)
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1)
          reject(new Error(`not received within ${ms} ms: ${re}; got ${JSON.stringify(received)}`))
        }, ms)
        timer.unref()
        void closed.then(() => {
          if (!waiters.includes(w)) return
          waiters.splice(waiters.indexOf(w), 1)
          clearTimeout(timer)
          reject(new Error(`closed before ${re}; got ${JSON.stringify(received)}`))
        })
      }),
  }
}

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

t.test('a body that stops arriving at an AS endpoint gets 408 after body_idle', async (t) => {
  const c = await open()
  c.socket.write('POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ngrant_type')
  const sent = performance.now()
  const closedAt = await c.closed
  const elapsed = closedAt - sent
  t.equal(statusOf(c.text()), 408, `408 (got ${JSON.stringify(c.text().slice(0, 40))})`)
  t.match(c.text(), /\r\nconnection: close\r\n/i)
  t.match(c.text(), /"error":"request_timeout"/)
  t.ok(elapsed >= BODY_IDLE_MS - 50, `not before body_idle (${Math.round(elapsed)} ms)`)
  t.ok(elapsed < BODY_IDLE_MS + SLACK_MS, `within body_idle + ${SLACK_MS} ms (${Math.round(elapsed)} ms)`)
})

t.test('a streamed body that stops on a proxied route: 408, and the upstream exchange is aborted', async (t) => {
  const before = recorder.closed.length
  const c = await open()
  c.socket.write('POST /stream/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\n0123456789')
  const sent = performance.now()
  const closedAt = await c.closed
  const elapsed = closedAt - sent
  t.equal(statusOf(c.text()), 408)
  t.ok(elapsed >= BODY_IDLE_MS - 50 && elapsed < BODY_IDLE_MS + SLACK_MS, `answered after body_idle (${Math.round(elapsed)} ms)`)
  t.equal(recorder.closed.length, before + 1, 'the upstream had received the request head')
  const arrival = await recorder.closed[before]
  t.equal(arrival?.complete, false, 'the upstream request was cut off, not completed')
  t.equal(arrival?.bytes, 10, 'with only the bytes the client sent')
})

t.test('a body trickled under body_idle but past the request deadline: 408 at the deadline', async (t) => {
  const c = await open()
  c.socket.write('POST /stream/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n')
  const start = performance.now()
  let writes = 0
  const trickle = setInterval(() => {
    if (!c.socket.destroyed) c.socket.write('x')
    writes++
  }, BODY_IDLE_MS / 3)
  const closedAt = await c.closed
  clearInterval(trickle)
  const elapsed = closedAt - start
  t.equal(statusOf(c.text()), 408)
  t.ok(writes >= 3, `the client kept sending (${writes} writes)`)
  t.ok(elapsed >= REQUEST_MS - 50 && elapsed < REQUEST_MS + SLACK_MS, `cut at the request deadline (${Math.round(elapsed)} ms)`)
})

t.test('a slow but live upload within the limits succeeds', async (t) => {
  const chunks = 6
  const gap = Math.round(BODY_IDLE_MS * 0.4)
  const c = await open()
  c.socket.write(`POST /stream/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: ${chunks * 10}\r\n\r\n`)
  const start = performance.now()
  for (let i = 0; i < chunks; i++) {
    await sleep(gap)
    c.socket.write('0123456789')
  }
  await c.closed
  const elapsed = performance.now() - start
  t.ok(elapsed > BODY_IDLE_MS, `the upload took longer than body_idle (${Math.round(elapsed)} ms)`)
  t.equal(statusOf(c.text()), 200, c.text().slice(0, 60))
  t.match(c.text(), /got 60$/, 'the upstream received the whole body')

  // The same at the authorization server: a form trickled in.
  const form = `grant_type=client_credentials&scope=orders%3Aread`
  const as = await open()
  as.socket.write(
    `POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: ${basic('service', target.secret)}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n`,
  )
  for (const part of [form.slice(0, 10), form.slice(10, 30), form.slice(30)]) {
    await sleep(gap)
    as.socket.write(part)
  }
  await as.closed
  t.equal(statusOf(as.text()), 200, as.text().slice(0, 80))
  t.match(as.text(), /"access_token"/)
})

t.test('parse errors say what was wrong: 431, 414, 408 for a slowloris, 400', async (t) => {
  const before = target.upstream.seen.length
  const bigHeader = await raw(`GET /pub/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(100_000)}`)
  t.equal(bigHeader.status, 431, '100 KB header: 431')
  const longTarget = await raw(`GET /pub/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1`)
  t.equal(longTarget.status, 414, '20 KB request target: 414')
  const mediumTarget = await raw(`GET /pub/${'a'.repeat(10_000)} HTTP/1.1\r\nHost: 127.0.0.1`)
  t.equal(mediumTarget.status, 414, '10 KB request target (under the parser limit, over ours): 414')
  t.match(mediumTarget.body, /"error":"uri_too_long"/)
  const badToken = await raw('GET /pub/x HTTP/1.1\r\nHost: 127.0.0.1\r\nBad\u0001Name: x')
  t.equal(badToken.status, 400, 'invalid header name: 400')

  // Slowloris: a head that keeps coming, one header at a time, never ends.
  const c = await open()
  const start = performance.now()
  c.socket.write('GET /pub/x HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  const drip = setInterval(() => {
    if (!c.socket.destroyed) c.socket.write('X-Drip: 1\r\n')
  }, 100)
  const closedAt = await c.closed
  clearInterval(drip)
  const elapsed = closedAt - start
  t.equal(statusOf(c.text()), 408, 'slowloris: 408')
  t.ok(elapsed >= HEADERS_MS - 50 && elapsed < HEADERS_MS + SLACK_MS, `cut after client_timeouts.headers (${Math.round(elapsed)} ms)`)
  t.equal(target.upstream.seen.length, before, 'nothing reached the upstream')
  t.ok(await healthy(target))
})

t.test('a client that half-closes after its request still gets the whole answer', async (t) => {
  const before = target.upstream.seen.length
  const c = await open()
  c.socket.end('GET /pub/half HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
  await c.closed
  t.equal(statusOf(c.text()), 200, `answered (got ${JSON.stringify(c.text().slice(0, 40))})`)
  t.match(c.text(), /"url":"\/pub\/half"\}$/, 'with the complete upstream body')
  t.equal(target.upstream.seen.length, before + 1, 'forwarded once')

  // HTTP/1.0 (no keep-alive) is the connection's last request too.
  const old = await open()
  old.socket.end('GET /pub/old HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n')
  await old.closed
  t.match(old.text(), /^HTTP\/1\.1 200 [\s\S]*"url":"\/pub\/old"\}$/, 'HTTP/1.0 half-close answered in full')
})

t.test('a client that leaves while its request is judged gets nothing forwarded; one that half-closes is answered', async (t) => {
  const before = target.upstream.seen.length
  // Keep-alive, then FIN while the gateway waits for the issuer's keys:
  // that is how undici and browsers abort, so the request is abandoned.
  const gone = await open()
  gone.socket.write(`GET /held-a/left HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${heldToken('a')}\r\n\r\n`)
  await jwks.fetched('a')
  gone.socket.end()
  await gone.closed
  t.equal(gone.text(), '', 'the connection closed without an answer')
  jwks.release('a')
  // The keys are cached now: a later request with a token of the same issuer goes through at once.
  const after = await raw(`GET /held-a/after HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${heldToken('a')}`)
  t.equal(after.status, 200)
  t.same(
    target.upstream.seen.slice(before).map((s) => s.url),
    ['/held-a/after'],
    'the abandoned request never reached the upstream',
  )

  // `Connection: close`, then FIN while judged: the client still reads, and is answered.
  const waiting = await open()
  waiting.socket.write(`GET /held-b/stay HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${heldToken('b')}\r\n\r\n`)
  await jwks.fetched('b')
  waiting.socket.end()
  jwks.release('b')
  await waiting.closed
  t.equal(statusOf(waiting.text()), 200, `answered after its FIN (got ${JSON.stringify(waiting.text().slice(0, 40))})`)
  t.match(waiting.text(), /"url":"\/held-b\/stay"\}$/)
})

t.test('Expect: 100-continue is answered on the headers: no invitation to a refused body', async (t) => {
  const before = target.upstream.seen.length
  const refused = await open()
  refused.socket.write('POST /orders/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n')
  const head = await refused.waitFor(/\r\n\r\n/)
  t.match(head, /^HTTP\/1\.1 401 /, 'the first thing sent is the 401')
  t.notMatch(head, /100 Continue/)
  t.match(head, /\r\nwww-authenticate: Bearer /i)
  await refused.closed
  t.equal(target.upstream.seen.length, before, 'nothing reached the upstream')

  const token = tokenWith('orders:write')
  const ok = await open()
  ok.socket.write(
    `POST /orders/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n`,
  )
  await ok.waitFor(/^HTTP\/1\.1 100 Continue\r\n\r\n/)
  ok.socket.write('{"qty": 12}')
  await ok.closed
  t.match(ok.text(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, 'admitted: 100, then the upstream answer')
  t.equal(target.upstream.seen.at(-1)?.body, '{"qty": 12}', 'the upstream received the body')
  t.equal(target.upstream.seen.at(-1)?.headers.expect, undefined, 'without Expect')

  // The authorization server: continue only where a body is taken.
  const tokenEndpoint = await open()
  tokenEndpoint.socket.write(
    'POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 9\r\nExpect: 100-continue\r\n\r\n',
  )
  await tokenEndpoint.waitFor(/^HTTP\/1\.1 100 Continue\r\n\r\n/)
  tokenEndpoint.socket.write('grant_typ')
  await tokenEndpoint.closed
  t.match(tokenEndpoint.text(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 400 /, '/token reads its body: 100, then its answer')
  const metadata = await raw('GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue')
  t.equal(metadata.status, 200)
  t.notMatch(metadata.raw, /100 Continue/, 'a GET endpoint answers without inviting a body')
  const wrongMethod = await raw('PUT /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue')
  t.equal(wrongMethod.status, 405)
  t.notMatch(wrongMethod.raw, /100 Continue/, '405 without inviting the body')
})

t.test('path-override headers never reach the upstream', async (t) => {
  const headers = ['X-Original-URL', 'X-Rewrite-URL', 'X-Override-URL', 'X-Original-URI', 'X-HTTP-DestinationURL', 'x_original_url']
  const { answer, seen } = await observe(() => raw(`GET /pub/spoof HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((h) => `${h}: /orders/1`).join('\r\n')}`))
  t.equal(answer.status, 200)
  t.equal(seen.length, 1)
  const names = (seen[0]?.rawHeaders ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase().replaceAll('_', '-'))
  for (const h of headers) t.notOk(names.includes(h.toLowerCase().replaceAll('_', '-')), `${h} dropped`)
  t.equal(seen[0]?.url, '/pub/spoof', 'the upstream gets the judged path')
})

t.test('client-IP headers pass only from a trusted proxy', async (t) => {
  const claims: Record<string, string> = {
    'X-Real-IP': '10.9.9.9',
    'True-Client-IP': '10.9.9.9',
    'X-Client-IP': '10.9.9.9',
    'X-Cluster-Client-IP': '10.9.9.9',
    'Fastly-Client-IP': '10.9.9.9',
    'CF-Connecting-IP': '10.9.9.9',
  }
  const untrusted = await observe(() => send(`${target.url}/pub/ip`, { headers: claims }))
  t.equal(untrusted.answer.status, 200)
  for (const name of Object.keys(claims)) t.equal(untrusted.seen[0]?.headers[name.toLowerCase()], undefined, `${name} dropped from an untrusted client`)
  t.equal(untrusted.seen[0]?.headers['x-forwarded-for'], '127.0.0.1', 'the real peer is in X-Forwarded-For')

  const trusted = await observe(() => send(`${target.url}/pub/ip`, { headers: claims, localAddress: '127.0.0.2' }))
  t.equal(trusted.answer.status, 200)
  for (const name of Object.keys(claims)) t.equal(trusted.seen[0]?.headers[name.toLowerCase()], '10.9.9.9', `${name} kept from a trusted proxy`)
})

t.test('TRACE is refused unless the route allows it; Max-Forwards is honoured where it does', async (t) => {
  const cookie = 'Cookie: session=secret-cookie'
  for (const [label, head] of [
    ['public route', `TRACE /pub/x HTTP/1.1\r\nHost: 127.0.0.1\r\n${cookie}`],
    ['public route, Max-Forwards: 0', `TRACE /pub/x HTTP/1.1\r\nHost: 127.0.0.1\r\nMax-Forwards: 0\r\n${cookie}`],
    ['protected route with a token', `TRACE /orders/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tokenWith('orders:read orders:write')}`],
  ] as const) {
    const { answer, seen } = await observe(() => raw(head))
    t.equal(answer.status, 405, `${label}: 405`)
    t.ok(
      answer.headers.get('allow') !== undefined && !answer.headers.get('allow')?.includes('TRACE'),
      `${label}: Allow without TRACE (${answer.headers.get('allow')})`,
    )
    t.notMatch(answer.body, /secret-cookie/, `${label}: nothing echoed`)
    t.equal(seen.length, 0, `${label}: nothing reached the upstream`)
  }
  for (const path of ['/token', '/.well-known/oauth-authorization-server', '/authorize', '/jwks.json']) {
    const answer = await raw(`TRACE ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${cookie}`)
    t.equal(answer.status, 405, `AS ${path}: 405`)
    t.notMatch(answer.body, /secret-cookie/)
  }

  // allow_trace: Max-Forwards 0 is answered here, without credentials or cookies.
  const local = await observe(() =>
    raw(`TRACE /traceable/x HTTP/1.1\r\nHost: 127.0.0.1\r\nMax-Forwards: 0\r\n${cookie}\r\nAuthorization: Bearer abc\r\nX-Probe: 1`),
  )
  t.equal(local.answer.status, 200, 'Max-Forwards: 0 answered by the gateway')
  t.equal(local.answer.headers.get('content-type'), 'message/http')
  t.match(local.answer.body, /^TRACE \/traceable\/x HTTP\/1\.1\r\n/)
  t.match(local.answer.body, /\r\nX-Probe: 1\r\n/)
  t.notMatch(local.answer.body, /secret-cookie|Bearer abc/, 'cookies and credentials are not echoed')
  t.equal(local.seen.length, 0, 'not forwarded')

  const forwarded = await observe(() => raw('TRACE /traceable/x HTTP/1.1\r\nHost: 127.0.0.1\r\nMax-Forwards: 3'))
  t.equal(forwarded.answer.status, 200)
  t.equal(forwarded.seen.length, 1, 'forwarded')
  t.equal(forwarded.seen[0]?.headers['max-forwards'], '2', 'Max-Forwards decremented')

  // TRACE listed in methods: allowed, but the token is checked first.
  const noToken = await observe(() => raw('TRACE /trace-listed/x HTTP/1.1\r\nHost: 127.0.0.1\r\nMax-Forwards: 0'))
  t.equal(noToken.answer.status, 401, 'TRACE on a protected route still needs a token')
  t.equal(noToken.seen.length, 0)
  const withToken = await observe(() =>
    raw(`TRACE /trace-listed/x HTTP/1.1\r\nHost: 127.0.0.1\r\nMax-Forwards: 0\r\nAuthorization: Bearer ${tokenWith('orders:read')}`),
  )
  t.equal(withToken.answer.status, 200)
  t.equal(withToken.seen.length, 0, 'answered by the gateway')

  const options = await observe(() => raw('OPTIONS /trace-listed/x HTTP/1.1\r\nHost: 127.0.0.1\r\nMax-Forwards: 0'))
  t.equal(options.answer.status, 405, 'OPTIONS is not among the route methods')
  const optionsLocal = await observe(() => raw('OPTIONS /traceable/x HTTP/1.1\r\nHost: 127.0.0.1\r\nMax-Forwards: 0'))
  t.equal(optionsLocal.answer.status, 200, 'OPTIONS with Max-Forwards: 0 answered by the gateway')
  t.match(optionsLocal.answer.headers.get('allow') ?? '', /TRACE/)
  t.equal(optionsLocal.seen.length, 0)
})

t.test('absolute-form targets reach the authorization server too', async (t) => {
  const authority = new URL(target.url).host
  const metadata = await raw(`GET http://${authority}/.well-known/oauth-authorization-server HTTP/1.1\r\nHost: ${authority}`)
  t.equal(metadata.status, 200)
  t.equal((JSON.parse(metadata.body) as { issuer: string }).issuer, target.url)
  const jwks = await raw(`GET http://${authority}/jwks.json?x=1 HTTP/1.1\r\nHost: ${authority}`)
  t.equal(jwks.status, 200)
  const form = 'grant_type=client_credentials&scope=orders%3Aread'
  const token = await raw(
    `POST http://${authority}/token HTTP/1.1\r\nHost: ${authority}\r\nAuthorization: ${basic('service', target.secret)}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}`,
    form,
  )
  t.equal(token.status, 200, 'POST /token in absolute-form')
  const mismatch = await raw(`GET http://elsewhere.example/.well-known/oauth-authorization-server HTTP/1.1\r\nHost: ${authority}`)
  t.equal(mismatch.status, 400, 'absolute-form host differs from Host: 400')
})

t.test('paths match case-sensitively unless the route says case_insensitive', async (t) => {
  for (const path of ['/secure/x', '/SECURE/x', '/sEcUrE']) {
    const { answer, seen } = await observe(() => raw(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1`))
    t.equal(answer.status, 401, `${path}: judged by the case-insensitive route`)
    t.equal(seen.length, 0, `${path}: nothing reached the upstream`)
  }
  const token = tokenWith('orders:write')
  const ok = await observe(() => raw(`GET /SECURE/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}`))
  t.equal(ok.answer.status, 200)
  t.equal(ok.seen[0]?.url, '/SECURE/x', 'forwarded with the path as sent')
  const strict = await observe(() => raw(`GET /STRICT/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}`))
  t.equal(strict.answer.status, 404, 'a case-sensitive route does not take /STRICT')
  t.equal(strict.seen.length, 0)
})
