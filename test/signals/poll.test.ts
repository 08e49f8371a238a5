/**
 * Shared Signals poll delivery (RFC 8936): bearward polls the test
 * transmitter, acts on what it hands out, acknowledges it in the next poll
 * (`ack`) or reports it refused (`setErrs`); one instance at a time holds
 * the poll lease; a transmitter that is down is retried with backoff and
 * logged once per outage.
 */
import t from 'tap'
import { generateKeyPair } from 'jose'
import { ManualClock } from '../../src/clock.js'
import type { SignalTransmitterConfig } from '../../src/config/validated-config.js'
import { JwksRegistry } from '../../src/gateway/jwks-client.js'
import { createLogger } from '../../src/log.js'
import { Metrics } from '../../src/metrics.js'
import { SignalsReceiverFace } from '../../src/signals/build.js'
import { MemoryStore } from '../../src/store/memory.js'
import { codeParams, introspect, mintCode, settle, startAs, token } from '../helpers/as-back.js'
import { eventually } from '../helpers/http.js'
import { CAEP, RISC, TestTransmitter } from '../helpers/ssf-transmitter.js'

const CORP = 'http://127.0.0.1:9/corp'
const AUDIENCE = 'https://bearward.example.com/ssf'
const SUB = 'corp:user-123'
const PERSON = { format: 'iss_sub', iss: CORP, sub: 'user-123' }

t.test('poll: SETs handed out are acted on, acknowledged, refused ones reported in setErrs', async (t) => {
  const clock = new ManualClock(Date.now())
  const tx = await TestTransmitter.start({ issuer: CORP, audience: AUDIENCE, clock })
  const h = await startAs({
    clock,
    asExtra: ['  identity_providers:', `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward }`].join('\n'),
    top: [
      'signals:',
      '  transmitters:',
      `    - { issuer: "${CORP}", jwks_uri: "${tx.jwksUri}", audience: "${AUDIENCE}", delivery: poll,`,
      `        poll: { url: "${tx.pollUrl}", interval: 1s, max_events: 10, auth: "Bearer poll-secret-0123" } }`,
    ].join('\n'),
  })
  t.teardown(async () => {
    await h.close()
    await tx.close()
  })
  await h.store.upstream.putPerson(SUB, { provider: 'corp', upstreamSub: 'user-123', claims: {}, updatedAt: 0 }, 86_400)
  const m = await mintCode(h, { sub: SUB })
  const r = await token(h, 'web', codeParams(m))
  const access = String(r.json?.access_token)
  const session = 'poll-session-id'
  await h.store.sessions.put(session, { sub: SUB, username: SUB, authTime: 0, csrf: 'c' }, 3600)

  const revoked = await tx.set({ subId: PERSON })
  const disabled = await tx.set({ event: `${RISC}account-disabled`, body: { reason: 'bulk-account' }, subId: PERSON })
  const { privateKey } = await generateKeyPair('ES256')
  const forged = await tx.set({ event: `${CAEP}credential-change`, subId: PERSON, key: privateKey })
  for (const s of [revoked, disabled, forged]) tx.queue.set(s.jti, s.jwt)

  const acked = await eventually(() => tx.polls.some((p) => p.ack.includes(revoked.jti) && p.ack.includes(disabled.jti)), 10_000)
  t.equal(acked, true, 'the handled SETs are acknowledged in a later poll')
  const withErrs = tx.polls.find((p) => p.setErrs[forged.jti] !== undefined)
  t.same(withErrs?.setErrs[forged.jti], { err: 'invalid_key', description: 'The SET signature does not verify' }, 'the forged one is reported')
  t.equal(tx.queue.size, 0, 'nothing is left for the transmitter to hand out again')
  t.equal(tx.polls[0]?.authorization, 'Bearer poll-secret-0123', 'the poll authenticates as configured')
  t.equal(tx.polls[0]?.returnImmediately, true)
  t.equal(tx.polls[0]?.maxEvents, 10)
  await settle()
  t.equal(await h.store.sessions.get(session), null, "the person's session ended")
  t.equal((await introspect(h, access)).active, false, 'and the grant')
  t.equal(await h.store.signals.isDisabled(SUB), true, 'the account is disabled')
  t.notMatch(JSON.stringify(h.logs), 'poll-secret-0123', 'the poll credential is never logged')
})

/** A receiver face on its own (no HTTP server), over `store`, polling `tx`; the ender only records. */
function receiverFace(tx: TestTransmitter, store: MemoryStore, clock: ManualClock, lines: Record<string, unknown>[]) {
  const log = createLogger('info', {
    write(chunk: string) {
      for (const l of chunk.split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>)
    },
  })
  const metrics = new Metrics()
  const registry = new JwksRegistry(clock, log)
  const transmitter: SignalTransmitterConfig = {
    issuer: CORP,
    jwksUri: tx.jwksUri,
    audience: AUDIENCE,
    delivery: 'poll',
    algorithms: ['ES256'],
    poll: { url: tx.pollUrl, intervalSec: 30, maxEvents: 5, auth: null, timeoutMs: 2000 },
    onSignal: 'grants',
    subjects: { email: null },
    position: 'signals.transmitters[0]',
  }
  const face = new SignalsReceiverFace(
    { transmitters: [transmitter], transmitter: null },
    {
      clock,
      log,
      metrics,
      store,
      jwks: registry,
      clockSkewSec: 60,
      providers: [],
      users: [],
      accessTokenClaims: [],
      ender: { endSessions: async () => 0, endProviderSession: async () => 0, endGrants: async () => 0 },
    },
  )
  return { face, metrics, close: async () => Promise.all([face.close(), registry.close()]) }
}

t.test('poll: one instance at a time holds the lease; another takes over once it expires', async (t) => {
  const clock = new ManualClock(Date.now())
  const tx = await TestTransmitter.start({ issuer: CORP, audience: AUDIENCE, clock })
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  const a = receiverFace(tx, store, clock, [])
  const b = receiverFace(tx, store, clock, [])
  t.teardown(async () => {
    await Promise.all([a.close(), b.close()])
    await store.close()
    await tx.close()
  })
  const pa = a.face.pollers[0]
  const pb = b.face.pollers[0]
  if (pa === undefined || pb === undefined) throw new Error('no poller')
  t.equal((await pa.pollOnce()).polled, true, 'the first instance polls')
  t.equal((await pb.pollOnce()).polled, false, 'the second does not while the lease runs')
  t.equal(tx.polls.length, 1, 'the transmitter was asked once')
  clock.advance(30_000)
  t.equal((await pa.pollOnce()).polled, true, 'the holder renews it at its next poll')
  t.equal((await pb.pollOnce()).polled, false)
  // The holder stopped (a crashed instance renews nothing): its lease runs out after two intervals and a poll's time limit.
  clock.advance(62_000)
  t.equal((await pb.pollOnce()).polled, true, 'the other instance takes over')
  t.equal(tx.polls.length, 3)
})

t.test('poll: a transmitter that is down is logged once per outage, counted, and never blocks', async (t) => {
  const clock = new ManualClock(Date.now())
  const tx = await TestTransmitter.start({ issuer: CORP, audience: AUDIENCE, clock })
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  const lines: Record<string, unknown>[] = []
  const a = receiverFace(tx, store, clock, lines)
  t.teardown(async () => {
    await a.close()
    await store.close()
    await tx.close()
  })
  const p = a.face.pollers[0]
  if (p === undefined) throw new Error('no poller')
  tx.pollDown = true
  for (let i = 0; i < 5; i++) {
    const started = Date.now()
    const round = await p.pollOnce()
    t.equal(round.received, 0)
    t.ok(Date.now() - started < 2500, 'a failed poll returns within its time limit')
  }
  t.equal(lines.filter((l) => l.msg === 'Shared Signals transmitter cannot be polled; backing off').length, 1, 'one warning for the outage')
  t.equal(a.metrics.signalPollFailures.get({ transmitter: CORP }), 5, 'every failure counted')
  tx.pollDown = false
  t.equal((await p.pollOnce()).polled, true)
  t.equal(lines.filter((l) => l.msg === 'Shared Signals transmitter answers polls again').length, 1, 'and one line when it is back')
  tx.pollDown = true
  await p.pollOnce()
  t.equal(lines.filter((l) => l.msg === 'Shared Signals transmitter cannot be polled; backing off').length, 2, 'a new outage is logged again')
})

t.test('poll: a refused SET handed out under the key __proto__ is reported like any other', async (t) => {
  const clock = new ManualClock(Date.now())
  const tx = await TestTransmitter.start({ issuer: CORP, audience: AUDIENCE, clock })
  const h = await startAs({
    clock,
    asExtra: ['  identity_providers:', `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward }`].join('\n'),
    top: [
      'signals:',
      '  transmitters:',
      `    - { issuer: "${CORP}", jwks_uri: "${tx.jwksUri}", audience: "${AUDIENCE}", delivery: poll,`,
      `        poll: { url: "${tx.pollUrl}", interval: 1s, max_events: 10 } }`,
    ].join('\n'),
  })
  t.teardown(async () => {
    await h.close()
    await tx.close()
  })
  const { privateKey } = await generateKeyPair('ES256')
  const forged = await tx.set({ event: `${CAEP}credential-change`, subId: PERSON, key: privateKey })
  tx.queue.set('__proto__', forged.jwt)
  const reported = await eventually(() => tx.polls.some((p) => Object.hasOwn(p.setErrs, '__proto__')), 10_000)
  t.equal(reported, true, 'the next poll carries setErrs["__proto__"] (an own entry, not the prototype)')
  const withErrs = tx.polls.find((p) => Object.hasOwn(p.setErrs, '__proto__'))
  t.same(Object.getOwnPropertyDescriptor(withErrs?.setErrs, '__proto__')?.value, {
    err: 'invalid_key',
    description: 'The SET signature does not verify',
  })
  t.equal(tx.queue.size, 0, 'so the transmitter stops handing it out')
})
