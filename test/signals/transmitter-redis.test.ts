/**
 * The Shared Signals transmitter on two instances sharing Redis: a stream
 * created at one is the stream at the other, and an event queued at one is
 * pushed to the receiver once, whichever instance's delivery loop claims it.
 */
import { createServer } from 'node:http'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import t from 'tap'
import { endSessionsOf } from '../../src/as/sessions/end-sessions.js'
import { ManualClock } from '../../src/clock.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { RedisStore } from '../../src/store/redis.js'
import { backYaml, codeParams, harnessOf, mintCode, SECRETS, send } from '../helpers/as-back.js'
import { basic } from '../helpers/client-auth.js'
import { eventually, listen, postForm, reply } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { type ServedRuntime, serveRuntime } from '../helpers/serve-runtime.js'

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/'
const SECRET = SECRETS.web as string

t.test('two instances on one Redis: a stream made at B, an event at A, pushed once', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const pushes: string[] = []
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      pushes.push(Buffer.concat(chunks).toString('utf8'))
      res.writeHead(202).end()
    })
  })
  const rx = await listen(receiver)
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())))

  const hash = await hashSecret(SECRET)
  const yaml = await backYaml({
    clientsExtra: `    - { client_id: rp, type: confidential, secret_hash: "${hash}", redirect_uris: [https://rp.example.com/cb], grant_types: [authorization_code, client_credentials], scopes: [openid, orders:read, ssf:stream] }`,
    top: 'signals:\n  transmitter: { enabled: true, allow_hosts: [127.0.0.1] }',
  })
  const serve = (peer?: ServedRuntime) =>
    serveRuntime(yaml, {
      clock: new ManualClock(Date.now()),
      store: (c) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock: c }),
      ...(peer === undefined ? {} : { env: { PUBLIC_URL: peer.publicUrl }, state: peer.state }),
    })
  const aServed = await serve()
  const a = harnessOf(aServed)
  t.teardown(() => a.close())
  const bServed = await serve(aServed)
  const bUrl = bServed.url
  t.teardown(() => bServed.close())

  // The receiver talks to B: its token, its stream.
  const tok = await reply(postForm(`${bUrl}/token`, { grant_type: 'client_credentials', scope: 'ssf:stream' }, { authorization: basic('rp', SECRET) }))
  const created = await send(`${bUrl}/ssf/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${String(tok.json?.access_token)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: `${rx.url}/events` }, events_requested: [`${CAEP}session-revoked`] }),
  })
  t.equal(created.status, 201)

  // Alice grants rp at A, and signs out everywhere at A.
  const m = await mintCode(a, { sub: 'alice', clientId: 'rp', scope: 'openid orders:read' })
  t.equal((await reply(postForm(`${a.url}/token`, codeParams(m), { authorization: basic('rp', SECRET) }))).status, 200)
  await a.store.sessions.put('redis-session', { sub: 'alice', username: 'alice', authTime: 0, csrf: 'c' }, 3600)
  await endSessionsOf(aServed.as, 'alice', 'sign_out_everywhere')
  // Both instances look for due events at once, as their timers do.
  await Promise.all([aServed.runtime.signals?.transmitter?.delivery.runOnce(), bServed.runtime.signals?.transmitter?.delivery.runOnce()])
  t.equal(await eventually(async () => pushes.length >= 1, 2000), true, 'pushed')
  await Promise.all([aServed.runtime.signals?.transmitter?.delivery.runOnce(), bServed.runtime.signals?.transmitter?.delivery.runOnce()])
  t.equal(pushes.length, 1, 'once, not once per instance')
  const { payload } = await jwtVerify(String(pushes[0]), createRemoteJWKSet(new URL(`${bUrl}/jwks.json`)), {
    issuer: a.issuer,
    audience: 'rp',
    typ: 'secevent+jwt',
  })
  t.same(payload.sub_id, { format: 'iss_sub', iss: a.issuer, sub: 'alice' })
  t.equal((a.metrics.ssfEvents.get({ outcome: 'delivered' }) ?? 0) + (bServed.metrics.ssfEvents.get({ outcome: 'delivered' }) ?? 0), 1)
})
