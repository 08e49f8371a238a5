import t from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { closeServer, eventually, listen } from '../helpers/http.js'
import { basic } from '../helpers/client-auth.js'

/**
 * Traces through bin/bearward: the client's W3C trace context reaches the
 * upstream continued (our span as its parent), a new trace is started when
 * none arrived, the access log names the trace, and with `telemetry.traces`
 * the spans reach a real OTLP/HTTP receiver with the right parentage, names
 * and attributes, and no token or secret anywhere in them.
 */

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'
const SECRET = 'demo-secret'
const SECRET_HASH = 'scrypt$16384$8$1$T_fa9RH8qvVUH6zmXvgxwg$5I6XnQ5GNOnSvh4hfIvI-IzxZqino7IpleF2VoTz-9U'
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/

interface OtlpValue {
  stringValue?: string
  intValue?: number | string
  boolValue?: boolean
}
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: Array<{ key: string; value: OtlpValue }>
}
interface OtlpExport {
  resourceSpans: Array<{ resource?: { attributes?: Array<{ key: string; value: OtlpValue }> }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>
}

const SERVER = 2
const CLIENT = 3

/** A real OTLP/HTTP (JSON) receiver: what bearward exports, as received. */
async function startReceiver(): Promise<{ url: string; bodies: string[]; spans(): OtlpSpan[]; headers: IncomingMessage['headers'][]; close(): Promise<void> }> {
  const bodies: string[] = []
  const headers: IncomingMessage['headers'][] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        bodies.push(Buffer.concat(chunks).toString('utf8'))
        headers.push(req.headers)
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  const { url } = await listen(server)
  return {
    url,
    bodies,
    headers,
    spans: () => bodies.flatMap((b) => (JSON.parse(b) as OtlpExport).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))),
    close: () => closeServer(server),
  }
}

function attr(span: OtlpSpan | undefined, key: string): string | number | boolean | undefined {
  const v = span?.attributes?.find((a) => a.key === key)?.value
  if (v === undefined) return undefined
  return v.stringValue ?? (v.intValue === undefined ? v.boolValue : Number(v.intValue))
}

function config(upstream: string, telemetry: string): string {
  return `
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://127.0.0.1:8080
store: memory
log: { level: info }
${telemetry}
authorization_server:
  scopes: { "orders:read": Read orders }
  clients:
    - client_id: svc
      type: confidential
      secret_hash: "${SECRET_HASH}"
      grant_types: [client_credentials]
      scopes: ["orders:read"]
routes:
  - name: orders
    match: { path: /orders }
    upstream: ${upstream}
    scopes: { "*": ["orders:read"] }
`
}

async function tokenFrom(bin: RunningBin): Promise<string> {
  const res = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: basic('svc', SECRET), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=orders%3Aread',
  })
  if (res.status !== 200) throw new Error(`token: ${res.status}`)
  return ((await res.json()) as { access_token: string }).access_token
}

function accessLines(bin: RunningBin): Array<Record<string, unknown>> {
  return bin.lines.flatMap((l) => {
    try {
      const e = JSON.parse(l) as Record<string, unknown>
      return e.msg === 'request' ? [e] : []
    } catch {
      return []
    }
  })
}

t.test('trace context reaches the upstream with tracing off: continued, or new', async (t) => {
  const up = await startUpstream('orders')
  const cfg = await tempConfig(config(up.url, ''))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const token = await tokenFrom(bin)
  const continued = await fetch(`${bin.url}/orders/1`, {
    headers: { authorization: `Bearer ${token}`, traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: 'congo=t61rcWkgMzE' },
  })
  t.equal(continued.status, 200)
  const sent = up.seen.at(-1)?.headers
  const m = TRACEPARENT.exec(String(sent?.traceparent))
  t.ok(m, `the upstream received a valid traceparent: ${String(sent?.traceparent)}`)
  t.equal(m?.[1], TRACE, "the client's trace is continued")
  t.not(m?.[2], PARENT, "the parent is bearward's span, not the client's")
  t.equal(String(sent?.traceparent).slice(-2), '01', 'the sampled flag is kept')
  t.equal(sent?.tracestate, 'congo=t61rcWkgMzE', 'tracestate is passed on unchanged')

  const fresh = await fetch(`${bin.url}/orders/2`, { headers: { authorization: `Bearer ${token}`, traceparent: 'not-a-traceparent' } })
  t.equal(fresh.status, 200)
  const freshSent = String(up.seen.at(-1)?.headers.traceparent)
  t.match(freshSent, TRACEPARENT, 'a malformed traceparent is replaced by a new trace')
  t.not(TRACEPARENT.exec(freshSent)?.[1], TRACE)
  t.equal(up.seen.at(-1)?.headers.traceparent?.includes('not-a'), false)

  await eventually(() => accessLines(bin).filter((l) => l.route === 'orders').length >= 2)
  const lines = accessLines(bin).filter((l) => l.route === 'orders')
  t.equal(lines[0]?.trace_id, TRACE, 'the access line names the trace')
  t.equal(lines[1]?.trace_id, TRACEPARENT.exec(freshSent)?.[1], "a new trace's id is in the access line too")
})

t.test('with telemetry.traces, spans reach an OTLP receiver: parentage, names, attributes, no token', async (t) => {
  const up = await startUpstream('orders')
  const receiver = await startReceiver()
  const cfg = await tempConfig(
    config(up.url, `telemetry:\n  traces:\n    otlp: { endpoint: ${receiver.url}, headers: { x-api-key: collector-key } }\n    sample: 1\n`),
  )
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await up.close()
    await receiver.close()
    await cfg.cleanup()
  })
  const token = await tokenFrom(bin)
  const res = await fetch(`${bin.url}/orders/7?secret_query=not-logged`, {
    headers: { authorization: `Bearer ${token}`, traceparent: `00-${TRACE}-${PARENT}-01` },
  })
  t.equal(res.status, 200)
  const upstreamParent = TRACEPARENT.exec(String(up.seen.at(-1)?.headers.traceparent))?.[2]
  const refused = await fetch(`${bin.url}/orders/8`, { headers: { traceparent: `00-${TRACE}-${PARENT}-01` } })
  t.equal(refused.status, 401)
  // A client that fails authentication: the client_id it claims is the attacker's choice, never put on the span.
  const wrongSecret = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: basic('svc', 'not-the-secret'), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
  t.equal(wrongSecret.status, 401)
  const stranger = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=attacker-chosen',
  })
  t.equal(stranger.status, 401)
  // SIGTERM flushes what the batch processor holds.
  t.equal(await bin.stop('SIGTERM'), 0)
  t.ok(await eventually(() => receiver.spans().some((s) => s.name === 'GET /orders' && attr(s, 'http.response.status_code') === 401)), 'spans arrived')
  t.equal(receiver.headers[0]?.['x-api-key'], 'collector-key', 'the configured headers are sent with each export')

  const spans = receiver.spans()
  const server = spans.find((s) => s.name === 'GET /orders' && attr(s, 'http.response.status_code') === 200)
  t.ok(server, 'a server span named after the method and route')
  t.equal(server?.kind, SERVER)
  t.equal(server?.traceId, TRACE, "it continues the client's trace")
  t.equal(server?.parentSpanId, PARENT, "its parent is the client's span")
  t.equal(attr(server, 'http.request.method'), 'GET')
  t.equal(attr(server, 'http.route'), '/orders')
  t.equal(attr(server, 'url.path'), '/orders/7', 'the path, without the query')
  t.equal(attr(server, 'bearward.route'), 'orders')
  t.equal(attr(server, 'bearward.client_id'), 'svc')
  t.equal(attr(server, 'url.scheme'), 'http')
  t.equal(attr(server, 'network.protocol.version'), '1.1')
  t.equal(attr(server, 'client.address'), '127.0.0.1', "the request's attributes, set once the span is known to be recorded")

  const children = spans.filter((s) => s.parentSpanId === server?.spanId)
  const verify = children.find((s) => s.name === 'bearward.token.verify')
  t.ok(verify, 'token verification is a child of the request')
  t.equal(attr(verify, 'bearward.token.cache'), 'miss', 'first use of the token: verified, not cached')
  t.equal(attr(verify, 'bearward.token.issuer'), 'self')
  const upstream = children.find((s) => s.kind === CLIENT && s.name === 'GET')
  t.ok(upstream, 'the upstream exchange is a client span of the request')
  t.equal(upstream?.spanId, upstreamParent, "the upstream's traceparent names that client span as its parent")
  t.equal(attr(upstream, 'http.response.status_code'), 200)
  t.equal(attr(upstream, 'server.address'), '127.0.0.1')
  t.equal(attr(upstream, 'server.port'), Number(new URL(up.url).port), "the upstream's port")
  t.equal(attr(upstream, 'url.path'), '/orders/7')

  const tokenSpan = spans.find((s) => s.name === 'POST /token' && attr(s, 'http.response.status_code') === 200)
  t.ok(tokenSpan, 'the authorization server endpoint has its server span')
  t.equal(attr(tokenSpan, 'http.route'), '/token')
  t.equal(attr(tokenSpan, 'bearward.client_id'), 'svc', 'the authenticated client')
  const unauthenticated = spans.filter((s) => s.name === 'POST /token' && attr(s, 'http.response.status_code') === 401)
  t.equal(unauthenticated.length, 2, 'failed client authentications are traced')
  for (const span of unauthenticated) t.equal(attr(span, 'bearward.client_id'), undefined, 'no client_id the client did not prove')
  t.ok(
    spans.some((s) => s.parentSpanId === tokenSpan?.spanId && attr(s, 'db.system.name') === 'bearward.memory'),
    'its store calls are its children',
  )
  const refusal = spans.find((s) => s.name === 'GET /orders' && attr(s, 'http.response.status_code') === 401)
  t.ok(refusal, 'a refused request is traced too')

  const everything = receiver.bodies.join('\n')
  for (const secret of [token, token.split('.')[2] ?? token, SECRET, 'not-logged', 'collector-key']) {
    t.notOk(everything.includes(secret), 'no token, secret or query value in any exported span')
  }
  const resource = (JSON.parse(receiver.bodies[0] ?? '{}') as OtlpExport).resourceSpans[0]?.resource?.attributes
  t.equal(resource?.find((a) => a.key === 'service.name')?.value.stringValue, 'bearward')
})
