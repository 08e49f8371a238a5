/**
 * Remote JWKS through the gateway: the first fetch at start, rotation picked
 * up on the first unknown kid, at most one refetch per cooldown whatever kids
 * arrive, Cache-Control honoured within the configured clamp, stale keys used
 * while the issuer's JWKS endpoint fails, 503 when there are no keys at all,
 * and caches that survive a reload.
 */
import t from 'tap'
import { createHmac, randomUUID } from 'node:crypto'
import { createServer, type ServerResponse } from 'node:http'
import { exportSPKI, SignJWT } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { freshnessSec } from '../../src/gateway/jwks-client.js'
import { parseJwks } from '../../src/keys/jwk-set.js'
import { ProcessState } from '../../src/runtime.js'
import { createLogger } from '../../src/log.js'
import type { SigningKey } from '../../src/keys/keyset.js'
import { closeServer, eventually, listen } from '../helpers/http.js'
import { mint, newKey, startGateway, type Harness, type MintOptions } from './fixture.js'

const ISSUER = 'https://idp.example'
const AUDIENCE = 'https://api.example'

interface JwksServer {
  url: string
  fetches: number
  keys: SigningKey[]
  /** 'ok' serves the keys; 'fail' answers 500; 'hold' keeps requests waiting until release(). */
  mode: 'ok' | 'fail' | 'hold'
  cacheControl: string | null
  release(): void
  close(): Promise<void>
}

async function startJwks(keys: SigningKey[]): Promise<JwksServer> {
  const held: ServerResponse[] = []
  const answer = (res: ServerResponse): void => {
    res.setHeader('content-type', 'application/jwk-set+json')
    if (state.cacheControl !== null) res.setHeader('cache-control', state.cacheControl)
    res.end(JSON.stringify({ keys: state.keys.map((k) => k.publicJwk) }))
  }
  const server = createServer((_req, res) => {
    state.fetches++
    if (state.mode === 'fail') {
      res.statusCode = 500
      res.end('down')
    } else if (state.mode === 'hold') {
      held.push(res)
    } else {
      answer(res)
    }
  })
  const serverAt = await listen(server)
  const state: JwksServer = {
    url: `${serverAt.url}/jwks.json`,
    fetches: 0,
    keys,
    mode: 'ok',
    cacheControl: null,
    release: () => {
      for (const res of held.splice(0)) answer(res)
    },
    close: () => closeServer(server),
  }
  return state
}

/** Wait for I/O the test started (a background fetch); fails the test with `what` when it does not happen within 2 s. */
async function until(check: () => boolean, what: string): Promise<void> {
  if (!(await eventually(check, 2000, 10))) throw new Error(`timed out waiting for ${what}`)
}

/** Fetches that finished loading keys (the server counting a request is not enough: the client may still be reading it). */
const loads = (logs: readonly string[]): number => logs.filter((l) => l.includes('JWKS loaded')).length

function corpConfig(jwksUrl: string, jwks = 'min_ttl: 60s, max_ttl: 1h, cooldown: 30s, stale: 1h, first_fetch_wait: 3s, timeout: 3s'): string {
  return `
issuers:
  - id: corp
    issuer: ${ISSUER}
    jwks_uri: ${jwksUrl}
    algorithms: [ES256, RS256]
    jwks: { ${jwks} }
`
}

function corpRoutes(up: string): string {
  return `
  - name: corp
    match: { path: /corp }
    upstream: ${up}
    audience: ${AUDIENCE}
    issuers: [corp]
  - name: corp-read
    match: { path: /corp-read }
    upstream: ${up}
    audience: ${AUDIENCE}
    issuers: [corp]
    scopes: { GET: [orders:read] }
  - name: both
    match: { path: /both }
    upstream: ${up}
    audience: ${AUDIENCE}
    issuers: [self, corp]
`
}

t.test('remote JWKS', async (t) => {
  const k1 = await newKey('ES256', 'corp-1')
  const jwks = await startJwks([k1])
  t.teardown(() => jwks.close())
  const gw: Harness = await startGateway({ routes: corpRoutes, extra: corpConfig(jwks.url) })
  t.teardown(() => gw.close())
  const corpToken = (key: SigningKey, extra: Partial<MintOptions> = {}): Promise<string> => mint(gw.clock, { key, iss: ISSUER, aud: AUDIENCE, ...extra })

  await until(() => loads(gw.logs) === 1, 'the first fetch at start')

  t.test('keys fetched at start verify tokens without another fetch', async (t) => {
    t.equal((await gw.get('/corp', await corpToken(k1))).status, 200)
    t.equal((await gw.get('/corp', await corpToken(k1))).status, 200)
    t.equal(jwks.fetches, 1)
  })

  t.test('key rotation is picked up on the first unknown kid', async (t) => {
    const k2 = await newKey('ES256', 'corp-2')
    jwks.keys = [k1, k2]
    t.equal((await gw.get('/corp', await corpToken(k2))).status, 200)
    t.equal(jwks.fetches, 2, 'one refetch')
  })

  t.test('random unknown kids cause at most one fetch per cooldown', async (t) => {
    const before = jwks.fetches
    const attacker = await newKey('ES256', 'x')
    for (let i = 0; i < 20; i++) {
      const res = await gw.get('/corp', await corpToken(attacker, { header: { kid: randomUUID() } }))
      t.equal(res.status, 401)
    }
    t.equal(jwks.fetches, before, 'within the cooldown of the rotation refetch: none')
    gw.clock.advance(30_000)
    for (let i = 0; i < 20; i++) await gw.get('/corp', await corpToken(attacker, { header: { kid: randomUUID() } }))
    t.equal(jwks.fetches, before + 1, 'after the cooldown: exactly one')
  })

  t.test('an HS256 token keyed with the issuer public key is refused', async (t) => {
    const now = Math.floor(gw.clock.now() / 1000)
    const b64 = (v: object): string => Buffer.from(JSON.stringify(v)).toString('base64url')
    const input = `${b64({ alg: 'HS256', kid: k1.kid, typ: 'at+jwt' })}.${b64({ iss: ISSUER, aud: AUDIENCE, exp: now + 600 })}`
    const token = `${input}.${createHmac('sha256', await exportSPKI(k1.publicKey))
      .update(input)
      .digest('base64url')}`
    t.equal((await gw.get('/corp', token)).status, 401)
  })

  t.test("another issuer's tokens need only exp among the claims; scopes may come as an scp array", async (t) => {
    const bare = await corpToken(k1, {
      scope: undefined,
      claims: { scope: undefined, client_id: undefined, jti: undefined, sub: undefined, scp: ['orders:read'] },
    })
    const payload = JSON.parse(Buffer.from(bare.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>
    t.same(Object.keys(payload).sort(), ['aud', 'exp', 'iat', 'iss', 'scp'], 'the token has no sub, jti, client_id or scope')
    t.equal((await gw.get('/corp-read', bare)).status, 200, 'scp grants orders:read')
    const narrow = await corpToken(k1, { scope: undefined, claims: { scope: undefined, scp: ['profile'] } })
    t.equal((await gw.get('/corp-read', narrow)).status, 403, 'an scp without orders:read is insufficient_scope')
    const now = Math.floor(gw.clock.now() / 1000)
    const noExp = await new SignJWT({ scp: ['orders:read'] })
      .setProtectedHeader({ alg: 'ES256', kid: k1.kid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .sign(k1.privateKey)
    t.equal((await gw.get('/corp-read', noExp)).status, 401, 'exp is required of every issuer')
  })

  t.test('a route trusting two issuers picks the keys by iss, and only those', async (t) => {
    t.equal((await gw.get('/both', await gw.mint({ aud: AUDIENCE }))).status, 200, 'self')
    t.equal((await gw.get('/both', await corpToken(k1))).status, 200, 'corp')
    t.equal((await gw.get('/both', await gw.mint({ aud: AUDIENCE, iss: ISSUER }))).status, 401, 'self key claiming corp')
    t.equal((await gw.get('/both', await corpToken(k1, { iss: 'http://gw.test' }))).status, 401, 'corp key claiming self')
    t.equal((await gw.get('/corp', await gw.mint({ aud: AUDIENCE }))).status, 401, 'self token on a corp-only route')
  })

  t.test('stale keys are used while the JWKS endpoint fails, then 503', async (t) => {
    const token = await corpToken(k1, { expIn: 7200 })
    jwks.mode = 'fail'
    const before = jwks.fetches
    gw.clock.advance(61_000) // past freshness (60s): a background refresh fails
    t.equal((await gw.get('/corp', token)).status, 200, 'cached verification')
    const fresh = await corpToken(k1, { expIn: 7200 })
    t.equal((await gw.get('/corp', fresh)).status, 200, 'a new token verified with the stale keys')
    await until(() => gw.logs.some((l) => l.includes('still using the keys loaded before')), 'the background refresh to fail')
    t.ok(jwks.fetches > before, 'the endpoint was asked again')
    gw.clock.advance(3_600_000) // past the stale allowance (1h)
    const res = await gw.get('/corp', await corpToken(k1, { expIn: 7200 }))
    t.equal(res.status, 503)
    t.equal(res.json().error, 'temporarily_unavailable')
    jwks.mode = 'ok'
    gw.clock.advance(2_000)
    t.equal((await gw.get('/corp', await corpToken(k1, { expIn: 7200 }))).status, 200, 'recovers once the endpoint answers')
  })
})

t.test('Cache-Control max-age sets freshness within [min_ttl, max_ttl]', async (t) => {
  t.equal(freshnessSec('public, max-age=600', { minTtlSec: 60, maxTtlSec: 3600 }), 600)
  t.equal(freshnessSec('max-age=5', { minTtlSec: 60, maxTtlSec: 3600 }), 60)
  t.equal(freshnessSec('max-age=999999', { minTtlSec: 60, maxTtlSec: 3600 }), 3600)
  t.equal(freshnessSec('no-store', { minTtlSec: 60, maxTtlSec: 3600 }), 60)
  t.equal(freshnessSec(undefined, { minTtlSec: 60, maxTtlSec: 3600 }), 60)

  const k1 = await newKey('ES256', 'cc-1')
  const jwks = await startJwks([k1])
  jwks.cacheControl = 'public, max-age=600'
  t.teardown(() => jwks.close())
  const gw = await startGateway({ routes: corpRoutes, extra: corpConfig(jwks.url) })
  t.teardown(() => gw.close())
  await until(() => loads(gw.logs) === 1, 'the first fetch')
  gw.clock.advance(400_000)
  t.equal((await gw.get('/corp', await mint(gw.clock, { key: k1, iss: ISSUER, aud: AUDIENCE }))).status, 200)
  t.equal(jwks.fetches, 1, 'still fresh after 400s of 600s')
  gw.clock.advance(100_000)
  t.equal((await gw.get('/corp', await mint(gw.clock, { key: k1, iss: ISSUER, aud: AUDIENCE }))).status, 200)
  await until(() => loads(gw.logs) === 2, 'the refresh ahead of expiry (80% of 600s)')
  t.equal(jwks.fetches, 2)
})

t.test('a request waits for the first fetch at most first_fetch_wait, then 503', async (t) => {
  const k1 = await newKey('ES256', 'slow-1')
  const jwks = await startJwks([k1])
  jwks.mode = 'hold'
  t.teardown(() => jwks.close())
  const gw = await startGateway({ routes: corpRoutes, extra: corpConfig(jwks.url, 'first_fetch_wait: 200ms, timeout: 30s') })
  t.teardown(() => gw.close())
  const token = await mint(gw.clock, { key: k1, iss: ISSUER, aud: AUDIENCE })
  const res = await gw.get('/corp', token)
  t.equal(res.status, 503)
  t.equal(res.headers['retry-after'], '5')
  t.equal(res.json().error, 'temporarily_unavailable')
  jwks.mode = 'ok'
  jwks.release()
  await until(() => loads(gw.logs) === 1, 'the first fetch to finish')
  t.equal((await gw.get('/corp', token)).status, 200)
  t.equal(jwks.fetches, 1, 'the held fetch was the only one')
})

t.test('JWKS keys with use=enc or an alg pin that does not fit are not used', async (t) => {
  const k = await newKey('ES256', 'k')
  t.same(parseJwks({ keys: [{ ...k.publicJwk, use: 'enc' }] }), [])
  t.same(parseJwks({ keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'h' }] }), [])
  t.same(parseJwks({ keys: [{ ...k.publicJwk, key_ops: ['encrypt'] }] }), [])
  t.equal(parseJwks({ nope: [] }), undefined)
  t.equal(parseJwks({ keys: [k.publicJwk, 'junk', { kty: 'EC', crv: 'P-256', x: 'bad' }] })?.length, 1)

  const pinned = await newKey('ES256', 'pinned')
  const jwks = await startJwks([])
  t.teardown(() => jwks.close())
  const gw = await startGateway({ routes: corpRoutes, extra: corpConfig(jwks.url) })
  t.teardown(() => gw.close())
  await until(() => loads(gw.logs) === 1, 'the first fetch')
  jwks.keys = [{ ...pinned, publicJwk: { ...pinned.publicJwk, alg: 'RS256' } }]
  gw.clock.advance(120_000)
  const token = await mint(gw.clock, { key: pinned, iss: ISSUER, aud: AUDIENCE })
  t.equal((await gw.get('/corp', token)).status, 401, 'an ES256 key pinned to RS256 verifies nothing')
  jwks.keys = [pinned]
  gw.clock.advance(30_000)
  t.equal((await gw.get('/corp', token)).status, 200, 'the same key without the pin does')
})

t.test('the registry keeps JWKS caches across reloads', async (t) => {
  const clock = new ManualClock()
  const k1 = await newKey('ES256', 'keep-1')
  const jwks = await startJwks([k1])
  t.teardown(() => jwks.close())
  const logs: string[] = []
  // What outlives a reload: the process state and its JWKS registry (src/runtime.ts), held here as the App holds it.
  const state = new ProcessState({ clock, log: createLogger('debug', { write: (line: string) => void logs.push(line) }) })
  t.teardown(() => state.close())
  const first = await startGateway({ routes: corpRoutes, extra: corpConfig(jwks.url), clock, state })
  await until(() => loads(logs) === 1, 'the first fetch')
  const second = await startGateway({ routes: corpRoutes, extra: corpConfig(jwks.url), clock, state })
  t.teardown(() => second.close())
  await first.close()
  t.equal((await second.get('/corp', await mint(clock, { key: k1, iss: ISSUER, aud: AUDIENCE }))).status, 200)
  t.equal(jwks.fetches, 1, 'the reloaded gateway reused the keys')
})
