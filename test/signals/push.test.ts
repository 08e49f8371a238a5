/**
 * Shared Signals push delivery (RFC 8935) at POST /signals/events, with a
 * test transmitter signing SETs with jose: every CAEP / RISC event type the
 * issue lists and what it ends (grants: the access token is inactive at
 * /introspect and the refresh token refused at /token; disabled accounts:
 * the store's marker), and the attacks: forged, replayed, wrong audience,
 * wrong issuer, `alg: none`, HS256, a 10 MB body, a flood of SETs about
 * nobody, a transmitter whose JWKS is down.
 */
import t, { type Test } from 'tap'
import { SignJWT } from 'jose'
import { generateKeyPair } from 'jose'
import { randomBytes } from 'node:crypto'
import { ManualClock } from '../../src/clock.js'
import { codeParams, introspect, mintCode, settle, startAs, token, type Harness } from '../helpers/as-back.js'
import { CAEP, RISC, TestTransmitter, unsignedSet } from '../helpers/ssf-transmitter.js'

const CORP = 'http://127.0.0.1:9/corp'
const AUDIENCE = 'https://bearward.example.com/ssf'
const PERSON = { format: 'iss_sub', iss: CORP, sub: 'user-123' }
const SUB = 'corp:user-123'

interface Setup {
  h: Harness
  tx: TestTransmitter
  endpoint: string
  clock: ManualClock
}

async function setup(t: Test, o: { onSignal?: 'sessions' | 'grants'; email?: string; jwksDown?: boolean } = {}): Promise<Setup> {
  const clock = new ManualClock(Date.now())
  const tx = await TestTransmitter.start({ issuer: CORP, audience: AUDIENCE, clock })
  tx.jwksDown = o.jwksDown ?? false
  const h = await startAs({
    clock,
    asExtra: ['  identity_providers:', `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward }`].join('\n'),
    top: [
      'signals:',
      '  transmitters:',
      `    - issuer: "${CORP}"`,
      `      jwks_uri: "${tx.jwksUri}"`,
      `      audience: "${AUDIENCE}"`,
      '      delivery: push',
      ...(o.onSignal === undefined ? [] : [`      on_signal: ${o.onSignal}`]),
      ...(o.email === undefined ? [] : [`      subjects: { email: "${o.email}" }`]),
    ].join('\n'),
  })
  t.teardown(async () => {
    await h.close()
    await tx.close()
  })
  // The person signed in through corp once (what keeps their record), as did someone else.
  for (const sub of [SUB, 'corp:someone-else']) {
    await h.store.upstream.putPerson(sub, { provider: 'corp', upstreamSub: sub.slice(5), claims: {}, updatedAt: 0 }, 86_400)
  }
  return { h, tx, endpoint: `${h.url}/signals/events`, clock }
}

/** A grant of `sub` with client `web` (scope by default openid profile email orders:read): its tokens. */
async function grantOf(h: Harness, sub: string, scope?: string): Promise<{ access: string; refresh: string }> {
  // A withdrawal (a grant ended by an earlier signal) refuses authorizations given up to its moment.
  h.clock.advance(1000)
  const m = await mintCode(h, { sub, ...(scope === undefined ? {} : { scope }) })
  const r = await token(h, 'web', codeParams(m))
  if (r.status !== 200 || r.json === null) throw new Error(`code exchange failed: ${r.status} ${r.text}`)
  return { access: String(r.json.access_token), refresh: String(r.json.refresh_token) }
}

/** A session of `sub` signed in at `acr`, as the store keeps it (under the hash of its cookie). */
async function sessionOf(h: Harness, sub: string, acr = 'pwd'): Promise<string> {
  const id = randomBytes(16).toString('base64url')
  await h.store.sessions.put(id, { sub, username: sub, provider: 'corp', authTime: Math.floor(h.clock.now() / 1000), acr, csrf: 'c' }, 3600)
  return id
}

async function sessionLive(h: Harness, id: string): Promise<boolean> {
  return (await h.store.sessions.get(id)) !== null
}

async function grantLive(h: Harness, g: { access: string; refresh: string }): Promise<boolean> {
  await settle()
  return (await introspect(h, g.access)).active === true
}

async function refreshRefused(h: Harness, g: { refresh: string }): Promise<boolean> {
  const r = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: g.refresh })
  return r.status === 400 && r.json?.error === 'invalid_grant'
}

t.test('push: every event type does what the issue lists', async (t) => {
  const { h, tx, endpoint } = await setup(t)

  t.test('CAEP session-revoked with on_signal grants (the default): 202, the grant ends, audited and counted', async (t) => {
    const g = await grantOf(h, SUB)
    const s1 = await sessionOf(h, SUB)
    const s2 = await sessionOf(h, SUB, 'mfa')
    const others = await sessionOf(h, 'corp:someone-else')
    t.equal(await grantLive(h, g), true, 'live before')
    const r = await tx.push(endpoint, (await tx.set({ subId: PERSON })).jwt)
    t.equal(r.status, 202)
    t.equal(r.text, '', '202 has an empty body')
    t.equal(await sessionLive(h, s1), false, "the person's sessions ended")
    t.equal(await sessionLive(h, s2), false)
    t.equal(await sessionLive(h, others), true, "another person's session is untouched")
    t.equal(await grantLive(h, g), false, 'the access token is inactive')
    t.equal(await refreshRefused(h, g), true, 'the refresh token is refused')
    const audit = h.logs.find((l) => l.audit === 'signal' && l.event === 'sessionRevoked')
    t.same(audit?.subs, [SUB])
    t.equal(audit?.sessions_ended, 2)
    t.equal(audit?.grants_ended, 1)
    t.equal(h.metrics.signalActions.get({ event: 'sessionRevoked', action: 'end' }), 1)
  })

  for (const [name, uri] of [
    ['RISC sessions-revoked', `${RISC}sessions-revoked`],
    ['CAEP credential-change', `${CAEP}credential-change`],
    ['RISC credential-compromise', `${RISC}credential-compromise`],
  ] as const) {
    t.test(`${name} ends the person's grants`, async (t) => {
      const g = await grantOf(h, SUB)
      const other = await grantOf(h, 'corp:someone-else')
      const body = uri.endsWith('credential-change') ? { credential_type: 'password', change_type: 'update' } : { credential_type: 'password' }
      t.equal((await tx.push(endpoint, (await tx.set({ event: uri, body, subId: PERSON })).jwt)).status, 202)
      t.equal(await grantLive(h, g), false, "the person's grant ended")
      t.equal(await grantLive(h, other), true, "another person's grant is untouched")
    })
  }

  t.test('RISC account-disabled refuses sign-ins until account-enabled; account-purged too', async (t) => {
    const g = await grantOf(h, SUB)
    const disabled = await tx.set({ event: `${RISC}account-disabled`, body: { reason: 'hijacking' }, subId: PERSON })
    t.equal((await tx.push(endpoint, disabled.jwt)).status, 202)
    t.equal(await grantLive(h, g), false, 'grants ended')
    t.equal(await h.store.signals.isDisabled(SUB), true, 'new sign-ins through corp are refused')
    t.equal((await tx.push(endpoint, (await tx.set({ event: `${RISC}account-enabled`, subId: PERSON })).jwt)).status, 202)
    t.equal(await h.store.signals.isDisabled(SUB), false, 'enabled again')
    t.equal((await tx.push(endpoint, (await tx.set({ event: `${RISC}account-purged`, subId: PERSON })).jwt)).status, 202)
    t.equal(await h.store.signals.isDisabled(SUB), true, 'purged: refused too')
    await h.store.signals.enableAccount(SUB)
  })

  t.test('CAEP assurance-level-change ends the sessions above the new level, and only those', async (t) => {
    const pwd = await sessionOf(h, SUB, 'pwd')
    const mfa = await sessionOf(h, SUB, 'mfa')
    const phr = await sessionOf(h, SUB, 'phr')
    const g = await grantOf(h, SUB)
    const body = { namespace: 'NIST-AAL', current_level: 'nist-aal2', previous_level: 'nist-aal3', change_direction: 'decrease' }
    t.equal((await tx.push(endpoint, (await tx.set({ event: `${CAEP}assurance-level-change`, body, subId: PERSON })).jwt)).status, 202)
    t.equal(await sessionLive(h, phr), false, 'a phishing-resistant sign-in is above AAL2: ended')
    t.equal(await sessionLive(h, mfa), true, 'AAL2 itself stays')
    t.equal(await sessionLive(h, pwd), true, 'below stays')
    t.equal(await grantLive(h, g), true, 'grants are not sessions: kept')
  })

  t.test('a complex subject with a session ends only that provider session', async (t) => {
    const id = randomBytes(16).toString('base64url')
    await h.store.sessions.put(id, { sub: SUB, username: SUB, provider: 'corp', providerSid: 'idp-sid-1', authTime: 0, csrf: 'c' }, 3600)
    const kept = await sessionOf(h, SUB)
    const subId = { format: 'complex', user: PERSON, session: { format: 'opaque', id: 'idp-sid-1' } }
    t.equal((await tx.push(endpoint, (await tx.set({ subId })).jwt)).status, 202)
    t.equal(await sessionLive(h, id), false, 'the named provider session ended')
    t.equal(await sessionLive(h, kept), true, 'another session of the person stays')
  })

  t.test('CAEP token-claims-change ends only the grants whose tokens carry a changed claim', async (t) => {
    const withEmail = await grantOf(h, SUB, 'openid email orders:read')
    const withoutEmail = await grantOf(h, SUB, 'openid orders:read')
    const r = await tx.push(
      endpoint,
      (await tx.set({ event: `${CAEP}token-claims-change`, body: { claims: { email: 'new@corp.example' } }, subId: PERSON })).jwt,
    )
    t.equal(r.status, 202)
    t.equal(await grantLive(h, withEmail), false, 'the grant that releases email ended')
    t.equal(await grantLive(h, withoutEmail), true, 'the grant without the email scope carries no email: kept')
  })

  t.test('the subject in the event body (pre-SSF 1.0 transmitters) is read too; opaque ids are the provider sub', async (t) => {
    const g = await grantOf(h, SUB)
    const r = await tx.push(endpoint, (await tx.set({ event: `${CAEP}credential-change`, body: { subject: { format: 'opaque', id: 'user-123' } } })).jwt)
    t.equal(r.status, 202)
    t.equal(await grantLive(h, g), false)
  })

  t.test("a pre-RFC 9493 subject (`subject_type: iss-sub`, as Google's RISC sends) is read as iss_sub", async (t) => {
    const g = await grantOf(h, SUB)
    const subject = { subject_type: 'iss-sub', iss: CORP, sub: 'user-123' }
    t.equal(
      (await tx.push(endpoint, (await tx.set({ event: `${RISC}credential-compromise`, body: { subject, credential_type: 'password' } })).jwt)).status,
      202,
    )
    t.equal(await grantLive(h, g), false)
  })

  t.test('the SSF verification event is acknowledged and ends nothing', async (t) => {
    const g = await grantOf(h, SUB)
    const r = await tx.push(endpoint, (await tx.set({ event: 'https://schemas.openid.net/secevent/ssf/event-type/verification', body: { state: 'abc' } })).jwt)
    t.equal(r.status, 202)
    t.equal(await grantLive(h, g), true)
  })
})

t.test('push: on_signal sessions leaves grants to events that always end them', async (t) => {
  const { h, tx, endpoint } = await setup(t, { onSignal: 'sessions' })
  const g = await grantOf(h, SUB)
  const s = await sessionOf(h, SUB)
  t.equal((await tx.push(endpoint, (await tx.set({ subId: PERSON })).jwt)).status, 202)
  t.equal(await sessionLive(h, s), false, 'session-revoked: the session ended')
  t.equal(await grantLive(h, g), true, 'session-revoked: the grant is kept')
  t.equal(
    (
      await tx.push(
        endpoint,
        (
          await tx.set({ event: `${CAEP}credential-change`, body: { credential_type: 'password', change_type: 'update' }, subId: PERSON })
        ).jwt,
      )
    ).status,
    202,
  )
  t.equal(await grantLive(h, g), false, 'credential-change: ended whatever on_signal says')
})

t.test('push: an email subject through the `users` rule finds a configured user', async (t) => {
  const { h, tx, endpoint } = await setup(t, { email: 'users' })
  const g = await grantOf(h, 'alice')
  const r = await tx.push(endpoint, (await tx.set({ subId: { format: 'email', email: 'Alice@Example.com' } })).jwt)
  t.equal(r.status, 202)
  t.equal(await grantLive(h, g), false, "alice's grant ended")
})

t.test('push: attacks', async (t) => {
  const { h, tx, endpoint, clock } = await setup(t)
  const g = await grantOf(h, SUB)

  t.test('a forged SET (another key, same kid): 400 invalid_key, nothing ends', async (t) => {
    const { privateKey } = await generateKeyPair('ES256')
    const r = await tx.push(endpoint, (await tx.set({ subId: PERSON, key: privateKey })).jwt)
    t.equal(r.status, 400)
    t.same(r.json, { err: 'invalid_key', description: 'The SET signature does not verify' })
    t.equal(await grantLive(h, g), true)
  })

  t.test('alg none and HS256: 400 invalid_key', async (t) => {
    const now = Math.floor(clock.now() / 1000)
    const claims = { iss: CORP, aud: AUDIENCE, jti: 'j-none', iat: now, sub_id: PERSON, events: { [`${CAEP}session-revoked`]: {} } }
    const none = await tx.push(endpoint, unsignedSet(claims))
    t.equal(none.status, 400)
    t.equal(none.json?.err, 'invalid_key')
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'secevent+jwt' }).sign(new TextEncoder().encode('x'.repeat(32)))
    const r = await tx.push(endpoint, hs)
    t.equal(r.status, 400)
    t.equal(r.json?.err, 'invalid_key')
    t.equal(await grantLive(h, g), true)
  })

  t.test('wrong audience: 400 invalid_audience; wrong issuer: 400 invalid_issuer', async (t) => {
    const aud = await tx.push(endpoint, (await tx.set({ subId: PERSON, aud: 'https://someone-else.example.com' })).jwt)
    t.equal(aud.status, 400)
    t.equal(aud.json?.err, 'invalid_audience')
    const iss = await tx.push(endpoint, (await tx.set({ subId: PERSON, iss: 'https://evil.example.com' })).jwt)
    t.equal(iss.status, 400)
    t.equal(iss.json?.err, 'invalid_issuer')
    t.equal(await grantLive(h, g), true)
  })

  t.test('missing iat, jti or events, an iat in the future, a typ of another token: 400 invalid_request', async (t) => {
    for (const omit of ['iat', 'jti', 'events'] as const) {
      const r = await tx.push(endpoint, (await tx.set({ subId: PERSON, omit: [omit] })).jwt)
      t.equal(r.json?.err, 'invalid_request', `no ${omit}`)
    }
    t.equal((await tx.push(endpoint, (await tx.set({ subId: PERSON, iatOffset: 3600 })).jwt)).json?.err, 'invalid_request', 'iat an hour ahead')
    t.equal((await tx.push(endpoint, (await tx.set({ subId: PERSON, typ: 'at+jwt' })).jwt)).json?.err, 'invalid_request', 'typ at+jwt')
    t.equal((await tx.push(endpoint, 'not-a-jwt')).json?.err, 'invalid_request', 'not a JWS')
    const form = await tx.push(endpoint, (await tx.set({ subId: PERSON })).jwt, 'application/json')
    t.equal(form.status, 400, 'another content type')
    t.equal(await grantLive(h, g), true)
  })

  t.test('a replayed SET: 202 both times, acted on once', async (t) => {
    const set = await tx.set({ event: `${RISC}account-enabled`, subId: PERSON })
    t.equal((await tx.push(endpoint, set.jwt)).status, 202)
    await h.store.signals.disableAccount(SUB)
    t.equal((await tx.push(endpoint, set.jwt)).status, 202)
    t.equal(await h.store.signals.isDisabled(SUB), true, 'the replay did not enable the account again')
    t.equal(h.metrics.signalsReceived.get({ outcome: 'replayed' }), 1)
    await h.store.signals.enableAccount(SUB)
  })

  t.test('a 10 MB body is refused from its Content-Length, unread', async (t) => {
    const started = Date.now()
    const big = Buffer.alloc(10 * 1024 * 1024, 0x61)
    const r = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/secevent+jwt' }, body: big }).then(async (res) => ({
      status: res.status,
      json: (await res.json()) as Record<string, unknown>,
    }))
    t.equal(r.status, 413)
    t.equal(r.json.err, 'invalid_request')
    t.ok(Date.now() - started < 2000, `answered in ${Date.now() - started} ms`)
  })

  t.test('a flood of signed SETs about nobody: acknowledged, one log line, nothing stored, sign-in still works', async (t) => {
    const sizeBefore = (h.store as unknown as { size: number }).size
    const linesBefore = h.logs.filter((l) => l.msg === 'shared signal about a subject bearward does not know; acknowledged').length
    // People at corp who never signed in here, and a subject at an issuer no identity provider has.
    const sets = await Promise.all(Array.from({ length: 300 }, (_, i) => tx.set({ subId: { format: 'iss_sub', iss: CORP, sub: `nobody-${i}` } })))
    sets.push(await tx.set({ subId: { format: 'iss_sub', iss: 'https://elsewhere.example.com', sub: 'x' } }))
    const started = Date.now()
    const statuses = await Promise.all(sets.map((s) => tx.push(endpoint, s.jwt).then((r) => r.status)))
    const ms = Date.now() - started
    t.ok(
      statuses.every((s) => s === 202),
      'every one acknowledged',
    )
    const lines = h.logs.filter((l) => l.msg === 'shared signal about a subject bearward does not know; acknowledged').length - linesBefore
    t.ok(lines <= 1, `${lines} log line(s) for ${sets.length} SETs`)
    t.equal(h.metrics.signalsReceived.get({ outcome: 'unknown-subject' }), sets.length, 'each counted')
    t.equal((h.store as unknown as { size: number }).size, sizeBefore, 'no jti kept for SETs that act on nobody')
    const cc = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read' })
    t.equal(cc.status, 200, `the AS still issues tokens (flood of ${sets.length} took ${ms} ms)`)
  })
})

t.test('push: a transmitter whose JWKS is down: 503 with Retry-After, accepted once it is back', async (t) => {
  const { h, tx, endpoint } = await setup(t, { jwksDown: true })
  const g = await grantOf(h, SUB)
  const started = Date.now()
  const r = await tx.push(endpoint, (await tx.set({ subId: PERSON })).jwt)
  t.equal(r.status, 503)
  t.equal(r.json?.err, 'invalid_key')
  t.equal(r.headers.get('retry-after'), '5')
  t.ok(Date.now() - started < 3000, `refused within the first-fetch wait (${Date.now() - started} ms)`)
  t.equal(await grantLive(h, g), true)
  const cc = await token(h, 'service', { grant_type: 'client_credentials', scope: 'orders:read' })
  t.equal(cc.status, 200, 'the AS answers meanwhile')
  tx.jwksDown = false
  // The JWKS client retries a keyless transmitter after at most a second.
  h.clock.advance(1_000)
  const again = await tx.push(endpoint, (await tx.set({ subId: PERSON })).jwt)
  t.equal(again.status, 202)
  t.equal(await grantLive(h, g), false)
})
