/**
 * The adversarial pass on `max_in_flight` / `max_streams` (docs/traffic.md,
 * Concurrency limits): answers and requests shaped to leak a slot or to be
 * counted as the wrong kind. Real gateway and upstream; the counts are read
 * from the `bearward_in_flight` / `bearward_open_streams` gauges.
 */
import { request } from 'node:http'
import t, { type Test } from 'tap'
import { type Harness, sendRaw, startGateway } from '../gateway/fixture.js'
import { eventually } from '../helpers/http.js'

async function gateway(t: Test, route: (up: string) => string, handler: Parameters<typeof startGateway>[0]['upstreamHandler']): Promise<Harness> {
  const gw = await startGateway({ routes: route, ...(handler === undefined ? {} : { upstreamHandler: handler }) })
  t.teardown(() => gw.close())
  return gw
}

function gauges(h: Harness, route: string): { inFlight: number; streams: number } {
  return { inFlight: h.metrics.inFlight.get({ route }) ?? 0, streams: h.metrics.openStreams.get({ route }) ?? 0 }
}

/** A GET held open: its status once the head arrives, and a way to go away. */
function open(h: Harness, path: string, headers: Record<string, string>): { head: Promise<number>; abort: () => void } {
  const url = new URL(h.url)
  const req = request({ host: url.hostname, port: url.port, path, headers, agent: false })
  const head = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', reject)
  })
  req.end()
  return { head, abort: () => req.destroy() }
}

t.test('an upstream’s 103 Early Hints before its answer does not keep the request’s slot', async (t) => {
  const gw = await gateway(
    t,
    (up) => `
  - name: api
    match: { path: /api }
    upstream: ${up}
    scopes: { "*": [orders:read] }
    max_in_flight: 1`,
    (_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' })
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    },
  )
  const token = await gw.mint()
  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await gw.get('/api/x', token)).status)
  t.same(statuses, [200, 200, 200], 'each request finds the one slot free')
  t.ok(await eventually(() => gauges(gw, 'api').inFlight === 0, 2000), 'nothing held')
})

t.test('a WebSocket upgrade the upstream refuses gives its stream slot back', async (t) => {
  const gw = await gateway(
    t,
    (up) => `
  - name: ws
    match: { path: /ws }
    upstream: ${up}
    scopes: { "*": [orders:read] }
    max_streams: 1`,
    (_req, res) => {
      res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' }).end('no')
    },
  )
  const token = await gw.mint()
  const handshake = [
    'GET /ws/live HTTP/1.1',
    'Host: gw.test',
    `Authorization: Bearer ${token}`,
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    '',
    '',
  ].join('\r\n')
  for (let i = 0; i < 3; i++) {
    const answer = await sendRaw(gw.url, handshake, 3000)
    t.notMatch(answer, /^HTTP\/1\.1 503/, `attempt ${i + 1} was not refused for a held slot`)
    t.match(answer, /^HTTP\/1\.1 403/, `attempt ${i + 1}: the upstream's refusal reached the client`)
    t.ok(await eventually(() => gauges(gw, 'ws').streams === 0, 2000), `attempt ${i + 1}: the slot is back`)
  }
})

t.test('an event-stream GET in another spelling of Accept is still a stream, held to max_streams per key', async (t) => {
  const gw = await gateway(
    t,
    (up) => `
  - name: events
    match: { path: /events }
    upstream: ${up}
    scopes: { "*": [orders:read] }
    max_streams: { route: 10, per_key: { key: client, limit: 1 } }`,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: hello\n\n')
    },
  )
  const token = await gw.mint()
  const first = open(gw, '/events/a', { authorization: `Bearer ${token}`, accept: 'text/event-stream' })
  t.teardown(first.abort)
  t.equal(await first.head, 200)
  const reached = gw.upstream.seen.length
  for (const accept of ['TEXT/EVENT-STREAM', 'application/json;q=0.1, Text/Event-Stream;q=1', '*/*, text/event-stream']) {
    const other = open(gw, '/events/b', { authorization: `Bearer ${token}`, accept })
    t.teardown(other.abort)
    t.equal(await other.head, 503, `Accept: ${accept}`)
  }
  t.equal(gw.upstream.seen.length, reached, 'none of them reached the upstream')
  t.same(gauges(gw, 'events'), { inFlight: 0, streams: 1 })
})
