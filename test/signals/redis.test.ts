/**
 * The receiver on two instances sharing one real Redis (its own
 * redis-server), as behind a load balancer: a SET pushed to one instance and
 * replayed to the other is acted on once; what it ends (the grant, the
 * session) ends for both, and the grant's access token is refused at the
 * other instance within a second.
 */
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { RedisStore } from '../../src/store/redis.js'
import { backYaml, codeParams, harnessOf, introspect, mintCode, token } from '../helpers/as-back.js'
import { eventually } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { type ServedRuntime, serveRuntime } from '../helpers/serve-runtime.js'
import { RISC, TestTransmitter } from '../helpers/ssf-transmitter.js'

const CORP = 'http://127.0.0.1:9/corp'
const AUDIENCE = 'https://bearward.example.com/ssf'
const SUB = 'corp:user-123'
const PERSON = { format: 'iss_sub', iss: CORP, sub: 'user-123' }

t.test('two instances on one Redis: a SET replayed to the other instance is acted on once', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const clock = new ManualClock(Date.now())
  const tx = await TestTransmitter.start({ issuer: CORP, audience: AUDIENCE, clock })
  t.teardown(() => tx.close())
  const yaml = await backYaml({
    asExtra: ['  identity_providers:', `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward }`].join('\n'),
    top: `signals:\n  transmitters:\n    - { issuer: "${CORP}", jwks_uri: "${tx.jwksUri}", audience: "${AUDIENCE}", delivery: push }`,
  })
  // Redis judges TTLs by its own clock: both instances' clocks follow real time.
  const serve = (peer?: ServedRuntime) =>
    serveRuntime(yaml, {
      clock: new ManualClock(Date.now()),
      store: (c) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock: c }),
      // One issuer and one signing key, as instances behind a load balancer.
      ...(peer === undefined ? {} : { env: { PUBLIC_URL: peer.publicUrl }, state: peer.state }),
    })
  const aServed = await serve()
  const a = harnessOf(aServed)
  t.teardown(() => a.close())
  const bServed = await serve(aServed)
  // B answers at its own address (its public_url is A's, as behind a load balancer).
  const b = { ...harnessOf(bServed), url: bServed.url }
  t.teardown(() => b.close())

  await a.store.upstream.putPerson(SUB, { provider: 'corp', upstreamSub: 'user-123', claims: {}, updatedAt: 0 }, 86_400)
  const m = await mintCode(a, { sub: SUB })
  const r = await token(a, 'web', codeParams(m))
  const access = String(r.json?.access_token)
  t.equal((await introspect(b, access)).active, true, 'the token is good at both instances')
  await a.store.sessions.put('redis-session', { sub: SUB, username: SUB, authTime: 0, csrf: 'c' }, 3600)

  const set = await tx.set({ event: `${RISC}credential-compromise`, body: { credential_type: 'password' }, subId: PERSON })
  const started = Date.now()
  t.equal((await tx.push(`${a.url}/signals/events`, set.jwt)).status, 202, 'pushed to A')
  t.equal(await eventually(async () => (await introspect(b, access)).active === false, 1000), true, `refused at B within 1 s (${Date.now() - started} ms)`)
  t.equal(await b.store.sessions.get('redis-session'), null, 'the session ended for both')

  const replay = await tx.push(`${b.url}/signals/events`, set.jwt)
  t.equal(replay.status, 202, 'the replay at B is acknowledged')
  t.equal(b.metrics.signalsReceived.get({ outcome: 'replayed' }), 1, 'and not acted on: its jti was seen at A')
  t.equal(a.metrics.signalActions.get({ event: 'credentialCompromise', action: 'end' }), 1)
  t.equal(b.metrics.signalActions.get({ event: 'credentialCompromise', action: 'end' }), 0)
})
