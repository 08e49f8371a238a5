/**
 * Issue #44, "Concurrency limits": `max_in_flight` and `max_streams`, route
 * wide and per key, through the real gateway (the App's dispatcher, a real
 * upstream on port 0). The upstream holds what it is sent until the test
 * lets it go, so "N requests in flight" is a fact the test waits for (the
 * upstream has them), never a sleep. Every count is read where an operator
 * reads it: the `bearward_in_flight` and `bearward_open_streams` gauges.
 */
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { performance } from 'node:perf_hooks'
import { ConcurrencyPlan } from '../../src/gateway/concurrency.js'
import { ClientAddress, TrustedProxies } from '../../src/http/trusted-proxies.js'
import { AddressBuckets } from '../../src/http/address-bucket.js'
import { Metrics } from '../../src/metrics.js'
import type { TokenIdentity } from '../../src/gateway/token-identity.js'
import { eventually } from '../helpers/http.js'
import { h2Request, openSession } from '../helpers/http2.js'
import { startGateway, type Harness } from './fixture.js'

/** How soon a refusal must come: it waits for nothing (the held requests are held for the whole test). */
const QUICK_MS = 1000

/** The upstream: what it holds (to answer when the test says) and the streams it keeps open. */
interface Upstream {
  held: ServerResponse[]
  streams: ServerResponse[]
  tunnels: Duplex[]
}

/**
 * Paths ending in `/hold` are held; `/reset` destroys the connection;
 * `/silent` never answers; MCP `subscriptions/listen` POSTs, GETs asking for
 * an event stream and paths ending in `/feed` are endless event streams;
 * anything else is a JSON 200 at once.
 */
function handler(up: Upstream) {
  return (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const url = req.url ?? ''
    if (url.endsWith('/hold')) up.held.push(res)
    else if (url.endsWith('/reset')) req.socket.destroy()
    else if (url.endsWith('/silent')) return
    else if (
      body.includes('"subscriptions/listen"') ||
      url.endsWith('/feed') ||
      (req.method === 'GET' && (req.headers.accept ?? '').includes('text/event-stream'))
    ) {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(': open\n\n')
      up.streams.push(res)
    } else {
      const id = /"id":(\d+)/.exec(body)?.[1]
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(id === undefined ? '{"ok":true}' : `{"jsonrpc":"2.0","id":${id},"result":{}}`)
    }
  }
}

/** WebSocket handshakes the upstream accepts (RFC 6455 4.2.2), then keeps open with nothing sent. */
function acceptTunnels(h: Harness, up: Upstream): void {
  h.upstream.server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy())
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key'] ?? ''}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64')
    // As a WebSocket server does: the client's half-close is answered with ours.
    socket.on('end', () => socket.end())
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`)
    up.tunnels.push(socket)
  })
}

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
  ms: number
}

/** A request left open: its answer when it comes, and a way to walk away from it. */
interface Pending {
  answer: Promise<Answer>
  /** Resolves with the response head (status, headers) as soon as it arrives. */
  head: Promise<IncomingMessage>
  abort(): void
}

function start(base: string, path: string, o: { token?: string; method?: string; headers?: Record<string, string>; body?: string } = {}): Pending {
  const url = new URL(base)
  const started = performance.now()
  const headers: Record<string, string> = { ...o.headers }
  if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`
  const req = httpRequest({ host: url.hostname, port: url.port, method: o.method ?? 'GET', path, headers, agent: false })
  let gotHead!: (res: IncomingMessage) => void
  const head = new Promise<IncomingMessage>((resolve) => (gotHead = resolve))
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      gotHead(res)
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString(), ms: performance.now() - started }),
      )
      res.on('error', reject)
    })
    req.on('error', reject)
  })
  answer.catch(() => undefined)
  req.end(o.body)
  return { answer, head, abort: () => req.destroy() }
}

/** What the `bearward_in_flight` and `bearward_open_streams` gauges say for `route`. */
function gauges(h: Harness, route: string): { inFlight: number; streams: number } {
  return { inFlight: h.metrics.inFlight.get({ route }) ?? 0, streams: h.metrics.openStreams.get({ route }) ?? 0 }
}

/** Both gauges of `route` back at zero, as /metrics renders them. */
async function drained(h: Harness, route: string): Promise<boolean> {
  const zero = await eventually(() => {
    const g = gauges(h, route)
    return g.inFlight === 0 && g.streams === 0
  }, 3000)
  const series = h.metrics
    .render()
    .split('\n')
    .filter((l) => l.startsWith(`bearward_in_flight{route="${route}"} `) || l.startsWith(`bearward_open_streams{route="${route}"} `))
  return zero && series.length > 0 && series.every((l) => l.endsWith(' 0'))
}

function refused(h: Harness, route: string, limit: 'max_in_flight' | 'max_streams', scope: 'route' | 'key'): number {
  return h.metrics.concurrencyRefused.get({ route, limit, scope })
}

/** A 503 of a concurrency limit, as a client sees it. */
function isLimitAnswer(t: Test, a: Answer, kind: 'requests' | 'streams'): void {
  t.equal(a.status, 503, 'refused with 503')
  t.equal(a.headers['retry-after'], '1', 'Retry-After: 1')
  t.ok(typeof a.headers['x-request-id'] === 'string', 'with the request id the logs carry')
  t.match(JSON.parse(a.body), {
    error: 'temporarily_unavailable',
    error_description: kind === 'requests' ? /serving as many requests as it allows/ : /as many open streams as it allows/,
  })
  t.ok(a.ms < QUICK_MS, `answered at once (${a.ms.toFixed(1)} ms), not queued`)
}

const listenBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} })
const modern = (method: string): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': method,
})

t.test('HTTP/1.1', async (t) => {
  const up: Upstream = { held: [], streams: [], tunnels: [] }
  const h = await startGateway({
    routes: (u) => `
  - { name: slow, match: { path: /slow }, upstream: "${u}", max_in_flight: 2 }
  - { name: keyed, match: { path: /keyed }, upstream: "${u}", max_in_flight: { route: 10, per_key: { key: client, limit: 1 } } }
  - name: mcp
    match: { path: /mcp }
    upstream: "${u}"
    mcp: { tools: { search: [orders:read] } }
    max_streams: { route: 10, per_key: { key: client, limit: 2 } }
    max_in_flight: { per_key: { key: client, limit: 2 } }
  - { name: events, match: { path: /events }, upstream: "${u}", max_streams: 1, max_in_flight: 5 }
  - { name: ends, match: { path: /ends }, upstream: "${u}", max_in_flight: 5, max_body: 16, timeouts: { headers: 300ms } }
  - { name: ws, match: { path: /ws }, upstream: "${u}", max_streams: 1 }
  - { name: free, match: { path: /free }, upstream: "${u}" }
`,
    upstreamHandler: handler(up),
  })
  acceptTunnels(h, up)
  t.teardown(async () => {
    for (const s of [...up.held, ...up.streams]) s.destroy()
    for (const s of up.tunnels) s.destroy()
    await h.close()
  })
  const reached = (prefix: string): number => h.upstream.seen.filter((s) => s.url.startsWith(prefix)).length

  await t.test('the N+1th concurrent request gets 503 + Retry-After at once and never reaches the upstream', async (t) => {
    const token = await h.mint()
    const first = [start(h.url, '/slow/hold', { token }), start(h.url, '/slow/hold', { token })]
    t.ok(await eventually(() => up.held.length === 2), 'two requests are held by the upstream')
    t.same(gauges(h, 'slow'), { inFlight: 2, streams: 0 }, 'bearward_in_flight{route="slow"} is 2')

    const third = await start(h.url, '/slow/hold', { token }).answer
    isLimitAnswer(t, third, 'requests')
    t.equal(reached('/slow'), 2, 'nothing reached the upstream for it')
    t.equal(refused(h, 'slow', 'max_in_flight', 'route'), 1, 'counted in bearward_concurrency_refused_total')

    for (const res of up.held.splice(0)) res.end('done')
    t.same(
      (await Promise.all(first.map((p) => p.answer))).map((a) => a.status),
      [200, 200],
      'the held ones are answered',
    )
    t.ok(await drained(h, 'slow'), 'the gauge is back at zero')
    const again = start(h.url, '/slow/hold', { token })
    t.ok(await eventually(() => up.held.length === 1), 'a slot freed: the next request is forwarded')
    up.held.splice(0)[0]?.end('done')
    t.equal((await again.answer).status, 200)
    t.ok(await drained(h, 'slow'))
  })

  await t.test('per key: client A at its limit is refused, client B is still served', async (t) => {
    const a = await h.mint({ claims: { client_id: 'client-a' } })
    const b = await h.mint({ claims: { client_id: 'client-b' } })
    const a1 = start(h.url, '/keyed/hold', { token: a })
    t.ok(await eventually(() => up.held.length === 1))
    const a2 = await start(h.url, '/keyed/hold', { token: a }).answer
    isLimitAnswer(t, a2, 'requests')
    t.equal(refused(h, 'keyed', 'max_in_flight', 'key'), 1, 'refused by its key, not the route')
    const a2other = await h.mint({ claims: { client_id: 'client-a', sub: 'someone-else' } })
    t.equal((await start(h.url, '/keyed/hold', { token: a2other }).answer).status, 503, 'another token of the same client shares its key')
    const b1 = start(h.url, '/keyed/hold', { token: b })
    t.ok(await eventually(() => up.held.length === 2), 'client B reached the upstream')
    t.equal(reached('/keyed'), 2, 'A’s refused requests did not')
    for (const res of up.held.splice(0)) res.end('done')
    t.same([(await a1.answer).status, (await b1.answer).status], [200, 200])
    t.ok(await drained(h, 'keyed'))
  })

  await t.test('MCP listen streams: A’s third is refused, B’s is accepted, A’s ordinary calls still served', async (t) => {
    const a = await h.mint({ claims: { client_id: 'client-a' } })
    const b = await h.mint({ claims: { client_id: 'client-b' } })
    const listen = (token: string): Pending => start(h.url, '/mcp', { token, method: 'POST', headers: modern('subscriptions/listen'), body: listenBody })
    const aStreams = [listen(a), listen(a)]
    t.same(
      (await Promise.all(aStreams.map((s) => s.head))).map((r) => r.statusCode),
      [200, 200],
      'A opens max_streams listen streams',
    )
    t.same(gauges(h, 'mcp'), { inFlight: 0, streams: 2 }, 'counted as streams, not in flight')
    const third = await listen(a).answer
    isLimitAnswer(t, third, 'streams')
    t.equal(reached('/mcp'), 2, 'the refused listen never reached the MCP server')
    t.equal(refused(h, 'mcp', 'max_streams', 'key'), 1)

    const bStream = listen(b)
    t.equal((await bStream.head).statusCode, 200, 'B’s listen stream is accepted')
    const ping = await start(h.url, '/mcp', { token: a, method: 'POST', headers: modern('ping'), body: '{"jsonrpc":"2.0","id":7,"method":"ping"}' }).answer
    t.equal(ping.status, 200, 'an ordinary call of A is still served')
    t.match(JSON.parse(ping.body), { id: 7, result: {} })
    t.same(gauges(h, 'mcp'), { inFlight: 0, streams: 3 })

    for (const s of [...aStreams, bStream]) s.abort()
    t.ok(await drained(h, 'mcp'), 'closing the streams gives their slots back')
  })

  await t.test('an SSE GET is a stream; an answer that turns into an event stream takes a stream slot, or is refused when none is free', async (t) => {
    const token = await h.mint()
    const sse = start(h.url, '/events/live', { token, headers: { accept: 'text/event-stream' } })
    t.equal((await sse.head).statusCode, 200)
    t.same(gauges(h, 'events'), { inFlight: 0, streams: 1 })
    const second = await start(h.url, '/events/live', { token, headers: { accept: 'text/event-stream' } }).answer
    isLimitAnswer(t, second, 'streams')
    t.equal(reached('/events/live'), 1)

    // A POST the upstream answers with an event stream while the stream slots are full: not relayed, the streams' 503.
    const refusedBefore = refused(h, 'events', 'max_streams', 'route')
    const feedsBefore = up.streams.length
    const post = await start(h.url, '/events/feed', { token, method: 'POST', body: 'x' }).answer
    isLimitAnswer(t, post, 'streams')
    t.notMatch(post.body, /: open/, 'nothing of the upstream’s event stream reached the client')
    t.equal(reached('/events/feed'), 1, 'the upstream saw it (and answered): its effects stand')
    t.equal(refused(h, 'events', 'max_streams', 'route') - refusedBefore, 1, 'counted as a max_streams refusal')
    t.equal(up.streams.length, feedsBefore + 1)
    const upstreamFeed = up.streams.at(-1)
    t.ok(await eventually(() => upstreamFeed?.destroyed === true || upstreamFeed?.writableEnded === true), 'the upstream’s stream was closed')
    t.ok(await eventually(() => gauges(h, 'events').inFlight === 0), 'it holds no slot once refused')
    t.same(gauges(h, 'events'), { inFlight: 0, streams: 1 }, 'only the SSE GET holds one')
    sse.abort()
    t.ok(await drained(h, 'events'))

    const moved = start(h.url, '/events/feed', { token, method: 'POST', body: 'x' })
    t.equal((await moved.head).statusCode, 200)
    t.same(gauges(h, 'events'), { inFlight: 0, streams: 1 }, 'with a stream slot free it moves there')
    const refusedSse = await start(h.url, '/events/live', { token, headers: { accept: 'text/event-stream' } }).answer
    t.equal(refusedSse.status, 503, 'and holds it')
    moved.abort()
    t.ok(await drained(h, 'events'))
  })

  await t.test('slots return after every ending: client gone, upstream reset, timeout, body refused', async (t) => {
    const token = await h.mint()
    const gone = start(h.url, '/ends/hold', { token })
    t.ok(await eventually(() => up.held.length === 1))
    const upstreamSide = up.held.splice(0)[0]
    gone.abort()
    t.ok(await drained(h, 'ends'), 'an aborted client')
    t.ok(await eventually(() => upstreamSide?.destroyed === true || upstreamSide?.socket === null), 'the upstream exchange was aborted too')

    t.equal((await start(h.url, '/ends/reset', { token }).answer).status, 502, 'an upstream reset is a 502')
    t.ok(await drained(h, 'ends'), 'an upstream reset')

    t.equal((await start(h.url, '/ends/silent', { token }).answer).status, 504, 'an upstream that never answers is a 504')
    t.ok(await drained(h, 'ends'), 'a timeout')

    const tooLong = await start(h.url, '/ends/x', { token, method: 'POST', body: 'x'.repeat(100) }).answer
    t.equal(tooLong.status, 413, 'a declared body over max_body is refused')
    t.ok(await drained(h, 'ends'), 'a body refused by its length')
    const chunked = await start(h.url, '/ends/x', { token, method: 'POST', headers: { 'transfer-encoding': 'chunked' }, body: 'y'.repeat(100) }).answer
    t.equal(chunked.status, 413, 'a chunked body over max_body is refused')
    t.ok(await drained(h, 'ends'), 'a body refused as it streamed')

    const five = Array.from({ length: 5 }, () => start(h.url, '/ends/hold', { token }))
    t.ok(await eventually(() => up.held.length === 5), 'after all of that, every slot is free again')
    for (const res of up.held.splice(0)) res.end('done')
    await Promise.all(five.map((p) => p.answer))
    t.ok(await drained(h, 'ends'))
  })

  await t.test('WebSocket tunnels are streams: past max_streams the upgrade gets 503, a closed tunnel frees its slot', async (t) => {
    const token = await h.mint()
    const upgrade = (): Promise<{ status: number; headers: IncomingHttpHeaders; socket: Duplex | null }> =>
      new Promise((resolve, reject) => {
        const url = new URL(h.url)
        const req = httpRequest({
          host: url.hostname,
          port: url.port,
          path: '/ws/live',
          agent: false,
          headers: {
            authorization: `Bearer ${token}`,
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            'sec-websocket-version': '13',
          },
        })
        req.on('upgrade', (res, socket) => resolve({ status: res.statusCode ?? 0, headers: res.headers, socket }))
        req.on('response', (res) => {
          res.resume()
          resolve({ status: res.statusCode ?? 0, headers: res.headers, socket: null })
        })
        req.on('error', reject)
        req.end()
      })
    const first = await upgrade()
    t.equal(first.status, 101, 'the first tunnel opens')
    t.same(gauges(h, 'ws'), { inFlight: 0, streams: 1 })
    const second = await upgrade()
    t.equal(second.status, 503, 'the second is refused')
    t.equal(second.headers['retry-after'], '1')
    t.equal(up.tunnels.length, 1, 'and never reached the upstream')
    first.socket?.destroy()
    t.ok(await drained(h, 'ws'), 'a closed tunnel gives its slot back')
    const third = await upgrade()
    t.equal(third.status, 101)
    third.socket?.destroy()
    t.ok(await drained(h, 'ws'))
  })

  await t.test('a route without limits counts nothing', async (t) => {
    const token = await h.mint()
    const p = start(h.url, '/free/hold', { token })
    t.ok(await eventually(() => up.held.length === 1))
    t.notOk(h.metrics.render().includes('bearward_in_flight{route="free"}'), 'no gauge series for it: its plan has no concurrency step')
    up.held.splice(0)[0]?.end('done')
    t.equal((await p.answer).status, 200)
  })
})

t.test('HTTP/2: streams multiplexed on one connection count one by one', async (t) => {
  const up: Upstream = { held: [], streams: [], tunnels: [] }
  const h = await startGateway({
    extra: 'http2: { cleartext: true }',
    routes: (u) => `
  - { name: slow, match: { path: /slow }, upstream: "${u}", max_in_flight: 2 }
  - { name: sse, match: { path: /sse }, upstream: "${u}", max_streams: { route: 10, per_key: { key: client, limit: 1 } } }
  - { name: grpc, match: { path: /orders.Orders }, upstream: "${u}", max_streams: 1 }
`,
    upstreamHandler: handler(up),
  })
  const session = await openSession(h.url)
  t.teardown(async () => {
    session.destroy()
    for (const s of [...up.held, ...up.streams]) s.destroy()
    await h.close()
  })
  const token = await h.mint()
  const get = (path: string, extra: Record<string, string> = {}) =>
    session.request({ ':method': 'GET', ':path': path, authorization: `Bearer ${token}`, ...extra })

  await t.test('the N+1th stream of one connection is refused; resets give slots back', async (t) => {
    const held = [get('/slow/hold'), get('/slow/hold')]
    for (const s of held) s.on('error', () => undefined)
    t.ok(await eventually(() => up.held.length === 2), 'two streams of one connection are held')
    t.same(gauges(h, 'slow'), { inFlight: 2, streams: 0 })
    const started = performance.now()
    const third = await h2Request(session, { ':method': 'GET', ':path': '/slow/hold', authorization: `Bearer ${token}` })
    const ms = performance.now() - started
    t.equal(third.status, 503)
    t.equal(third.headers['retry-after'], '1')
    t.match(JSON.parse(third.body), { error: 'temporarily_unavailable' })
    t.ok(ms < QUICK_MS, `at once (${ms.toFixed(1)} ms)`)
    t.equal(h.upstream.seen.length, 2, 'nothing reached the upstream for it')
    for (const s of held) s.close()
    t.ok(await drained(h, 'slow'), 'RST_STREAM from the client frees both slots')
    up.held.splice(0)
  })

  await t.test('event streams per key over HTTP/2: the second of one client is refused, another client’s accepted', async (t) => {
    const other = await h.mint({ claims: { client_id: 'other' } })
    const first = get('/sse/live', { accept: 'text/event-stream' })
    first.on('error', () => undefined)
    const status = await new Promise((resolve) => first.once('response', (hd) => resolve(hd[':status'])))
    t.equal(status, 200)
    const second = await h2Request(session, { ':method': 'GET', ':path': '/sse/live', accept: 'text/event-stream', authorization: `Bearer ${token}` })
    t.equal(second.status, 503)
    const third = session.request({ ':method': 'GET', ':path': '/sse/live', accept: 'text/event-stream', authorization: `Bearer ${other}` })
    third.on('error', () => undefined)
    t.equal(await new Promise((resolve) => third.once('response', (hd) => resolve(hd[':status']))), 200, 'another client’s stream is accepted')
    t.same(gauges(h, 'sse'), { inFlight: 0, streams: 2 })
    first.close()
    third.close()
    t.ok(await drained(h, 'sse'))
  })

  await t.test('gRPC calls are streams: past max_streams the call is refused in gRPC terms, UNAVAILABLE', async (t) => {
    const grpc = { ':method': 'POST', ':path': '/orders.Orders/hold', 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${token}` }
    const message = Buffer.from([0, 0, 0, 0, 0])
    const first = session.request(grpc)
    first.on('error', () => undefined)
    first.end(message)
    t.ok(await eventually(() => up.held.length === 1), 'the first call is held by the upstream')
    t.same(gauges(h, 'grpc'), { inFlight: 0, streams: 1 })
    const second = await h2Request(session, grpc, message)
    t.equal(second.status, 200, 'gRPC refusals are HTTP 200')
    t.equal(second.headers['grpc-status'], '14', 'grpc-status 14 UNAVAILABLE (Trailers-Only)')
    t.match(decodeURIComponent(String(second.headers['grpc-message'])), /as many open streams as it allows/)
    t.equal(h.upstream.seen.filter((r) => r.url.startsWith('/orders.Orders')).length, 1, 'the refused call never reached the upstream')
    first.close()
    t.ok(await drained(h, 'grpc'))
    up.held.splice(0)
  })
})

t.test('the per-key map holds only keys that hold a slot', async (t) => {
  const metrics = new Metrics()
  const plan = new ConcurrencyPlan(
    { name: 'r', mcp: null },
    { maxInFlight: { route: null, perKey: { key: 'client', limit: 1 } }, maxStreams: null },
    metrics,
    new AddressBuckets(new ClientAddress(new TrustedProxies([])), 64),
  )
  const req = { method: 'GET', headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage
  const identity = (clientId: string): TokenIdentity => ({
    issuerId: 'self',
    issuer: 'x',
    sub: null,
    clientId,
    scopes: [],
    jti: null,
    grantId: null,
    exp: 0,
    jkt: null,
    x5t: null,
    claims: {},
  })
  const slots = []
  for (let i = 0; i < 1000; i++) {
    const slot = plan.admit(req, identity(`random-client-${i}`), false)
    if (slot instanceof Error) throw slot
    slots.push(slot)
  }
  t.same(plan.held, { requests: 1000, streams: 0, requestKeys: 1000, streamKeys: 0 }, '1000 distinct callers: 1000 entries while they hold slots')
  t.type(plan.admit(req, identity('random-client-7'), false), Error, 'a key at its limit is refused')
  for (const slot of slots) {
    slot.release()
    slot.release()
  }
  t.same(plan.held, { requests: 0, streams: 0, requestKeys: 0, streamKeys: 0 }, 'every entry is gone once released (twice: released once)')
  t.equal(metrics.inFlight.get({ route: 'r' }), 0)
})

t.test('per-address keys count an IPv6 client by its /64, as the rate limits do', async (t) => {
  const plan = new ConcurrencyPlan(
    { name: 'r', mcp: null },
    { maxInFlight: { route: null, perKey: { key: 'address', limit: 1 } }, maxStreams: null },
    new Metrics(),
    new AddressBuckets(new ClientAddress(new TrustedProxies([])), 64),
  )
  const from = (remoteAddress: string) => ({ method: 'GET', headers: {}, socket: { remoteAddress } }) as unknown as IncomingMessage
  const first = plan.admit(from('2001:db8:1:2::1'), null, false)
  if (first instanceof Error) throw first
  t.type(plan.admit(from('2001:db8:1:2:ffff:ffff:ffff:fffe'), null, false), Error, 'another address of the same /64 shares the slot')
  const other = plan.admit(from('2001:db8:1:3::1'), null, false)
  t.notOk(other instanceof Error, 'another /64 has its own')
  const mapped = plan.admit(from('::ffff:192.0.2.7'), null, false)
  if (mapped instanceof Error) throw mapped
  t.type(plan.admit(from('192.0.2.7'), null, false), Error, 'an IPv4-mapped address counts as its IPv4 address')
  first.release()
  mapped.release()
  if (!(other instanceof Error)) other.release()
})
