/**
 * The adversarial pass on the Shared Signals receiver (issue #43): what a
 * transmitter, or someone holding one transmitter's SETs, can make bearward
 * end beyond what it vouches for, and SETs read two ways (issuer spellings,
 * key location headers, a body without a Content-Length, a kid flood).
 * Each test asserts the answer and that nothing ended or was stored.
 */
import { request } from 'node:http'
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { startAs, type Harness } from '../helpers/as-back.js'
import { CAEP, RISC, TestTransmitter } from '../helpers/ssf-transmitter.js'

const CORP = 'http://127.0.0.1:9/corp'
const OTHER = 'http://127.0.0.1:9/other'
const AUDIENCE = 'https://bearward.example.com/ssf'
const CORP_PERSON = { format: 'iss_sub', iss: CORP, sub: 'user-123' }
const CORP_SUB = 'corp:user-123'
const OTHER_PERSON = { format: 'iss_sub', iss: OTHER, sub: 'victim' }
const OTHER_SUB = 'other:victim'

interface Setup {
  h: Harness
  tx: TestTransmitter
  endpoint: string
}

/** Two identity providers (corp, other); corp is also the one transmitter. */
async function setup(t: Test): Promise<Setup> {
  const clock = new ManualClock(Date.now())
  const tx = await TestTransmitter.start({ issuer: CORP, audience: AUDIENCE, clock })
  const h = await startAs({
    clock,
    asExtra: [
      '  identity_providers:',
      `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward }`,
      `    - { id: other, name: Other SSO, issuer: "${OTHER}", client_id: bearward }`,
    ].join('\n'),
    top: [
      'signals:',
      '  transmitters:',
      `    - issuer: "${CORP}"`,
      `      jwks_uri: "${tx.jwksUri}"`,
      `      audience: "${AUDIENCE}"`,
      '      delivery: push',
    ].join('\n'),
  })
  t.teardown(async () => {
    await h.close()
    await tx.close()
  })
  await h.store.upstream.putPerson(CORP_SUB, { provider: 'corp', upstreamSub: 'user-123', claims: {}, updatedAt: 0 }, 86_400)
  await h.store.upstream.putPerson(OTHER_SUB, { provider: 'other', upstreamSub: 'victim', claims: {}, updatedAt: 0 }, 86_400)
  return { h, tx, endpoint: `${h.url}/signals/events` }
}

async function sessionOf(h: Harness, sub: string, provider: string): Promise<string> {
  const id = randomBytes(16).toString('base64url')
  await h.store.sessions.put(id, { sub, username: sub, provider, authTime: Math.floor(h.clock.now() / 1000), acr: 'pwd', csrf: 'c' }, 3600)
  return id
}

async function live(h: Harness, id: string): Promise<boolean> {
  return (await h.store.sessions.get(id)) !== null
}

t.test("cross-provider: corp's transmitter cannot end or disable the people of another provider", async (t) => {
  const { h, tx, endpoint } = await setup(t)
  const victim = await sessionOf(h, OTHER_SUB, 'other')
  const own = await sessionOf(h, CORP_SUB, 'corp')
  for (const event of [`${CAEP}session-revoked`, `${RISC}credential-compromise`, `${RISC}account-disabled`]) {
    const r = await tx.push(endpoint, (await tx.set({ event, subId: OTHER_PERSON })).jwt)
    t.equal(r.status, 202, `${event}: acknowledged (an unknown subject is never an error loop)`)
  }
  t.equal(await live(h, victim), true, "the other provider's person keeps their session")
  t.equal(await h.store.signals.isDisabled(OTHER_SUB), false, "and is not locked out of sign-in through 'other'")
  t.equal(h.metrics.signalActions.get({ event: 'sessionRevoked', action: 'end' }), 0, 'nothing acted on')
  t.ok(
    h.logs.some((l) => l.audit === 'signal' && l.subject_format === 'iss_sub' && typeof l.unknown_since_last_line === 'number'),
    'logged as a subject bearward does not know',
  )
  // The same transmitter still ends its own people: the rule narrows, it does not break.
  t.equal((await tx.push(endpoint, (await tx.set({ subId: CORP_PERSON })).jwt)).status, 202)
  t.equal(await live(h, own), false, "corp's own person is ended")
  // Its own issuer spelled with a trailing slash in the subject is still its own provider.
  const own2 = await sessionOf(h, CORP_SUB, 'corp')
  t.equal((await tx.push(endpoint, (await tx.set({ subId: { ...CORP_PERSON, iss: `${CORP}/` } })).jwt)).status, 202)
  t.equal(await live(h, own2), false)
})

t.test('two readings of the issuer: a trailing slash or another case is not the configured transmitter', async (t) => {
  const { h, tx, endpoint } = await setup(t)
  const s = await sessionOf(h, CORP_SUB, 'corp')
  for (const iss of [`${CORP}/`, CORP.toUpperCase(), CORP.replace('/corp', '/CORP')]) {
    const r = await tx.push(endpoint, (await tx.set({ iss, subId: CORP_PERSON })).jwt)
    t.equal(r.status, 400, iss)
    t.equal(r.json?.err, 'invalid_issuer', iss)
  }
  t.equal(await live(h, s), true, 'nothing ended')
})

t.test('a SET carrying its own key (jwk, jku, x5u, x5c) is refused before any key is used or fetched', async (t) => {
  const { h, tx, endpoint } = await setup(t)
  const s = await sessionOf(h, CORP_SUB, 'corp')
  const attacker = await generateKeyPair('ES256', { extractable: true })
  const jwk = { ...(await exportJWK(attacker.publicKey)), kid: 'tx-1' }
  // The transmitter's keys loaded once (a SET about nobody), so any later fetch is theirs.
  t.equal((await tx.push(endpoint, (await tx.set({ subId: { format: 'opaque', id: 'nobody' } })).jwt)).status, 202)
  const fetchesBefore = tx.jwksFetches
  for (const extra of [{ jwk }, { jku: 'http://127.0.0.1:9/attacker-jwks' }, { x5u: 'http://127.0.0.1:9/cert' }, { x5c: ['AAAA'] }]) {
    const jwt = await new SignJWT({
      iss: CORP,
      aud: AUDIENCE,
      jti: randomBytes(8).toString('hex'),
      iat: Math.floor(h.clock.now() / 1000),
      sub_id: CORP_PERSON,
      events: { [`${CAEP}session-revoked`]: {} },
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'tx-1', typ: 'secevent+jwt', ...extra })
      .sign(attacker.privateKey)
    const r = await tx.push(endpoint, jwt)
    t.equal(r.status, 400, Object.keys(extra).join())
    t.equal(r.json?.err, 'invalid_key')
  }
  t.equal(tx.jwksFetches, fetchesBefore, 'no key fetched for them')
  t.equal(await live(h, s), true, 'nothing ended')
})

t.test('a flood of SETs naming unknown kids does not become a JWKS fetch storm', async (t) => {
  const { h, tx, endpoint } = await setup(t)
  // Warm the cache with one good SET.
  t.equal((await tx.push(endpoint, (await tx.set({ subId: { format: 'opaque', id: 'nobody' } })).jwt)).status, 202)
  const before = tx.jwksFetches
  const answers = await Promise.all(
    Array.from({ length: 50 }, async (_, i) => (await tx.push(endpoint, (await tx.set({ kid: `flood-${i}`, subId: CORP_PERSON })).jwt)).status),
  )
  t.ok(
    answers.every((s) => s === 400 || s === 503),
    `every SET with an unknown kid refused (${[...new Set(answers)].join(', ')})`,
  )
  t.ok(tx.jwksFetches - before <= 2, `JWKS refetched at most twice for 50 unknown kids (${tx.jwksFetches - before})`)
  t.equal(h.metrics.signalActions.get({ event: 'sessionRevoked', action: 'end' }), 0, 'nothing acted on')
})

t.test('a 10 MB body without Content-Length (chunked) is cut off at 64 KiB, connection closed, nothing ended', async (t) => {
  const { h, tx, endpoint } = await setup(t)
  const s = await sessionOf(h, CORP_SUB, 'corp')
  const good = (await tx.set({ subId: CORP_PERSON })).jwt
  const url = new URL(endpoint)
  const chunk = Buffer.alloc(64 * 1024, 0x41)
  const result = await new Promise<{ status: number; sent: number; closed: boolean }>((resolve, reject) => {
    let sent = 0
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/secevent+jwt', 'transfer-encoding': 'chunked' },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, sent, closed: res.headers.connection === 'close' }))
      },
    )
    req.on('error', reject)
    // The good SET first, then 10 MB of trailing bytes, written as the socket drains.
    req.write(good)
    const pump = (): void => {
      while (sent < 10 * 1024 * 1024) {
        sent += chunk.length
        if (!req.write(chunk)) {
          req.once('drain', pump)
          return
        }
      }
      req.end()
    }
    pump()
  })
  t.equal(result.status, 413)
  t.equal(result.closed, true, 'the connection is closed')
  t.ok(result.sent < 10 * 1024 * 1024, `the answer came before the 10 MB were sent (${result.sent} bytes written)`)
  t.equal(await live(h, s), true, 'nothing ended')
})
