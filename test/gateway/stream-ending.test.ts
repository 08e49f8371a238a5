/**
 * Issue #30 item 6: a long response through the gateway ends when its access
 * ends. An upstream streams server-sent events (and WebSocket frames)
 * forever; the client's stream must end within a second of the token's
 * revocation reaching the instance (by jti at /revoke, by grant when a
 * replaced refresh token is presented again) and at the token's expiry plus
 * `gateway.stream_expiry_grace`, the upstream must see its connection close,
 * and a stream whose token is still good must go on delivering past that
 * point. Served by the App's dispatcher (test/helpers/serve-runtime.ts).
 */
import t from 'tap'
import { createServer } from 'node:http'
import { performance } from 'node:perf_hooks'
import { ManualClock } from '../../src/clock.js'
import { backYaml, basic, codeParams, mintCode, token as tokenRequest, harnessOf, type Harness } from '../helpers/as-back.js'
import { closeServer, eventually, postForm, listen } from '../helpers/http.js'
import { serveRuntime, type ServedRuntime } from '../helpers/serve-runtime.js'
import { openSocket, openStream, startStreamingUpstream, type StreamRequest, within, type StreamingUpstream } from '../helpers/streams.js'

/** The revocation, measured from the moment the request leaves, must reach the client's stream within this. */
const LIMIT_MS = 1000

/** A clock that follows real time (the expiry timer and the tokens' exp read the same one). */
class RealClock extends ManualClock {
  override now(): number {
    return Date.now()
  }
}

async function serve(
  up: StreamingUpstream,
  o: { clock?: ManualClock; ttl?: string; grace?: string; format?: 'jwt' | 'opaque' } = {},
): Promise<{ served: ServedRuntime; h: Harness; reached: () => number }> {
  // Beside the standard routes, one that fronts an MCP server (its POST bodies are read and judged).
  let yaml = `${(await backYaml({ format: o.format })).replaceAll('http://127.0.0.1:9', up.url)}  - { name: mcp, match: { path: /mcp }, upstream: "${up.url}", audience: "\${PUBLIC_URL}", token: any, mcp: { tools: { delete_order: [orders:write] } } }\n`
  if (o.ttl !== undefined) yaml = yaml.replace('ttl: 600s, claims', `ttl: ${o.ttl}, claims`)
  if (o.grace !== undefined) yaml = yaml.replace('trusted_proxies: [127.0.0.1]', `trusted_proxies: [127.0.0.1]\n  stream_expiry_grace: ${o.grace}`)
  const served = await serveRuntime(yaml, { clock: o.clock })
  // When the instance's revocation list learnt the last revocation: the moment "within a second" counts from.
  let reachedAt = Number.NaN
  served.revocations.onRevoked(() => {
    reachedAt = performance.now()
  })
  const h = harnessOf(served)
  return { served, h, reached: () => reachedAt }
}

/** A client_credentials token of `service` (a jti, no grant). */
async function serviceToken(h: Harness): Promise<string> {
  const r = await tokenRequest(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read' })
  if (r.status !== 200 || r.json === null) throw new Error(`token: ${r.status} ${r.text}`)
  return r.json.access_token as string
}

function ended(served: ServedRuntime, reason: 'revoked' | 'expired'): number {
  return served.metrics.exchangesEnded.get({ reason })
}

t.test('a stream ends within a second of its token being revoked; another stream goes on', async (t) => {
  const up = await startStreamingUpstream()
  const { served, h, reached } = await serve(up)
  t.teardown(async () => {
    await served.close()
    await up.close()
  })

  await t.test('revoked by jti at /revoke', async (t) => {
    const doomed = await serviceToken(h)
    const kept = await serviceToken(h)
    const a = await openStream(`${served.url}/orders/events`, doomed)
    const b = await openStream(`${served.url}/orders/events`, kept)
    t.equal(a.status, 200)
    t.equal(b.status, 200)
    await a.chunkAfter(performance.now())
    const upstreamA = up.streams.at(-2)
    t.ok(upstreamA?.url.endsWith('/orders/events') && upstreamA.closedAt === null, 'the upstream is streaming')

    const res = await postForm(`${served.url}/revoke`, { token: doomed }, { authorization: basic('service') })
    t.equal(res.status, 200)
    t.ok(await within(a.ended, 3 * LIMIT_MS), 'it ends')
    const ms = (a.endedAt ?? 0) - reached()
    t.ok(ms < LIMIT_MS, `revocation reaching the instance to the end of the stream: ${ms.toFixed(1)} ms (limit ${LIMIT_MS} ms)`)
    t.notOk(a.complete, 'the chunked body is cut, not ended: the client cannot take it for whole')
    t.ok(await eventually(() => upstreamA?.closedAt != null, LIMIT_MS), 'the upstream saw its connection close')
    const after = await b.chunkAfter(a.endedAt ?? 0)
    t.ok(after > (a.endedAt ?? 0) && b.endedAt === null, 'the stream of the unrevoked token still delivers after that point')
    t.equal(ended(served, 'revoked'), 1, 'bearward_exchanges_ended_total{reason="revoked"} counts it')
    const line = served.logs.find((l) => l.msg === 'open exchange ended: its access token was revoked')
    t.match(line, { level: 30, route: 'orders', reason: 'revoked' }, 'an info line names the route and the reason')
    t.notOk(String(JSON.stringify(line)).includes(doomed.split('.')[2] ?? doomed), 'and not the token')
    t.equal((await openStream(`${served.url}/orders/events`, doomed)).status, 401, 'a new request with the token is refused')
    b.close()
    await b.ended
  })

  await t.test('revoked by grant: a replaced refresh token presented again revokes the family', async (t) => {
    const before = ended(served, 'revoked')
    const code = await mintCode(h, { scope: 'openid orders:read' })
    const first = await tokenRequest(h, 'web', codeParams(code))
    t.equal(first.status, 200)
    const refresh1 = first.json?.refresh_token as string
    const second = await tokenRequest(h, 'web', { grant_type: 'refresh_token', refresh_token: refresh1 })
    t.equal(second.status, 200)
    const kept = await serviceToken(h)
    const streams = await Promise.all(
      [first.json?.access_token as string, second.json?.access_token as string, kept].map((tok) => openStream(`${served.url}/orders/events`, tok)),
    )
    t.same(
      streams.map((s) => s.status),
      [200, 200, 200],
    )
    const [s1, s2, other] = streams as [(typeof streams)[0], (typeof streams)[0], (typeof streams)[0]]
    const upstreams = up.streams.slice(-3)

    const reuse = await tokenRequest(h, 'web', { grant_type: 'refresh_token', refresh_token: refresh1 })
    t.equal(reuse.status, 400, 'the reuse is refused')
    t.ok(await within(Promise.all([s1.ended, s2.ended]), 3 * LIMIT_MS), 'both end')
    for (const [i, s] of [s1, s2].entries()) {
      const ms = (s.endedAt ?? 0) - reached()
      t.ok(ms < LIMIT_MS, `family revoked to the end of stream ${i + 1}: ${ms.toFixed(1)} ms`)
    }
    t.ok(await eventually(() => upstreams[0]?.closedAt != null && upstreams[1]?.closedAt != null, LIMIT_MS), 'the upstream saw both close')
    const last = Math.max(s1.endedAt ?? 0, s2.endedAt ?? 0)
    t.ok((await other.chunkAfter(last)) > last, 'the other client’s stream still delivers')
    t.equal(upstreams[2]?.closedAt, null)
    t.equal(ended(served, 'revoked') - before, 2, 'both counted')
    other.close()
    await other.ended
  })

  await t.test('MCP streams of both eras are cut: a 2026-07-28 listen POST, a 2025-11-25 SSE GET', async (t) => {
    const before = ended(served, 'revoked')
    const doomed = await serviceToken(h)
    const listen: StreamRequest = {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} }),
    }
    const s = await openStream(`${served.url}/mcp`, doomed, listen)
    t.equal(s.status, 200)
    await s.chunkAfter(performance.now())
    const upstream = up.streams.at(-1)
    t.equal(upstream?.url, '/mcp', 'the listen stream reached the MCP server')
    // The 2025-11-25 stream belongs to a session the same token opened (the gateway binds it, mcp/sessions.ts).
    const init = await fetch(`${served.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${doomed}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    })
    t.equal(init.headers.get('mcp-session-id'), 'session-1')
    await init.text()
    const old = await openStream(`${served.url}/mcp`, doomed, {
      method: 'GET',
      headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': 'session-1' },
      body: '',
    })
    t.equal(old.status, 200, 'the 2025-11-25 GET stream is open too')
    const oldUpstream = up.streams.at(-1)
    t.equal((await postForm(`${served.url}/revoke`, { token: doomed }, { authorization: basic('service') })).status, 200)
    t.ok(await within(Promise.all([s.ended, old.ended]), 3 * LIMIT_MS), 'both end')
    for (const [what, at] of [
      ['listen stream', s.endedAt],
      ['GET stream', old.endedAt],
    ] as const) {
      const ms = (at ?? 0) - reached()
      t.ok(ms < LIMIT_MS, `revocation reaching the instance to the end of the ${what}: ${ms.toFixed(1)} ms`)
    }
    t.notOk(s.complete || old.complete, 'the streams are cut')
    t.ok(await eventually(() => upstream?.closedAt != null && oldUpstream?.closedAt != null, LIMIT_MS), 'the MCP server saw both connections close')
    t.equal(ended(served, 'revoked') - before, 2)
  })

  await t.test('a WebSocket is closed with 1008 and a reason', async (t) => {
    const before = ended(served, 'revoked')
    const doomed = await serviceToken(h)
    const kept = await serviceToken(h)
    const ws = await openSocket(`${served.url}/orders/ws`, doomed)
    const other = await openSocket(`${served.url}/orders/ws`, kept)
    await ws.messageAfter(performance.now())
    const upstream = up.streams.at(-2)

    const res = await postForm(`${served.url}/revoke`, { token: doomed }, { authorization: basic('service') })
    t.equal(res.status, 200)
    t.ok(await within(ws.closed, 3 * LIMIT_MS), 'it ends')
    const ms = (ws.closedAt ?? 0) - reached()
    t.ok(ms < LIMIT_MS, `revocation to the WebSocket's close: ${ms.toFixed(1)} ms`)
    t.equal(ws.code, 1008, 'close code 1008 (policy violation)')
    t.equal(ws.reason, 'access token revoked')
    t.ok(await eventually(() => upstream?.closedAt != null, LIMIT_MS), 'the upstream saw its connection close')
    const closedAt = ws.closedAt ?? 0
    t.ok((await other.messageAfter(closedAt)) > closedAt, 'the other WebSocket still delivers')
    t.equal(ended(served, 'revoked') - before, 1)
    other.close()
    await other.closed
  })
})

t.test('a stream ends at its token’s exp plus stream_expiry_grace', async (t) => {
  const up = await startStreamingUpstream()
  const { served, h } = await serve(up, { clock: new RealClock(), ttl: '1s', grace: '1s' })
  t.teardown(async () => {
    await served.close()
    await up.close()
  })
  const first = await serviceToken(h)
  const exp = (JSON.parse(Buffer.from(first.split('.')[1] ?? '', 'base64url').toString()) as { exp: number }).exp
  const a = await openStream(`${served.url}/orders/events`, first)
  t.equal(a.status, 200)
  const ws = await openSocket(`${served.url}/orders/ws`, first)
  const upstreamA = up.streams.at(-2)
  // A token issued after the first one's exp: its stream outlives the first's deadline.
  t.ok(await eventually(() => Date.now() >= exp * 1000, 3000), 'the first token expires')
  const second = await serviceToken(h)
  const b = await openStream(`${served.url}/orders/events`, second)
  t.equal(b.status, 200)
  t.ok(await within(a.ended, 3 * LIMIT_MS), 'it ends')
  t.ok(await within(ws.closed, 3 * LIMIT_MS), 'it ends')
  const deadline = (exp + 1) * 1000
  const endedAtEpoch = Date.now() - (performance.now() - (a.endedAt ?? 0))
  t.ok(endedAtEpoch >= deadline - 50, `not before exp + grace (${(endedAtEpoch - deadline).toFixed(0)} ms from it)`)
  t.ok(endedAtEpoch < deadline + LIMIT_MS, 'within a second of exp + grace')
  t.notOk(a.complete, 'the body is cut')
  t.equal(ws.code, 1008)
  t.equal(ws.reason, 'access token expired')
  t.ok(await eventually(() => upstreamA?.closedAt != null, LIMIT_MS), 'the upstream saw its connection close')
  const endedAt = Math.max(a.endedAt ?? 0, ws.closedAt ?? 0)
  t.ok((await b.chunkAfter(endedAt)) > endedAt, 'the stream of the later token still delivers past that point')
  t.equal(ended(served, 'expired'), 2, 'bearward_exchanges_ended_total{reason="expired"} counts both')
  t.match(
    served.logs.find((l) => l.msg === 'open exchange ended: its access token expired'),
    { level: 30, route: 'orders', reason: 'expired' },
  )
  b.close()
  await b.ended
})

t.test('a tunnel opened before the gateway was retired (a reload) still ends when its token is revoked', async (t) => {
  const up = await startStreamingUpstream()
  const { served, h, reached } = await serve(up)
  t.teardown(async () => {
    await served.close()
    await up.close()
  })
  const doomed = await serviceToken(h)
  const ws = await openSocket(`${served.url}/orders/ws`, doomed)
  // What App.reload does to the Runtime it swaps out, once its HTTP requests drained.
  await served.runtime.gateway.close()
  await ws.messageAfter(performance.now())
  const res = await postForm(`${served.url}/revoke`, { token: doomed }, { authorization: basic('service') })
  t.equal(res.status, 200)
  t.ok(await within(ws.closed, 3 * LIMIT_MS), 'it ends')
  t.ok((ws.closedAt ?? 0) - reached() < LIMIT_MS, 'closed within a second')
  t.equal(ws.code, 1008)
  t.equal(ended(served, 'revoked'), 1)
})

t.test('an opaque token: its stream ends when it is revoked (jti and exp from the store’s record)', async (t) => {
  const up = await startStreamingUpstream()
  const { served, h, reached } = await serve(up, { format: 'opaque' })
  t.teardown(async () => {
    await served.close()
    await up.close()
  })
  const doomed = await serviceToken(h)
  const kept = await serviceToken(h)
  t.equal(doomed.split('.').length, 1, 'an opaque token')
  const a = await openStream(`${served.url}/orders/events`, doomed)
  const b = await openStream(`${served.url}/orders/events`, kept)
  t.equal(a.status, 200)
  await a.chunkAfter(performance.now())
  t.equal((await postForm(`${served.url}/revoke`, { token: doomed }, { authorization: basic('service') })).status, 200)
  t.ok(await within(a.ended, 3 * LIMIT_MS), 'it ends')
  t.ok((a.endedAt ?? 0) - reached() < LIMIT_MS, `within a second: ${((a.endedAt ?? 0) - reached()).toFixed(1)} ms`)
  const endedAt = a.endedAt ?? 0
  t.ok((await b.chunkAfter(endedAt)) > endedAt, 'the other opaque token’s stream goes on')
  t.equal(ended(served, 'revoked'), 1)
  b.close()
  await b.ended
})

t.test('a token of another issuer, introspected: jti, grant and exp come from the introspection answer', async (t) => {
  const up = await startStreamingUpstream()
  const clock = new RealClock()
  const nowSec = (): number => Math.floor(Date.now() / 1000)
  // RFC 7662 answers by token: a jti, a grant id (bearward's claim) and an exp one second away for `short`.
  const answers: Record<string, Record<string, unknown>> = {
    'by-jti': { jti: 'remote-jti', exp: nowSec() + 3600 },
    'by-grant': { jti: 'remote-2', grant_id: 'remote-grant', exp: nowSec() + 3600 },
    short: { jti: 'remote-3', exp: nowSec() + 1 },
    kept: { jti: 'remote-4', exp: nowSec() + 3600 },
  }
  const idp = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const token = new URLSearchParams(Buffer.concat(chunks).toString()).get('token') ?? ''
      const answer = answers[token]
      res.setHeader('content-type', 'application/json')
      res.end(
        JSON.stringify(
          answer === undefined ? { active: false } : { active: true, iss: 'https://idp.example', aud: 'https://api.example', sub: 'bob', ...answer },
        ),
      )
    })
  })
  const idpAt = await listen(idp)
  const served = await serveRuntime(
    `
public_url: \${PUBLIC_URL}
gateway: { stream_expiry_grace: 1s }
issuers:
  - id: corp
    issuer: https://idp.example
    introspection: { endpoint: ${idpAt.url}/introspect, client_id: gw, client_secret: s3cret }
routes:
  - { name: remote, match: { path: /remote }, upstream: "${up.url}", token: introspect, issuers: [corp], audience: https://api.example }
`,
    { clock },
  )
  t.teardown(async () => {
    await served.close()
    await up.close()
    await closeServer(idp)
  })
  const [byJti, byGrant, short, kept] = await Promise.all(['by-jti', 'by-grant', 'short', 'kept'].map((tok) => openStream(`${served.url}/remote/events`, tok)))
  if (byJti === undefined || byGrant === undefined || short === undefined || kept === undefined) throw new Error('streams')
  t.same([byJti.status, byGrant.status, short.status, kept.status], [200, 200, 200, 200])
  // What a revocation message from the issuer's side would bring to the list (here: added directly).
  served.revocations.add({ kind: 'jti', id: 'remote-jti', exp: nowSec() + 3600 })
  served.revocations.add({ kind: 'grant', id: 'remote-grant', exp: nowSec() + 3600 })
  t.ok(await within(Promise.all([byJti.ended, byGrant.ended]), 3 * LIMIT_MS), 'the jti and the grant of the answer end their streams')
  t.ok(await within(short.ended, 4 * LIMIT_MS), 'the exp of the answer (plus grace) ends the third')
  const endedAt = Math.max(byJti.endedAt ?? 0, byGrant.endedAt ?? 0, short.endedAt ?? 0)
  t.ok((await kept.chunkAfter(endedAt)) > endedAt, 'the fourth goes on')
  t.equal(ended(served, 'revoked'), 2)
  t.equal(ended(served, 'expired'), 1)
  kept.close()
  await kept.ended
})
