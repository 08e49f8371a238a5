/**
 * bearward as a Shared Signals transmitter (SSF 1.0, docs/signals.md): the
 * metadata, stream management by a receiver holding a client-credentials
 * token of scope `ssf:stream`, and the SETs pushed (RFC 8935) to a test
 * receiver (a real HTTP server), each claim checked against the specs with
 * jose and our published JWKS. Attacks: no token, a token without the scope,
 * a person's token, another client's stream id, a huge stream config, a
 * stream endpoint at a private address or this host. Faults: a receiver that
 * is down (its server closed) gets a bounded queue, the oldest dropped and
 * counted, the rest delivered when it listens again.
 */
import { createServer, type Server } from 'node:http'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose'
import t, { type Test } from 'tap'
import { endSessionsOf } from '../../src/as/sessions/end-sessions.js'
import { ManualClock } from '../../src/clock.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { receiverQueue } from '../../src/signals/transmitter/deliver.js'
import type { Runtime } from '../../src/runtime.js'
import { backYaml, codeParams, type Harness, harnessOf, mintCode, SECRETS, send } from '../helpers/as-back.js'
import { basic } from '../helpers/client-auth.js'
import { closeServer, postForm, reply, type Reply } from '../helpers/http.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/'
const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification'
const PUSH = 'urn:ietf:rfc:8935'
/** The receivers' secret (each client its own id, one secret: what matters here is the client id). */
const RP_SECRET = SECRETS.web as string

/** A receiver: a real HTTP server on 127.0.0.1 that records each push and answers 202; `close` and `listen` again on its port. */
class TestReceiver {
  readonly pushes: { contentType: string | undefined; authorization: string | undefined; body: string }[] = []
  #server: Server | null = null
  port = 0
  #waiters: (() => void)[] = []

  get url(): string {
    return `http://127.0.0.1:${this.port}/events`
  }

  async listen(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        this.pushes.push({ contentType: req.headers['content-type'], authorization: req.headers.authorization, body: Buffer.concat(chunks).toString('utf8') })
        res.writeHead(202).end()
        for (const w of this.#waiters.splice(0)) w()
      })
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.port = (server.address() as { port: number }).port
    this.#server = server
  }

  async close(): Promise<void> {
    const s = this.#server
    this.#server = null
    if (s === null) return
    await closeServer(s)
  }
}

interface Setup {
  h: Harness
  runtime: Runtime
  rx: TestReceiver
  /** Verify a pushed SET as a receiver does: our JWKS, `typ`, `iss`, `aud`. */
  verify(jwt: string, aud?: string): Promise<JWTPayload>
}

async function setup(t: Test, o: { queueMax?: number } = {}): Promise<Setup> {
  const hash = await hashSecret(RP_SECRET)
  const rp = (id: string, scopes: string) =>
    `    - { client_id: ${id}, type: confidential, secret_hash: "${hash}", redirect_uris: [https://${id}.example.com/cb], grant_types: [authorization_code, refresh_token, client_credentials], scopes: [${scopes}] }`
  const yaml = await backYaml({
    clientsExtra: [rp('rp', 'openid, orders:read, ssf:stream'), rp('rp2', 'openid, orders:read, ssf:stream'), rp('plain', 'openid, orders:read')].join('\n'),
    top: ['signals:', '  transmitter:', '    enabled: true', '    allow_hosts: [127.0.0.1]', `    queue: { max: ${o.queueMax ?? 1000} }`].join('\n'),
  })
  const served = await serveRuntime(yaml, { clock: new ManualClock(Date.now()), signingKey: () => generatePrivateJwk('ES256') })
  const h = harnessOf(served)
  const rx = new TestReceiver()
  await rx.listen()
  t.teardown(async () => {
    await h.close()
    await rx.close()
  })
  const jwks = createRemoteJWKSet(new URL(`${h.url}/jwks.json`))
  return {
    h,
    runtime: served.runtime,
    rx,
    verify: async (jwt, aud = 'rp') => (await jwtVerify(jwt, jwks, { issuer: h.issuer, audience: aud, typ: 'secevent+jwt' })).payload,
  }
}

/** A client-credentials access token of `clientId` for `scope`. */
async function clientToken(h: Harness, clientId: string, scope = 'ssf:stream'): Promise<string> {
  const r = await reply(postForm(`${h.url}/token`, { grant_type: 'client_credentials', scope }, { authorization: basic(clientId, RP_SECRET) }))
  if (r.status !== 200 || r.json === null) throw new Error(`client_credentials failed: ${r.status} ${r.text}`)
  return String(r.json.access_token)
}

/** `sub` grants `clientId` (a code redeemed at /token): what makes the person one the receiver hears about. */
async function grant(h: Harness, sub: string, clientId: string): Promise<string> {
  const m = await mintCode(h, { sub, clientId, scope: 'openid orders:read' })
  const r = await reply(postForm(`${h.url}/token`, codeParams(m), { authorization: basic(clientId, RP_SECRET) }))
  if (r.status !== 200 || r.json === null) throw new Error(`code exchange failed: ${r.status} ${r.text}`)
  return String(r.json.access_token)
}

function call(h: Harness, method: string, path: string, token: string | null, body?: unknown): Promise<Reply> {
  return send(`${h.url}${path}`, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  })
}

function createBody(endpointUrl: string, events = [`${CAEP}session-revoked`, `${CAEP}credential-change`]): Record<string, unknown> {
  return { delivery: { method: PUSH, endpoint_url: endpointUrl }, events_requested: events, description: 'test receiver' }
}

/** Create the stream of `clientId` to the test receiver; its stream_id. */
async function createStream(s: Setup, clientId = 'rp', events?: string[]): Promise<string> {
  const r = await call(s.h, 'POST', '/ssf/stream', await clientToken(s.h, clientId), createBody(s.rx.url, events))
  if (r.status !== 201 || r.json === null) throw new Error(`stream create failed: ${r.status} ${r.text}`)
  return String(r.json.stream_id)
}

/** Deliver everything due now (what every instance's timer does each second). */
async function deliver(s: Setup): Promise<void> {
  const tx = s.runtime.signals?.transmitter
  if (tx === null || tx === undefined) throw new Error('the transmitter is not on')
  await tx.delivery.runOnce()
}

/** A live session of `sub` as the store keeps it. */
async function sessionOf(h: Harness, sub: string): Promise<void> {
  await h.store.sessions.put(`s-${sub}-${h.clock.now()}`, { sub, username: sub, authTime: Math.floor(h.clock.now() / 1000), acr: 'pwd', csrf: 'c' }, 3600)
}

t.test('the metadata: /.well-known/ssf-configuration (SSF 1.0 7.1), and the scope advertised', async (t) => {
  const { h } = await setup(t)
  const r = await send(`${h.url}/.well-known/ssf-configuration`)
  t.equal(r.status, 200)
  t.match(r.headers.get('content-type'), /^application\/json/)
  t.same(r.json, {
    spec_version: '1_0',
    issuer: h.issuer,
    jwks_uri: `${h.issuer}/jwks.json`,
    delivery_methods_supported: [PUSH],
    configuration_endpoint: `${h.issuer}/ssf/stream`,
    status_endpoint: `${h.issuer}/ssf/status`,
    verification_endpoint: `${h.issuer}/ssf/verify`,
    authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
    default_subjects: 'ALL',
  })
  const m = await send(`${h.url}/.well-known/openid-configuration`)
  t.ok(((m.json?.scopes_supported ?? []) as string[]).includes('ssf:stream'), 'scopes_supported names ssf:stream while the transmitter is on')
})

t.test('stream management: create, read, update, replace, status, delete', async (t) => {
  const s = await setup(t)
  const { h } = s
  const tok = await clientToken(h, 'rp')
  const created = await call(h, 'POST', '/ssf/stream', tok, {
    ...createBody(s.rx.url),
    events_requested: [`${CAEP}session-revoked`, 'https://example.com/unknown'],
  })
  t.equal(created.status, 201)
  const id = String(created.json?.stream_id)
  t.ok(id.length >= 20, 'a random stream id')
  t.same(created.json, {
    stream_id: id,
    iss: h.issuer,
    aud: 'rp',
    events_supported: [`${CAEP}session-revoked`, `${CAEP}credential-change`],
    events_requested: [`${CAEP}session-revoked`, 'https://example.com/unknown'],
    events_delivered: [`${CAEP}session-revoked`],
    delivery: { method: PUSH, endpoint_url: s.rx.url },
    description: 'test receiver',
  })
  t.equal(created.headers.get('cache-control'), 'no-store')

  const again = await call(h, 'POST', '/ssf/stream', tok, createBody(s.rx.url))
  t.equal(again.status, 409, 'one stream per receiver: a second create is a conflict')

  t.same((await call(h, 'GET', `/ssf/stream?stream_id=${id}`, tok)).json, created.json, 'read by id')
  t.same((await call(h, 'GET', '/ssf/stream', tok)).json, [created.json], 'read without an id: the list of its streams')

  const patched = await call(h, 'PATCH', '/ssf/stream', tok, { stream_id: id, description: 'renamed' })
  t.equal(patched.status, 200)
  t.equal(patched.json?.description, 'renamed')
  t.same(patched.json?.events_requested, created.json?.events_requested, 'PATCH keeps what it does not name')

  const replaced = await call(h, 'PUT', '/ssf/stream', tok, { stream_id: id, ...createBody(s.rx.url, [`${CAEP}credential-change`]) })
  t.equal(replaced.status, 200)
  t.same(replaced.json?.events_delivered, [`${CAEP}credential-change`])
  t.equal(replaced.json?.stream_id, id, 'the id stays')

  t.same((await call(h, 'GET', `/ssf/status?stream_id=${id}`, tok)).json, { stream_id: id, status: 'enabled' })
  const paused = await call(h, 'POST', '/ssf/status', tok, { stream_id: id, status: 'paused', reason: 'maintenance' })
  t.same(paused.json, { stream_id: id, status: 'paused', reason: 'maintenance' })
  t.same((await call(h, 'GET', `/ssf/status?stream_id=${id}`, tok)).json, { stream_id: id, status: 'paused', reason: 'maintenance' })
  t.equal((await call(h, 'POST', '/ssf/status', tok, { stream_id: id, status: 'asleep' })).status, 400, 'an unknown status is refused')

  const deleted = await call(h, 'DELETE', `/ssf/stream?stream_id=${id}`, tok)
  t.equal(deleted.status, 204)
  t.equal((await call(h, 'GET', `/ssf/stream?stream_id=${id}`, tok)).status, 404)
  t.same((await call(h, 'GET', '/ssf/stream', tok)).json, [])
  t.equal(await h.store.signals.getStream('rp'), null, 'gone from the store')
})

t.test('verification: 204, and a verification SET pushed, every claim as SSF 1.0 8.1.4 says', async (t) => {
  const s = await setup(t)
  const id = await createStream(s)
  const r = await call(s.h, 'POST', '/ssf/verify', await clientToken(s.h, 'rp'), { stream_id: id, state: 'VGhpcyBpcyBhbiBleGFtcGxl' })
  t.equal(r.status, 204)
  await deliver(s)
  t.equal(s.rx.pushes.length, 1)
  const push = s.rx.pushes[0]
  t.equal(push?.contentType, 'application/secevent+jwt', 'RFC 8935 2: the media type')
  const jwt = String(push?.body)
  t.equal(decodeProtectedHeader(jwt).typ, 'secevent+jwt')
  const claims = await s.verify(jwt)
  t.equal(claims.aud, 'rp')
  t.type(claims.jti, 'string')
  t.ok(typeof claims.iat === 'number' && Math.abs(claims.iat - s.h.clock.now() / 1000) < 2, 'iat is now')
  t.same(claims.sub_id, { format: 'opaque', id })
  t.same(claims.events, { [VERIFICATION]: { state: 'VGhpcyBpcyBhbiBleGFtcGxl' } })
  t.equal(claims.sub, undefined, 'SSF 1.0: the subject is sub_id, not sub')
  t.equal(claims.exp, undefined)
  t.equal(s.h.metrics.ssfEvents.get({ outcome: 'delivered' }), 1)

  // Deleting the stream drops what still waits for it.
  const tok = await clientToken(s.h, 'rp')
  await s.rx.close()
  t.equal((await call(s.h, 'POST', '/ssf/verify', tok, { stream_id: id })).status, 204)
  await deliver(s)
  s.h.clock.advance(5_000)
  t.equal((await call(s.h, 'DELETE', `/ssf/stream?stream_id=${id}`, tok)).status, 204)
  t.equal(s.h.metrics.ssfEvents.get({ outcome: 'dropped' }), 1, 'the waiting verification event was dropped with the stream')
  s.h.clock.advance(120_000)
  t.same(await s.h.store.deliveries.claim(receiverQueue('rp'), 1000, 10), [], "nothing is left in the receiver's queue")
})

t.test('session-revoked: told to receivers the person holds a grant with, and to no one else', async (t) => {
  const s = await setup(t)
  const { h } = s
  await createStream(s, 'rp')
  // rp2 has a stream to the same receiver URL, but alice never granted it anything.
  await createStream(s, 'rp2')
  await grant(h, 'alice', 'rp')
  await sessionOf(h, 'alice')
  await sessionOf(h, 'user-0002')

  await endSessionsOf(h.as, 'user-0002', 'sign_out_everywhere')
  await deliver(s)
  t.equal(s.rx.pushes.length, 0, 'bob holds no grant with either receiver: nothing is sent')

  await endSessionsOf(h.as, 'alice', 'sign_out_everywhere')
  await deliver(s)
  t.equal(s.rx.pushes.length, 1, 'one SET, to rp only')
  const claims = await s.verify(String(s.rx.pushes[0]?.body), 'rp')
  t.same(claims.sub_id, { format: 'iss_sub', iss: h.issuer, sub: 'alice' })
  const event = (claims.events as Record<string, Record<string, unknown>>)[`${CAEP}session-revoked`]
  t.ok(event !== undefined, 'the CAEP session-revoked event')
  t.equal(event?.initiating_entity, 'user')
  t.equal(event?.event_timestamp, Math.floor(h.clock.now() / 1000))
  t.same(event?.reason_admin, { en: 'The person signed out everywhere' })
  t.same(Object.keys(claims.events as object), [`${CAEP}session-revoked`], 'one event per SET (RFC 8417 2.2)')

  const before = s.rx.pushes.length
  await endSessionsOf(h.as, 'alice', 'admin', { grants: true })
  await deliver(s)
  t.equal(s.rx.pushes.length, before, 'no live session left: nothing ended, nothing told')
})

t.test('credential-change: a factor added or removed is told with its type', async (t) => {
  const s = await setup(t)
  const { h } = s
  await createStream(s, 'rp', [`${CAEP}credential-change`])
  await grant(h, 'alice', 'rp')
  await sessionOf(h, 'alice')
  await h.as.credentialChanges.emit({ sub: 'alice', credentialType: 'fido2-platform', changeType: 'create', friendlyName: 'Work laptop' })
  await endSessionsOf(h.as, 'alice', 'sign_out_everywhere')
  await deliver(s)
  t.equal(s.rx.pushes.length, 1, 'session-revoked was not requested: only the credential change')
  const claims = await s.verify(String(s.rx.pushes[0]?.body))
  t.same(claims.events, {
    [`${CAEP}credential-change`]: {
      event_timestamp: Math.floor(h.clock.now() / 1000),
      initiating_entity: 'user',
      credential_type: 'fido2-platform',
      change_type: 'create',
      friendly_name: 'Work laptop',
    },
  })
})

t.test('a receiver that is down: its queue is bounded, the oldest dropped and counted, the rest delivered when it is back', async (t) => {
  const s = await setup(t, { queueMax: 3 })
  const { h } = s
  await createStream(s, 'rp', [`${CAEP}credential-change`])
  await grant(h, 'alice', 'rp')
  await s.rx.close()
  for (let i = 1; i <= 5; i++) {
    await h.as.credentialChanges.emit({ sub: 'alice', credentialType: 'fido2-roaming', changeType: 'create', friendlyName: `key ${i}` })
    h.clock.advance(10)
  }
  await deliver(s)
  t.equal(h.metrics.ssfEvents.get({ outcome: 'queued' }), 5)
  t.equal(h.metrics.ssfEvents.get({ outcome: 'dropped' }), 2, 'two dropped: the queue holds 3')
  const dropped = h.logs.filter((l) => l.event === 'ssf_event_dropped')
  t.equal(dropped.length, 2, 'each drop logged')
  t.equal(dropped[0]?.reason, 'queue full')
  t.ok((h.metrics.ssfEvents.get({ outcome: 'failed' }) ?? 0) >= 1, 'the receiver being down is a counted failure, to be retried')
  t.equal(s.rx.pushes.length, 0)

  await s.rx.listen()
  h.clock.advance(61_000)
  await deliver(s)
  const names = await Promise.all(
    s.rx.pushes.map(async (p) => ((await s.verify(p.body)).events as Record<string, { friendly_name: string }>)[`${CAEP}credential-change`]?.friendly_name),
  )
  t.same(names, ['key 3', 'key 4', 'key 5'], 'the three newest, oldest first, once each')
  t.equal(h.metrics.ssfEvents.get({ outcome: 'delivered' }), 3)
  h.clock.advance(120_000)
  t.same(await h.store.deliveries.claim(receiverQueue('rp'), 1000, 10), [], "the receiver's queue is empty")
  t.notOk(
    h.logs.some((l) => JSON.stringify(l).includes(RP_SECRET)),
    'no secret in any log line',
  )
})

t.test('attacks on the stream endpoints', async (t) => {
  const s = await setup(t)
  const { h } = s
  const id = await createStream(s, 'rp')

  t.test('no token: 401 with a Bearer challenge', async (t) => {
    const r = await call(h, 'GET', '/ssf/stream', null)
    t.equal(r.status, 401)
    t.match(r.headers.get('www-authenticate'), /^Bearer/)
  })
  t.test('a forged token: 401 invalid_token', async (t) => {
    const r = await call(h, 'GET', '/ssf/stream', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJycCJ9.')
    t.equal(r.status, 401)
    t.match(r.headers.get('www-authenticate'), /error="invalid_token"/)
  })
  t.test('a client token without ssf:stream: 403 insufficient_scope naming the scope', async (t) => {
    const r = await call(h, 'POST', '/ssf/stream', await clientToken(h, 'plain', 'orders:read'), createBody(s.rx.url))
    t.equal(r.status, 403)
    t.match(r.headers.get('www-authenticate'), /error="insufficient_scope".*scope="ssf:stream"/)
    t.equal(await h.store.signals.getStream('plain'), null, 'no stream was created')
  })
  t.test("a person's token, even of scope ssf:stream: 403", async (t) => {
    const m = await mintCode(h, { sub: 'alice', clientId: 'rp', scope: 'openid ssf:stream' })
    const r0 = await reply(postForm(`${h.url}/token`, codeParams(m), { authorization: basic('rp', RP_SECRET) }))
    const r = await call(h, 'GET', '/ssf/stream', String(r0.json?.access_token))
    t.equal(r.status, 403)
    t.match(r.headers.get('www-authenticate'), /insufficient_scope/)
  })
  t.test("another client's stream id: 404 for every operation, the stream untouched", async (t) => {
    const other = await clientToken(h, 'rp2')
    t.equal((await call(h, 'GET', `/ssf/stream?stream_id=${id}`, other)).status, 404)
    t.equal((await call(h, 'PATCH', '/ssf/stream', other, { stream_id: id, description: 'mine now' })).status, 404)
    t.equal((await call(h, 'POST', '/ssf/status', other, { stream_id: id, status: 'disabled' })).status, 404)
    t.equal((await call(h, 'POST', '/ssf/verify', other, { stream_id: id })).status, 404)
    t.equal((await call(h, 'DELETE', `/ssf/stream?stream_id=${id}`, other)).status, 404)
    const mine = await call(h, 'GET', `/ssf/stream?stream_id=${id}`, await clientToken(h, 'rp'))
    t.equal(mine.json?.description, 'test receiver')
    t.same((await call(h, 'GET', `/ssf/status?stream_id=${id}`, await clientToken(h, 'rp'))).json, { stream_id: id, status: 'enabled' })
  })
  t.test('a huge stream config: 413 unread; too many events: 400', async (t) => {
    const tok = await clientToken(h, 'rp2')
    const huge = await call(h, 'POST', '/ssf/stream', tok, { ...createBody(s.rx.url), description: 'x'.repeat(100_000) })
    t.equal(huge.status, 413)
    const many = await call(
      h,
      'POST',
      '/ssf/stream',
      tok,
      createBody(
        s.rx.url,
        Array.from({ length: 33 }, (_, i) => `https://e.example/${i}`),
      ),
    )
    t.equal(many.status, 400)
    const longDescription = await call(h, 'POST', '/ssf/stream', tok, { ...createBody(s.rx.url), description: 'x'.repeat(600) })
    t.equal(longDescription.status, 400)
    t.equal(await h.store.signals.getStream('rp2'), null, 'nothing stored')
  })
  t.test('a stream endpoint at a private address, loopback or this host: refused unless allow_hosts names it', async (t) => {
    const tok = await clientToken(h, 'rp2')
    for (const url of [
      'https://10.1.2.3/events',
      'https://[::1]/events',
      'https://169.254.169.254/latest',
      'https://localhost/events',
      'https://127.0.0.2/events',
    ]) {
      const r = await call(h, 'POST', '/ssf/stream', tok, createBody(url))
      t.equal(r.status, 400, url)
      t.equal(r.json?.error, 'invalid_request')
    }
    t.equal(await h.store.signals.getStream('rp2'), null, 'nothing stored')
    const allowed = await call(h, 'POST', '/ssf/stream', tok, createBody(s.rx.url))
    t.equal(allowed.status, 201, '127.0.0.1 is in allow_hosts')
  })
  t.test('a delivery method other than push: 400', async (t) => {
    const r = await call(h, 'PUT', '/ssf/stream', await clientToken(h, 'rp'), {
      stream_id: id,
      delivery: { method: 'urn:ietf:rfc:8936', endpoint_url: s.rx.url },
    })
    t.equal(r.status, 400)
  })
})
