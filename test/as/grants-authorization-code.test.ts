import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import { hashToken } from '../../src/store/hash.js'
import { grantIdForCode } from '../../src/as/grant-id.js'
import { API_AUDIENCE, codeParams, introspect, mintCode, send, settle, startAs, token, type Harness } from '../helpers/as-back.js'

const INVALID_GRANT = {
  error: 'invalid_grant',
  error_description: 'The provided grant is invalid, expired, revoked, or was issued to another client',
}

async function jwks(h: Harness): Promise<ReturnType<typeof createLocalJWKSet>> {
  const r = await send(`${h.url}/jwks.json`)
  return createLocalJWKSet(r.json as { keys: [] })
}

/** The code is still Issued: the right request redeems it. */
async function stillRedeemable(t: Test, h: Harness, m: Awaited<ReturnType<typeof mintCode>>): Promise<void> {
  const r = await token(h, m.record.clientId, codeParams(m))
  t.equal(r.status, 200, 'the code is unchanged and still redeemable')
}

/** The log line the refusal wrote, with its server-side cause. */
function lastCause(h: Harness): unknown {
  return [...h.logs].reverse().find((l) => l.msg === 'request refused')?.cause
}

t.test('authorization_code grant', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())

  t.test('a valid exchange returns access, refresh and id tokens', async (t) => {
    const m = await mintCode(h)
    const r = await token(h, 'web', codeParams(m))
    t.equal(r.status, 200)
    t.equal(r.headers.get('cache-control'), 'no-store')
    t.equal(r.headers.get('pragma'), 'no-cache')
    const body = r.json ?? {}
    t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type'])
    t.equal(body.token_type, 'Bearer')
    t.equal(body.expires_in, 600)
    t.equal(body.scope, 'openid profile email orders:read')
    t.match(body.refresh_token, /^[A-Za-z0-9_-]{43}$/)

    const at = String(body.access_token)
    const header = decodeProtectedHeader(at)
    t.equal(header.typ, 'at+jwt')
    t.equal(header.kid, h.as.keys.signing.kid)
    t.equal(header.alg, 'ES256')
    const { payload } = await jwtVerify(at, await jwks(h), {
      issuer: h.issuer,
      audience: h.issuer,
      typ: 'at+jwt',
      currentDate: new Date(h.clock.now()),
    })
    t.equal(payload.sub, 'alice')
    t.equal(payload.client_id, 'web')
    t.equal(payload.scope, 'openid profile email orders:read')
    t.equal(payload.auth_time, m.record.authTime)
    t.equal(typeof payload.jti, 'string')
    t.equal(typeof payload.grant_id, 'string')
    t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 600)
    t.notOk('name' in payload || 'email' in payload, 'no personal data in the access token')
    t.equal(h.metrics.tokensIssued.get({ grant: 'authorization_code' }) > 0, true)
  })

  t.test('the id_token verifies against the JWKS with aud, nonce, at_hash and typ JWT', async (t) => {
    const m = await mintCode(h)
    const body = (await token(h, 'web', codeParams(m))).json ?? {}
    const idToken = String(body.id_token)
    t.equal(decodeProtectedHeader(idToken).typ, 'JWT')
    const { payload } = await jwtVerify(idToken, await jwks(h), {
      issuer: h.issuer,
      audience: 'web',
      currentDate: new Date(h.clock.now()),
    })
    t.equal(payload.sub, 'alice')
    t.equal(payload.nonce, m.record.nonce)
    t.equal(payload.azp, 'web')
    t.equal(payload.auth_time, m.record.authTime)
    const digest = createHash('sha256').update(String(body.access_token)).digest()
    t.equal(payload.at_hash, digest.subarray(0, 16).toString('base64url'))
    t.equal(payload.name, 'Alice Example', 'profile scope releases name')
    t.equal(payload.email, 'alice@example.com', 'email scope releases email')
    t.equal(payload.email_verified, true)
    t.notOk('phone_number' in payload, 'phone was not granted')
  })

  t.test('no openid scope: no id_token; no nonce: no nonce claim', async (t) => {
    const m = await mintCode(h, { scope: 'orders:read', nonce: null })
    const body = (await token(h, 'web', codeParams(m))).json ?? {}
    t.notOk('id_token' in body)
    const m2 = await mintCode(h, { nonce: null })
    const body2 = (await token(h, 'web', codeParams(m2))).json ?? {}
    const { payload } = await jwtVerify(String(body2.id_token), await jwks(h), { currentDate: new Date(h.clock.now()) })
    t.notOk('nonce' in payload)
  })

  t.test('PKCE downgrade: an S256 challenge sent as the plain verifier is refused', async (t) => {
    const m = await mintCode(h)
    const r = await token(h, 'web', { ...codeParams(m), code_verifier: m.record.codeChallenge ?? '' })
    t.equal(r.status, 400)
    t.same(r.json, INVALID_GRANT)
    t.equal(r.headers.get('cache-control'), 'no-store')
    t.equal(lastCause(h), 'S256 code_verifier mismatch')
    await stillRedeemable(t, h, m)
  })

  t.test('a missing verifier is invalid_grant', async (t) => {
    const m = await mintCode(h)
    const { code_verifier: _omit, ...params } = codeParams(m)
    const r = await token(h, 'web', params)
    t.equal(r.status, 400)
    t.same(r.json, INVALID_GRANT)
    t.equal(lastCause(h), 'code_verifier missing')
    await stillRedeemable(t, h, m)
  })

  for (const [name, verifier] of [
    ['too short (42)', 'a'.repeat(42)],
    ['too long (129)', 'a'.repeat(129)],
    ['bad characters', `${'a'.repeat(42)}+`],
    ['a space', `${'a'.repeat(42)} `],
  ] as const) {
    t.test(`a verifier ${name} is invalid_grant`, async (t) => {
      const m = await mintCode(h)
      const r = await token(h, 'web', { ...codeParams(m), code_verifier: verifier })
      t.equal(r.status, 400)
      t.same(r.json, INVALID_GRANT)
      t.equal(lastCause(h), 'code_verifier malformed')
      await stillRedeemable(t, h, m)
    })
  }

  t.test('verifiers of exactly 43 and 128 characters are accepted', async (t) => {
    for (const len of [43, 128]) {
      const verifier = 'A-._~'.repeat(30).slice(0, len)
      const challenge = createHash('sha256').update(verifier).digest('base64url')
      const m = await mintCode(h, { codeChallenge: challenge })
      const r = await token(h, 'web', { ...codeParams(m), code_verifier: verifier })
      t.equal(r.status, 200, `length ${len}`)
    }
  })

  t.test("a code used twice: the second fails and the first exchange's tokens are revoked", async (t) => {
    const m = await mintCode(h)
    const first = await token(h, 'web', codeParams(m))
    t.equal(first.status, 200)
    const at = String(first.json?.access_token)
    const rt = String(first.json?.refresh_token)
    t.equal((await introspect(h, at)).active, true)

    const second = await token(h, 'web', codeParams(m))
    t.equal(second.status, 400)
    t.same(second.json, INVALID_GRANT)
    t.equal(lastCause(h), 'code replayed; its grant is revoked')
    await settle()

    const claims = JSON.parse(Buffer.from(at.split('.')[1] ?? '', 'base64url').toString()) as { grant_id: string; jti: string }
    t.ok(h.revocations.isRevoked(null, claims.grant_id), 'the revocation list has the grant')
    t.ok(
      (await h.store.revocations.list()).some((e) => e.kind === 'grant' && e.id === claims.grant_id),
      'the store lists it',
    )
    t.same(await introspect(h, at), { active: false })
    t.same(await introspect(h, rt), { active: false })
    const refresh = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: rt })
    t.equal(refresh.status, 400)
    t.equal(refresh.json?.error, 'invalid_grant')
  })

  t.test('a replay that overtakes the first exchange still revokes the grant that exchange produces', async (t) => {
    // Regression: under load, replays arrived between the winner's take and its
    // link of the grant id, found nothing to revoke, and the winner's tokens lived.
    const m = await mintCode(h)
    const codeHash = hashToken(m.code)
    const taken = await h.store.codes.take(codeHash)
    t.equal(taken.status, 'taken', 'a first exchange is mid-flight: it took the code, created nothing yet')
    const replay = await token(h, 'web', codeParams(m))
    t.equal(replay.status, 400)
    t.same(replay.json, INVALID_GRANT)
    await settle()
    t.ok(h.revocations.isRevoked(null, grantIdForCode(codeHash)), 'the grant the code will produce is already revoked')
    const entry = (await h.store.revocations.list()).find((e) => e.kind === 'grant' && e.id === grantIdForCode(codeHash))
    t.ok(entry, 'and listed in the store for every instance')
    t.ok((entry?.exp ?? 0) >= Math.floor(h.clock.now() / 1000) + h.as.as.refreshToken.ttlSec, 'for as long as its refresh family could live')
  })

  t.test('a code redeemed by another client is invalid_grant and stays usable', async (t) => {
    const m = await mintCode(h)
    const r = await token(h, 'other', { ...codeParams(m), redirect_uri: m.record.redirectUri ?? '' })
    t.equal(r.status, 400)
    t.same(r.json, INVALID_GRANT)
    t.equal(lastCause(h), 'code issued to another client')
    await stillRedeemable(t, h, m)
  })

  t.test('an expired code is invalid_grant', async (t) => {
    const m = await mintCode(h)
    h.clock.advance(60_000)
    const r = await token(h, 'web', codeParams(m))
    t.equal(r.status, 400)
    t.same(r.json, INVALID_GRANT)
  })

  t.test('a code one second before expiry still works', async (t) => {
    const m = await mintCode(h)
    h.clock.advance(59_000)
    t.equal((await token(h, 'web', codeParams(m))).status, 200)
  })

  t.test('an unknown code is invalid_grant', async (t) => {
    const m = await mintCode(h)
    const r = await token(h, 'web', { ...codeParams(m), code: 'x'.repeat(43) })
    t.same(r.json, INVALID_GRANT)
  })

  t.test('redirect_uri must be identical to the authorization request', async (t) => {
    for (const wrong of ['https://app.example.com/cb/', 'https://app.example.com/cb?x=1', 'https://APP.example.com/cb']) {
      const m = await mintCode(h)
      const r = await token(h, 'web', { ...codeParams(m), redirect_uri: wrong })
      t.same(r.json, INVALID_GRANT, wrong)
      t.equal(lastCause(h), 'redirect_uri differs from the authorization request')
      await stillRedeemable(t, h, m)
    }
    const m = await mintCode(h)
    const { redirect_uri: _omit, ...params } = codeParams(m)
    t.same((await token(h, 'web', params)).json, INVALID_GRANT, 'required when it was sent at authorization')
  })

  t.test('redirect_uri omitted at authorization: none or the one used is fine, another is not', async (t) => {
    const base = { redirectUri: null }
    const m1 = await mintCode(h, base)
    t.equal((await token(h, 'web', codeParams(m1))).status, 200, 'omitted')
    const m2 = await mintCode(h, base)
    t.equal((await token(h, 'web', { ...codeParams(m2), redirect_uri: m2.record.effectiveRedirectUri })).status, 200, 'the one used')
    const m3 = await mintCode(h, base)
    t.same((await token(h, 'web', { ...codeParams(m3), redirect_uri: 'https://evil.example.com/cb' })).json, INVALID_GRANT)
  })

  t.test('a code issued without a challenge refuses a verifier (confidential client without PKCE)', async (t) => {
    const params = { clientId: 'legacy', codeChallenge: null, codeChallengeMethod: null } as const
    const m = await mintCode(h, params)
    const r = await token(h, 'legacy', codeParams(m))
    t.same(r.json, INVALID_GRANT)
    t.equal(lastCause(h), 'code_verifier sent for a code issued without a challenge')
    const { code_verifier: _omit, ...noVerifier } = codeParams(m)
    t.equal((await token(h, 'legacy', noVerifier)).status, 200)
  })

  t.test('a code without a challenge for a client that requires PKCE is refused', async (t) => {
    const m = await mintCode(h, { codeChallenge: null, codeChallengeMethod: null })
    const { code_verifier: _omit, ...noVerifier } = codeParams(m)
    t.same((await token(h, 'web', noVerifier)).json, INVALID_GRANT)
  })

  t.test('plain works only for a code issued with plain', async (t) => {
    const verifier = 'p'.repeat(50)
    const m = await mintCode(h, { clientId: 'legacy', codeChallenge: verifier, codeChallengeMethod: 'plain', scope: 'orders:read' })
    t.same((await token(h, 'legacy', { ...codeParams(m), code_verifier: 'q'.repeat(50) })).json, INVALID_GRANT)
    t.equal((await token(h, 'legacy', { ...codeParams(m), code_verifier: verifier })).status, 200)
  })

  t.test('public client: client_id in the body, PKCE proves it', async (t) => {
    const m = await mintCode(h, { clientId: 'spa', scope: 'openid orders:read' })
    const r = await token(h, 'spa', codeParams(m))
    t.equal(r.status, 200)
    t.ok(r.json?.refresh_token)
  })

  t.test('a client without the refresh_token grant gets no refresh token', async (t) => {
    const m = await mintCode(h, { clientId: 'nosy-public', scope: 'orders:read', redirectUri: null, effectiveRedirectUri: 'https://x.example.com/cb' })
    const r = await token(h, 'nosy-public', codeParams(m))
    t.equal(r.status, 200)
    t.notOk('refresh_token' in (r.json ?? {}))
    t.notOk('id_token' in (r.json ?? {}))
  })

  t.test('50 concurrent exchanges of one code: exactly one 200', async (t) => {
    const m = await mintCode(h)
    const replies = await Promise.all(Array.from({ length: 50 }, () => token(h, 'web', codeParams(m))))
    const ok = replies.filter((r) => r.status === 200)
    t.equal(ok.length, 1)
    t.ok(replies.filter((r) => r.status !== 200).every((r) => r.status === 400 && r.json?.error === 'invalid_grant'))
    await settle()
    t.same(await introspect(h, String(ok[0]?.json?.access_token)), { active: false }, "the replays revoked the winner's tokens")
  })

  t.test('resource narrows aud; unknown resource is invalid_target and leaves the code usable', async (t) => {
    const m = await mintCode(h)
    const bad = await token(h, 'web', { ...codeParams(m), resource: 'https://unknown.example.com' })
    t.equal(bad.status, 400)
    t.same(bad.json, { error: 'invalid_target', error_description: 'The requested resource is not known to this server' })
    const r = await token(h, 'web', { ...codeParams(m), resource: API_AUDIENCE })
    t.equal(r.status, 200)
    const { payload } = await jwtVerify(String(r.json?.access_token), await jwks(h), { currentDate: new Date(h.clock.now()) })
    t.equal(payload.aud, API_AUDIENCE)

    const bound = await mintCode(h, { resource: API_AUDIENCE })
    const other = await token(h, 'web', { ...codeParams(bound), resource: h.issuer })
    t.equal(other.json?.error, 'invalid_target', 'a resource other than the authorized one')
    await stillRedeemable(t, h, bound)
  })

  t.test('the code record comes from the front channel: its resource binds aud', async (t) => {
    const m = await mintCode(h, { resource: API_AUDIENCE })
    const r = await token(h, 'web', codeParams(m))
    const { payload } = await jwtVerify(String(r.json?.access_token), await jwks(h), { currentDate: new Date(h.clock.now()) })
    t.equal(payload.aud, API_AUDIENCE)
  })

  t.test('no token value reaches the log', async (t) => {
    const m = await mintCode(h)
    const r = await token(h, 'web', codeParams(m))
    await token(h, 'web', codeParams(m))
    const text = JSON.stringify(h.logs)
    for (const v of [m.code, m.verifier, String(r.json?.access_token), String(r.json?.refresh_token), hashToken(m.code)]) {
      t.notOk(text.includes(v))
    }
  })
})

t.test('opaque access tokens', async (t) => {
  const h = await startAs({ format: 'opaque' })
  t.teardown(() => h.close())
  const m = await mintCode(h)
  const r = await token(h, 'web', codeParams(m))
  t.equal(r.status, 200)
  const at = String(r.json?.access_token)
  t.match(at, /^[A-Za-z0-9_-]{43}$/)
  const stored = await h.store.opaqueTokens.get(hashToken(at))
  t.match(stored, { iss: h.issuer, sub: 'alice', clientId: 'web', aud: [h.issuer], scope: 'openid profile email orders:read' })
  t.equal(stored?.exp, (stored?.iat ?? 0) + 600)
  t.equal(await h.store.opaqueTokens.get(at), null, 'stored only under its hash')
  const { payload } = await jwtVerify(String(r.json?.id_token), createLocalJWKSet(h.as.keys.jwks as { keys: [] }), {
    currentDate: new Date(h.clock.now()),
  })
  const digest = createHash('sha256').update(at).digest()
  t.equal(payload.at_hash, digest.subarray(0, 16).toString('base64url'), 'at_hash covers the opaque token')
})

t.test('at_hash follows the signing algorithm', async (t) => {
  for (const [alg, hash, half] of [
    ['ES384', 'sha384', 24],
    ['EdDSA', 'sha512', 32],
    ['RS256', 'sha256', 16],
  ] as const) {
    const h = await startAs({ alg })
    const body = (await token(h, 'web', codeParams(await mintCode(h)))).json ?? {}
    const { payload, protectedHeader } = await jwtVerify(String(body.id_token), createLocalJWKSet(h.as.keys.jwks as { keys: [] }), {
      currentDate: new Date(h.clock.now()),
    })
    t.equal(protectedHeader.alg, alg)
    const digest = createHash(hash).update(String(body.access_token)).digest()
    t.equal(payload.at_hash, digest.subarray(0, half).toString('base64url'), alg)
    await h.close()
  }
})
