/**
 * The DPoP proof verifier (src/dpop/verify-proof.ts) against hand-made
 * proofs: every check of RFC 9449 4.3, the status each face gives a
 * refusal, nonces and the replay cache (memory store here; Redis in the
 * store contract and the e2e tests).
 */
import { createHash } from 'node:crypto'
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { DEFAULT_DPOP } from '../../src/config/sections/dpop.js'
import type { DpopConfig } from '../../src/config/validated-config.js'
import { proofHeader, DpopVerifier } from '../../src/dpop/verify-proof.js'
import { jwkThumbprint } from '../../src/dpop/thumbprint.js'
import { htuMatches, normalizeHtu } from '../../src/dpop/htu.js'
import { InvalidDpopProof, type OAuthError, StoreUnavailableError, UseDpopNonce } from '../../src/errors.js'
import { MemoryStore } from '../../src/store/memory.js'
import { makeProof, proofKeyPair, type ProofKeyPair } from '../helpers/dpop.js'
import type { IncomingMessage } from 'node:http'

const URL_ = 'https://api.example/orders/1'
const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln'

function setup(t: Test, config: Partial<DpopConfig> = {}, face: 'token' | 'resource' = 'resource') {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  const verifier = new DpopVerifier({ ...DEFAULT_DPOP, ...config }, { clock, store }, face)
  return { clock, store, verifier, nowMs: clock.now() }
}

async function refusal(t: Test, p: Promise<unknown>, description: RegExp, label: string, status = 401, cause?: string): Promise<OAuthError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  t.type(err, InvalidDpopProof, `${label}: invalid_dpop_proof`)
  const e = err as OAuthError
  t.equal(e.status, status, `${label}: ${status}`)
  t.equal(e.error, 'invalid_dpop_proof', `${label}: error code`)
  t.match(e.description, description, `${label}: description`)
  if (cause !== undefined) t.equal(e.cause, cause, `${label}: refused for the right reason (${cause})`)
  return e
}

t.test('a good proof passes and gives the key thumbprint (ES256, EdDSA, RS256, PS256)', async (t) => {
  const { verifier, nowMs } = setup(t)
  for (const alg of ['ES256', 'EdDSA', 'RS256', 'PS256'] as const) {
    const key = proofKeyPair(alg)
    const proof = makeProof(key, { htu: URL_, accessToken: TOKEN, nowMs })
    const verified = await verifier.verify(proof, { method: 'GET', url: URL_, accessToken: TOKEN, jkt: key.jkt })
    t.equal(verified.jkt, key.jkt, `${alg}: thumbprint matches an independent computation`)
  }
})

t.test('thumbprint: RFC 7638 3.1 example', async (t) => {
  const jwk = {
    kty: 'RSA',
    n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
    e: 'AQAB',
    alg: 'RS256',
    kid: '2011-04-29',
  }
  t.equal(jwkThumbprint(jwk), 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs')
  t.equal(jwkThumbprint({ kty: 'oct', k: 'x' }), undefined, 'a symmetric key has no DPoP thumbprint')
  t.equal(jwkThumbprint({ kty: 'EC', crv: 'P-256', x: 'a' }), undefined, 'a missing member')
})

t.test('htu: compared without query and fragment, after normalisation', async (t) => {
  t.ok(htuMatches('HTTPS://API.Example:443/orders/1', URL_))
  t.ok(htuMatches('https://api.example/orders/./1?x=1#f', URL_))
  t.notOk(htuMatches('https://api.example/orders/2', URL_))
  t.notOk(htuMatches('https://api.example:8443/orders/1', URL_))
  t.notOk(htuMatches('http://api.example/orders/1', URL_), 'another scheme')
  t.notOk(htuMatches('not a url', URL_))
  t.equal(normalizeHtu('ftp://x/y'), undefined)
  t.ok(htuMatches('https://api.example/orders/%31', URL_), 'a percent-encoded unreserved character')
  t.ok(htuMatches('https://api.example/orders/x/../1', URL_), 'a dot segment')
  t.equal(normalizeHtu('https://api.example'), 'https://api.example/', 'an empty path is /')
  t.equal(normalizeHtu('https://API.example:8443/a/%7e/%2f'), 'https://api.example:8443/a/~/%2F')
})

t.test('htu: a URI the comparison of scheme, host, port and path cannot vouch for is refused (RFC 9449 4.3)', async (t) => {
  const refused: Array<[string, string]> = [
    ['https://x@api.example/orders/1', 'userinfo'],
    ['https://x:y@api.example/orders/1', 'userinfo with a password'],
    ['https://@api.example/orders/1', 'an empty userinfo'],
    ['https://api.example@api.example/orders/1', 'userinfo that looks like the host'],
    ['https://api.example\\@evil.example/orders/1', 'a backslash'],
    ['https://api.exa\tmple/orders/1', 'a tab (WHATWG parsing strips it)'],
    ['https://api.example/orders/1 ', 'a trailing space'],
    ['https://api.example/orders/\u00e9', 'non-ASCII'],
    ['https://api.example/orders/%zz', 'a broken percent-encoding'],
    ['https://api.example:99999/orders/1', 'a port out of range'],
    ['https:///orders/1', 'no host'],
    ['https:api.example/orders/1', 'no authority'],
  ]
  for (const [htu, label] of refused) {
    t.equal(normalizeHtu(htu), undefined, `${label}: not normalised`)
    t.notOk(htuMatches(htu, URL_), `${label}: refused`)
  }
  t.notOk(htuMatches('http://2130706433/x', 'http://127.0.0.1/x'), 'a numeric host is not read as an IPv4 address (RFC 3986 has no such rule)')
})

t.test('every refusal of RFC 9449 4.3', async (t) => {
  const { verifier, nowMs } = setup(t)
  const key = proofKeyPair('ES256')
  const other = proofKeyPair('ES256')
  const expect = { method: 'GET', url: URL_, accessToken: TOKEN, jkt: key.jkt }
  const proof = (o: Partial<Parameters<typeof makeProof>[1]> = {}, k: ProofKeyPair = key): string =>
    makeProof(k, { htu: URL_, accessToken: TOKEN, nowMs, ...o })
  const nowSec = Math.floor(nowMs / 1000)

  await refusal(t, verifier.verify(proof({ htm: 'POST' }), expect), /another HTTP method/, 'wrong htm')
  await refusal(t, verifier.verify(proof({ htu: 'https://api.example/orders/2' }), expect), /another URI/, 'wrong htu')
  await refusal(t, verifier.verify(proof({ htu: 'https://evil.example/orders/1' }), expect), /another URI/, 'htu of another host')
  await refusal(t, verifier.verify(proof({ iat: nowSec - 300 }), expect), /too old/, 'iat five minutes old')
  await refusal(t, verifier.verify(proof({ iat: nowSec + 300 }), expect), /future/, 'iat five minutes ahead')
  await refusal(t, verifier.verify(proof({ accessToken: 'another.token.x' }), expect), /another access token/, 'wrong ath')
  await refusal(t, verifier.verify(proof({ claims: { ath: undefined } }), expect), /needs ath/, 'no ath')
  await refusal(t, verifier.verify(proof({}, other), expect), /not bound/, 'a key other than cnf.jkt')
  const priv = key.privateKey.export({ format: 'jwk' })
  await refusal(t, verifier.verify(proof({ header: { jwk: priv } }), expect), /malformed or its signature/, 'a private key in jwk', 401, 'ERR_DPOP_JWK_PRIVATE')
  await refusal(
    t,
    verifier.verify(proof({ header: { jwk: { ...key.publicJwk, k: 'AAAA' } } }), expect),
    /malformed/,
    'a symmetric member in jwk',
    401,
    'ERR_DPOP_JWK_PRIVATE',
  )
  await refusal(t, verifier.verify(proof({ forge: { alg: 'none' } }), expect), /malformed/, 'alg none (empty signature)', 401, 'ERR_DPOP_MALFORMED')
  await refusal(t, verifier.verify(proof({ header: { alg: 'none' } }), expect), /malformed/, 'alg none with a signature', 401, 'ERR_DPOP_ALG')
  await refusal(t, verifier.verify(proof({ forge: { alg: 'HS256', secret: 'secret' } }), expect), /malformed/, 'alg HS256', 401, 'ERR_DPOP_ALG')
  await refusal(t, verifier.verify(proof({ header: { typ: 'JWT' } }), expect), /malformed/, 'wrong typ', 401, 'ERR_DPOP_TYP')
  await refusal(t, verifier.verify(proof({ header: { typ: undefined } }), expect), /malformed/, 'no typ', 401, 'ERR_DPOP_TYP')
  await refusal(t, verifier.verify(proof({ header: { jwk: undefined } }), expect), /malformed/, 'no jwk', 401, 'ERR_DPOP_JWK')
  await refusal(t, verifier.verify(proof({ header: { crit: ['exp'] } }), expect), /malformed/, 'crit', 401, 'ERR_DPOP_CRIT')
  await refusal(t, verifier.verify(proof({ header: { alg: 'RS256' } }), expect), /malformed/, 'alg that does not fit the key', 401, 'ERR_DPOP_ALG')
  await refusal(t, verifier.verify(proof({ claims: { jti: undefined } }), expect), /needs a jti/, 'no jti')
  await refusal(t, verifier.verify(proof({ claims: { jti: 'x'.repeat(257) } }), expect), /needs a jti/, 'a jti too long')
  await refusal(t, verifier.verify(proof({ claims: { iat: '1' } }), expect), /htm, htu and iat/, 'iat not a number')
  await refusal(t, verifier.verify(proof({ claims: { htu: undefined } }), expect), /htm, htu and iat/, 'no htu')
  const good = proof()
  await refusal(t, verifier.verify(`${good.slice(0, -3)}AAA`, expect), /signature/, 'a changed signature', 401, 'ERR_DPOP_SIGNATURE')
  await refusal(t, verifier.verify(good.replace('.', '.e30.'), expect), /malformed/, 'four segments')
  await refusal(t, verifier.verify(`${good.slice(0, 5)}*${good.slice(6)}`, expect), /malformed/, 'not base64url')
  await refusal(t, verifier.verify(`x${'A'.repeat(9000)}`, expect), /too large/, 'oversized')
  await refusal(t, verifier.verify('e30.e30.AAAA', expect), /malformed/, 'a header without typ or alg')
  await refusal(t, verifier.verify('bm90IGpzb24.e30.AAAA', expect), /malformed/, 'a header that is not JSON')
  // Short RSA keys are refused even when allowed algorithms match.
  const { generateKeyPairSync } = await import('node:crypto')
  const small = generateKeyPairSync('rsa', { modulusLength: 1024 })
  const smallJwk = small.publicKey.export({ format: 'jwk' })
  const smallKey: ProofKeyPair = { privateKey: small.privateKey, publicJwk: smallJwk, alg: 'RS256', jkt: 'x' }
  await refusal(t, verifier.verify(proof({}, smallKey), expect), /malformed/, 'RSA-1024', 401, 'ERR_DPOP_JWK')
  t.ok(await verifier.verify(proof(), expect), 'and a good proof still passes after all that')
})

t.test('an algorithm outside the configured allow-list is refused', async (t) => {
  const { verifier, nowMs } = setup(t, { algs: ['ES256'] })
  const key = proofKeyPair('EdDSA')
  await refusal(t, verifier.verify(makeProof(key, { htu: URL_, nowMs }), { method: 'GET', url: URL_ }), /malformed/, 'EdDSA not allowed', 401, 'ERR_DPOP_ALG')
  t.same(verifier.algorithms, ['ES256'])
})

t.test('replay: the same jti twice is refused; refusals do not burn the jti', async (t) => {
  const { verifier, nowMs, clock } = setup(t)
  const key = proofKeyPair()
  const expect = { method: 'GET', url: URL_ }
  const proof = makeProof(key, { htu: URL_, nowMs, jti: 'once' })
  await refusal(t, verifier.verify(proof, { ...expect, method: 'POST' }), /another HTTP method/, 'first sent to the wrong method')
  t.ok(await verifier.verify(proof, expect), 'then accepted once')
  await refusal(t, verifier.verify(proof, expect), /used before/, 'replayed')
  const sameJtiOtherKey = makeProof(proofKeyPair(), { htu: URL_, nowMs, jti: 'once' })
  t.ok(await verifier.verify(sameJtiOtherKey, expect), 'another key may pick the same jti')
  clock.advance(61_000)
  await refusal(t, verifier.verify(proof, expect), /too old/, 'after the window the proof is too old anyway')
})

t.test('the token endpoint face answers 400 without a challenge', async (t) => {
  const { verifier, nowMs } = setup(t, {}, 'token')
  const key = proofKeyPair()
  const e = await refusal(t, verifier.verify(makeProof(key, { htu: URL_, htm: 'GET', nowMs }), { method: 'POST', url: URL_ }), /method/, 'wrong htm', 400)
  t.equal(e.challenge, undefined)
})

t.test('nonces: missing or stale nonce → use_dpop_nonce with a fresh one; current and previous windows accepted', async (t) => {
  const { verifier, clock } = setup(t, { nonce: { secret: 's'.repeat(32), ttlSec: 300 } })
  const key = proofKeyPair()
  const expect = { method: 'GET', url: URL_ }
  const first = await verifier.verify(makeProof(key, { htu: URL_, nowMs: clock.now() }), expect).then(
    () => null,
    (e: unknown) => e,
  )
  t.type(first, UseDpopNonce)
  const e = first as UseDpopNonce
  t.equal(e.status, 401)
  t.equal(e.error, 'use_dpop_nonce')
  t.equal(e.challenge, 'DPoP')
  const nonce = e.headers['dpop-nonce'] as string
  t.equal(nonce, verifier.nonce(), 'the DPoP-Nonce header carries the current nonce')
  t.ok(await verifier.verify(makeProof(key, { htu: URL_, nowMs: clock.now(), nonce }), expect), 'accepted with the nonce')
  clock.advance(300_000)
  t.not(verifier.nonce(), nonce, 'a new window, a new nonce')
  t.ok(await verifier.verify(makeProof(key, { htu: URL_, nowMs: clock.now(), nonce }), expect), 'the previous window still accepted')
  clock.advance(300_000)
  await t.rejects(verifier.verify(makeProof(key, { htu: URL_, nowMs: clock.now(), nonce }), expect), UseDpopNonce, 'two windows old: refused')
  await t.rejects(verifier.verify(makeProof(key, { htu: URL_, nowMs: clock.now(), nonce: 'x'.repeat(43) }), expect), UseDpopNonce, 'an invented nonce')
  const other = new DpopVerifier({ ...DEFAULT_DPOP, nonce: { secret: 's'.repeat(32), ttlSec: 300 } }, { clock, store: new MemoryStore(clock) }, 'token')
  t.equal(other.nonce(), verifier.nonce(), 'another instance with the same secret hands out the same nonce')
})

t.test('the replay cache fails closed when the store is down', async (t) => {
  const { verifier, nowMs, store } = setup(t)
  await store.close()
  await t.rejects(verifier.verify(makeProof(proofKeyPair(), { htu: URL_, nowMs }), { method: 'GET', url: URL_ }), StoreUnavailableError)
})

t.test('proofHeader: none, one, or a refusal for two', async (t) => {
  const req = (rawHeaders: string[]): IncomingMessage => {
    const headers: Record<string, string> = {}
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = (rawHeaders[i] as string).toLowerCase()
      headers[name] = headers[name] === undefined ? (rawHeaders[i + 1] as string) : `${headers[name]}, ${rawHeaders[i + 1]}`
    }
    return { headers, rawHeaders } as unknown as IncomingMessage
  }
  t.equal(proofHeader(req([]), 'resource'), null)
  t.equal(proofHeader(req(['DPoP', 'a.b.c']), 'resource'), 'a.b.c')
  t.throws(() => proofHeader(req(['DPoP', 'a.b.c', 'dpop', 'd.e.f']), 'resource'), InvalidDpopProof)
  t.equal(createHash('sha256').update('').digest('base64url').length, 43)
})
