/**
 * Opaque tokens: remote RFC 7662 introspection (only `active: true` is
 * valid; an issuer that cannot answer is 503, not 401; answers cached
 * positively and negatively) and the built-in issuer's opaque tokens, looked
 * up in the store by hash.
 */
import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { hashToken } from '../../src/store/hash.js'
import { startGateway, PUBLIC_URL } from './fixture.js'
import { closeServer, eventually, listen } from '../helpers/http.js'

const ISSUER = 'https://idp.example'
const AUDIENCE = 'https://api.example'

interface Seen {
  authorization: string | undefined
  contentType: string | undefined
  body: string
}

/** An introspection endpoint answering per token from `answers`. */
async function startIntrospection(): Promise<{
  url: string
  seen: Seen[]
  answers: Map<string, (res: ServerResponse) => void>
  close(): Promise<void>
}> {
  const seen: Seen[] = []
  const answers = new Map<string, (res: ServerResponse) => void>()
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      seen.push({ authorization: req.headers.authorization, contentType: req.headers['content-type'], body })
      const token = new URLSearchParams(body).get('token') ?? ''
      const answer = answers.get(token)
      if (answer === undefined) json(res, { active: false })
      else answer(res)
    })
  })
  const serverAt = await listen(server)
  return {
    url: `${serverAt.url}/introspect`,
    seen,
    answers,
    close: () => closeServer(server),
  }
}

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.statusCode = status
  res.setHeader('content-type', 'application/json')
  res.end(JSON.stringify(body))
}

t.test('remote introspection', async (t) => {
  const idp = await startIntrospection()
  t.teardown(() => idp.close())
  const gw = await startGateway({
    extra: `
issuers:
  - id: corp
    issuer: ${ISSUER}
    introspection: { endpoint: ${idp.url}, client_id: "gw client", client_secret: "s3cr:et", timeout: 1s }
gateway:
  introspection_cache: { ttl: 60s, negative_ttl: 5s }
`,
    routes: (up) => `
  - name: opaque
    match: { path: /opaque }
    upstream: ${up}
    token: introspect
    issuers: [corp]
    audience: ${AUDIENCE}
    scopes: { GET: [read] }
`,
  })
  t.teardown(() => gw.close())
  const now = (): number => Math.floor(gw.clock.now() / 1000)
  const active =
    (extra: Record<string, unknown> = {}) =>
    (res: ServerResponse) =>
      json(res, { active: true, scope: 'read', sub: 'bob', client_id: 'svc', aud: AUDIENCE, iss: ISSUER, exp: now() + 3600, ...extra })
  const calls = (): number => idp.seen.length

  t.test('active true: allowed, with the identity; the call is authenticated and well-formed', async (t) => {
    idp.answers.set('tok-active', active())
    const res = await gw.get('/opaque/x', 'tok-active')
    t.equal(res.status, 200)
    t.equal(gw.upstream.seen.at(-1)?.headers['x-auth-subject'], 'bob')
    const call = idp.seen.at(-1)
    t.equal(call?.authorization, `Basic ${Buffer.from('gw+client:s3cr%3Aet').toString('base64')}`, 'RFC 6749 2.3.1 form-encoded Basic')
    t.equal(call?.contentType, 'application/x-www-form-urlencoded')
    t.equal(call?.body, 'token=tok-active&token_type_hint=access_token')
  })

  t.test('active false is refused', async (t) => {
    const res = await gw.get('/opaque', 'tok-inactive')
    t.equal(res.status, 401)
    t.equal(res.json().error, 'invalid_token')
  })

  t.test('active "true" as a string is not true', async (t) => {
    idp.answers.set('tok-string', (res) => json(res, { active: 'true', scope: 'read', aud: AUDIENCE }))
    t.equal((await gw.get('/opaque', 'tok-string')).status, 401)
    idp.answers.set('tok-one', (res) => json(res, { active: 1, scope: 'read', aud: AUDIENCE }))
    t.equal((await gw.get('/opaque', 'tok-one')).status, 401)
  })

  t.test('an issuer answering 500 or not JSON is 503, not 401', async (t) => {
    idp.answers.set('tok-500', (res) => json(res, { error: 'oops' }, 500))
    const res = await gw.get('/opaque', 'tok-500')
    t.equal(res.status, 503)
    t.equal(res.json().error, 'temporarily_unavailable')
    t.equal(res.headers['www-authenticate'], undefined)
    idp.answers.set('tok-html', (r) => r.end('<html>'))
    t.equal((await gw.get('/opaque', 'tok-html')).status, 503)
  })

  t.test('an issuer that does not answer in time is 503', async (t) => {
    idp.answers.set('tok-hang', () => undefined)
    const res = await gw.get('/opaque', 'tok-hang')
    t.equal(res.status, 503)
    t.equal(res.json().error, 'temporarily_unavailable')
  })

  t.test('503 answers are not cached', async (t) => {
    const before = calls()
    idp.answers.set('tok-500', active())
    t.equal((await gw.get('/opaque', 'tok-500')).status, 200)
    t.equal(calls(), before + 1)
  })

  t.test('active answers are cached until the cache TTL', async (t) => {
    idp.answers.set('tok-cached', active())
    t.equal((await gw.get('/opaque', 'tok-cached')).status, 200)
    const before = calls()
    t.equal((await gw.get('/opaque', 'tok-cached')).status, 200)
    t.equal(calls(), before, 'second use: no call')
    idp.answers.set('tok-cached', (res) => json(res, { active: false }))
    gw.clock.advance(61_000)
    t.equal((await gw.get('/opaque', 'tok-cached')).status, 401, 'after the TTL the issuer is asked again')
    t.equal(calls(), before + 1)
  })

  t.test('active answers are never cached past exp', async (t) => {
    idp.answers.set('tok-short', active({ exp: now() + 10 }))
    t.equal((await gw.get('/opaque', 'tok-short')).status, 200)
    const before = calls()
    idp.answers.set('tok-short', (res) => json(res, { active: false }))
    gw.clock.advance(11_000)
    t.equal((await gw.get('/opaque', 'tok-short')).status, 401)
    t.equal(calls(), before + 1)
  })

  t.test('inactive answers are cached for the negative TTL', async (t) => {
    t.equal((await gw.get('/opaque', 'tok-neg')).status, 401)
    const before = calls()
    t.equal((await gw.get('/opaque', 'tok-neg')).status, 401)
    t.equal(calls(), before, 'no second call within 5s')
    gw.clock.advance(6_000)
    idp.answers.set('tok-neg', active())
    t.equal((await gw.get('/opaque', 'tok-neg')).status, 200)
    t.equal(calls(), before + 1)
  })

  t.test('audience, issuer, expiry and scope of the answer are checked', async (t) => {
    idp.answers.set('tok-aud', active({ aud: ['https://other.example'] }))
    t.equal((await gw.get('/opaque', 'tok-aud')).status, 401, 'another audience')
    idp.answers.set('tok-iss', active({ iss: 'https://evil.example' }))
    t.equal((await gw.get('/opaque', 'tok-iss')).status, 401, 'another issuer')
    idp.answers.set('tok-exp', active({ exp: now() - 120 }))
    const expired = await gw.get('/opaque', 'tok-exp')
    t.equal(expired.status, 401, 'expired')
    t.match(expired.headers['www-authenticate'], /The access token is expired/)
    idp.answers.set('tok-scope', active({ scope: 'write' }))
    const narrow = await gw.get('/opaque', 'tok-scope')
    t.equal(narrow.status, 403)
    t.match(narrow.headers['www-authenticate'], /scope="read"/)
    idp.answers.set('tok-badscope', active({ scope: 42 }))
    t.equal((await gw.get('/opaque', 'tok-badscope')).status, 401, 'a scope that is not a string')
  })

  t.test("a remote answer's cnf binds the token: x5t#S256 without its certificate, or a cnf we cannot read, is refused", async (t) => {
    // RFC 8705 3.2: the introspection answer carries the binding; the gateway checks it as it checks a JWT's.
    const forwarded = gw.upstream.seen.length
    idp.answers.set('tok-x5t', active({ cnf: { 'x5t#S256': 'A'.repeat(43) } }))
    for (let i = 0; i < 2; i++) {
      const res = await gw.get('/opaque', 'tok-x5t')
      t.equal(res.status, 401, i === 0 ? 'introspected now' : 'answered from the cache')
      t.equal(res.json().error, 'invalid_token')
      t.match(res.headers['www-authenticate'], /client certificate/)
    }
    idp.answers.set('tok-jwk', active({ cnf: { jwk: { kty: 'EC' } } }))
    t.equal((await gw.get('/opaque', 'tok-jwk')).status, 401, 'bound to a key we cannot check')
    t.equal(gw.upstream.seen.length, forwarded, 'nothing forwarded')
  })

  t.test('revocation applies to introspected tokens too', async (t) => {
    idp.answers.set('tok-jti', active({ jti: 'remote-jti' }))
    t.equal((await gw.get('/opaque', 'tok-jti')).status, 200)
    await gw.store.revocations.add({ kind: 'jti', id: 'remote-jti', exp: now() + 3600 })
    t.equal((await gw.get('/opaque', 'tok-jti')).status, 401)
  })
})

t.test('the built-in issuer: opaque tokens looked up in the store', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: opaque
    match: { path: /self }
    upstream: ${up}
    token: introspect
    scopes: { GET: ["orders:read"] }
  - name: any
    match: { path: /any }
    upstream: ${up}
    token: any
`,
  })
  t.teardown(() => gw.close())
  const now = Math.floor(gw.clock.now() / 1000)
  const put = (token: string, extra: Partial<Parameters<typeof gw.store.opaqueTokens.put>[1]> = {}) =>
    gw.store.opaqueTokens.put(hashToken(token), {
      iss: PUBLIC_URL,
      sub: 'carol',
      aud: [PUBLIC_URL],
      clientId: 'web',
      scope: 'orders:read',
      jti: `jti-${token}`,
      iat: now,
      exp: now + 3600,
      grantId: null,
      ...extra,
    })

  await put('opaque-good')
  const ok = await gw.get('/self/1', 'opaque-good')
  t.equal(ok.status, 200)
  t.equal(gw.upstream.seen.at(-1)?.headers['x-auth-subject'], 'carol')
  t.equal((await gw.get('/self', 'opaque-unknown')).status, 401)
  await put('opaque-aud', { aud: ['https://other.example'] })
  t.equal((await gw.get('/self', 'opaque-aud')).status, 401, 'another audience')
  await put('opaque-scope', { scope: 'profile' })
  t.equal((await gw.get('/self', 'opaque-scope')).status, 403)
  await put('opaque-short', { exp: now + 5 })
  gw.clock.advance(6_000)
  t.equal((await gw.get('/self', 'opaque-short')).status, 401, 'expired')

  t.equal((await gw.get('/any', 'opaque-good')).status, 200, 'token: any takes an opaque token')
  t.equal((await gw.get('/any', await gw.mint())).status, 200, 'and a JWT')

  // Revocation (what /revoke does: delete the record and list its jti) is enforced at once, cache or not.
  await gw.store.opaqueTokens.delete(hashToken('opaque-good'))
  await gw.store.revocations.add({ kind: 'jti', id: 'jti-opaque-good', exp: now + 3600 })
  t.ok(await eventually(async () => (await gw.get('/self', 'opaque-good')).status === 401), 'revoked: refused although its lookup was cached')
  t.equal((await gw.get('/self', 'opaque-good')).json().error_description, 'The access token has been revoked')

  // A record that merely disappears is noticed when the cached lookup ends (introspection_cache.ttl, never past exp).
  await put('opaque-cached')
  t.equal((await gw.get('/self', 'opaque-cached')).status, 200)
  await gw.store.opaqueTokens.delete(hashToken('opaque-cached'))
  t.equal((await gw.get('/self', 'opaque-cached')).status, 200, 'served from the cached lookup: no store round trip per request')
  gw.clock.advance(61_000)
  t.equal((await gw.get('/self', 'opaque-cached')).status, 401, 'looked up again after the cache TTL')

  await put('opaque-later')
  await gw.store.close()
  const down = await gw.get('/self', 'opaque-later')
  t.equal(down.status, 503, 'store unreachable')
  t.equal(down.json().error, 'temporarily_unavailable')
})
