/**
 * Step-up at the gateway (RFC 9470): a route (or one of its methods) that
 * demands an `acr` or a recent `auth_time` refuses tokens that fall short
 * with 401 insufficient_user_authentication, `acr_values` and `max_age`,
 * and nothing reaches the upstream. Tokens are minted in the test with the
 * built-in issuer's key; time moves with the injected clock.
 */
import t, { type Test } from 'tap'
import { createServer } from 'node:http'
import { PUBLIC_URL, startGateway, type Harness, type Reply } from './fixture.js'
import { StepUp, StepUpRule } from '../../src/gateway/step-up.js'
import { hashToken } from '../../src/store/hash.js'
import { closeServer, listen } from '../helpers/http.js'

/** Every protected route takes DPoP-bound tokens too (dpop: allowed): its challenges say so (RFC 9449 7.1). */
const ACCEPTS_DPOP = ', DPoP algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"'
const meta = (path: string): string => `resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource${path}"`

function routes(up: string): string {
  return `
  - name: pay
    match: { path: /pay }
    upstream: ${up}
    scopes: { "*": [pay] }
    authentication: { acr: [phr, mfa], max_age: 5m }
  - name: orders
    match: { path: /orders }
    upstream: ${up}
    scopes: { GET: [orders:read], DELETE: [orders:write], "*": [orders:read] }
    authentication: { DELETE: { acr: [mfa] , max_age: 10m }, "*": {} }
  - name: fresh
    match: { path: /fresh }
    upstream: ${up}
    authentication: { max_age: 0 }
`
}

t.test('step-up on a route', async (t) => {
  const gw: Harness = await startGateway({ routes })
  t.teardown(() => gw.close())
  const now = (): number => Math.floor(gw.clock.now() / 1000)

  /** GET (or `method`) with a token; asserts whether it reached the upstream. */
  async function call(t: Test, path: string, token: string, reaches: boolean, method = 'GET'): Promise<Reply> {
    const before = gw.upstream.seen.length
    const res = await gw.send(path, { method, headers: { authorization: `Bearer ${token}` } })
    t.equal(gw.upstream.seen.length, before + (reaches ? 1 : 0), reaches ? 'reached the upstream' : 'nothing reached the upstream')
    return res
  }

  const payChallenge = (description: string): string =>
    `Bearer realm="bearward", error="insufficient_user_authentication", error_description="${description}", acr_values="phr mfa", max_age="300", scope="pay", ${meta('/pay')}` +
    ACCEPTS_DPOP

  t.test('a fresh, strong sign-in is forwarded', async (t) => {
    const token = await gw.mint({ scope: 'pay', claims: { acr: 'mfa', auth_time: now() - 60 } })
    t.equal((await call(t, '/pay', token, true)).status, 200)
    const phr = await gw.mint({ scope: 'pay', claims: { acr: 'phr', auth_time: now() } })
    t.equal((await call(t, '/pay', phr, true)).status, 200, 'any listed acr')
  })

  t.test('no acr, or one not listed: 401 with the exact challenge', async (t) => {
    for (const claims of [{ auth_time: now() }, { acr: 'pwd', auth_time: now() }, { acr: 'MFA', auth_time: now() }]) {
      const res = await call(t, '/pay', await gw.mint({ scope: 'pay', claims }), false)
      t.equal(res.status, 401, JSON.stringify(claims))
      t.equal(res.headers['www-authenticate'], payChallenge('A different authentication level is required'))
      t.same(res.json(), { error: 'insufficient_user_authentication', error_description: 'A different authentication level is required' })
    }
  })

  t.test('auth_time missing, or older than max_age beyond the clock skew: 401', async (t) => {
    for (const claims of [{ acr: 'mfa' }, { acr: 'mfa', auth_time: now() - 300 - 31 }]) {
      const res = await call(t, '/pay', await gw.mint({ scope: 'pay', claims }), false)
      t.equal(res.status, 401, JSON.stringify(claims))
      t.equal(res.headers['www-authenticate'], payChallenge('More recent authentication is required'))
    }
    const edge = await gw.mint({ scope: 'pay', claims: { acr: 'mfa', auth_time: now() - 300 - 30 } })
    t.equal((await call(t, '/pay', edge, true)).status, 200, 'max_age plus the 30s skew still passes')
  })

  t.test('claims the gateway cannot read are invalid tokens, not guesses', async (t) => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['acr not a string', { acr: ['mfa'], auth_time: now() }],
      ['auth_time not a number', { acr: 'mfa', auth_time: String(now()) }],
      ['auth_time in the future', { acr: 'mfa', auth_time: now() + 3600 }],
    ]
    for (const [what, claims] of cases) {
      const res = await call(t, '/pay', await gw.mint({ scope: 'pay', claims }), false)
      t.equal(res.status, 401, what)
      t.equal(res.json().error, 'invalid_token', what)
    }
  })

  t.test('step-up is judged before scope: one 401 names the scopes too', async (t) => {
    const res = await call(t, '/pay', await gw.mint({ scope: 'other', claims: { acr: 'pwd', auth_time: now() } }), false)
    t.equal(res.status, 401)
    t.match(res.headers['www-authenticate'], /acr_values="phr mfa", max_age="300", scope="pay"/)
    const scopeOnly = await call(t, '/pay', await gw.mint({ scope: 'other', claims: { acr: 'mfa', auth_time: now() } }), false)
    t.equal(scopeOnly.status, 403, 'a strong sign-in short of scope gets the 403')
    t.equal(scopeOnly.json().error, 'insufficient_scope')
  })

  t.test('a cached validation stops passing once max_age has gone by', async (t) => {
    const token = await gw.mint({ scope: 'pay', claims: { acr: 'mfa', auth_time: now() }, expIn: 3600 })
    t.equal((await call(t, '/pay', token, true)).status, 200, 'first use: verified and cached')
    gw.clock.advance(200_000)
    t.equal((await call(t, '/pay', token, true)).status, 200, 'a cache hit, still within max_age')
    gw.clock.advance(200_000)
    const res = await call(t, '/pay', token, false)
    t.equal(res.status, 401, 'the same cached token, now too old')
    t.equal(res.json().error, 'insufficient_user_authentication')
  })

  t.test('per method: DELETE steps up, the other methods are let off by "*": {}', async (t) => {
    const weak = await gw.mint({ scope: 'orders:read orders:write', claims: { acr: 'pwd', auth_time: now() - 86_400 } })
    t.equal((await call(t, '/orders/1', weak, true)).status, 200, 'GET')
    t.equal((await call(t, '/orders/1', weak, true, 'POST')).status, 200, 'POST')
    const res = await call(t, '/orders/1', weak, false, 'DELETE')
    t.equal(res.status, 401)
    t.equal(
      res.headers['www-authenticate'],
      `Bearer realm="bearward", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="mfa", max_age="600", scope="orders:write", ${meta('/orders')}` +
        ACCEPTS_DPOP,
    )
    const strong = await gw.mint({ scope: 'orders:read orders:write', claims: { acr: 'mfa', auth_time: now() } })
    t.equal((await call(t, '/orders/1', strong, true, 'DELETE')).status, 200)
  })

  t.test("the built-in issuer's own acr values are ranked: a passkey sign-in (phr) meets mfa", async (t) => {
    const passkey = await gw.mint({ scope: 'orders:read orders:write', claims: { acr: 'phr', auth_time: now() } })
    t.equal((await call(t, '/orders/1', passkey, true, 'DELETE')).status, 200, 'what /authorize issues for acr_values=mfa after a passkey')
    const password = await gw.mint({ scope: 'orders:read orders:write', claims: { acr: 'pwd', auth_time: now() } })
    t.equal((await call(t, '/orders/1', password, false, 'DELETE')).status, 401, 'pwd is below mfa')
  })

  t.test('max_age 0: the sign-in must be within the clock skew', async (t) => {
    t.equal((await call(t, '/fresh', await gw.mint({ claims: { auth_time: now() - 5 } }), true)).status, 200)
    const res = await call(t, '/fresh', await gw.mint({ claims: { auth_time: now() - 31 } }), false)
    t.equal(res.status, 401)
    t.match(
      res.headers['www-authenticate'],
      /error="insufficient_user_authentication", error_description="More recent authentication is required", max_age="0", /,
    )
    t.notMatch(res.headers['www-authenticate'], /acr_values/, 'no acr is asked for')
  })

  t.test('a service token (no person, no auth_time) cannot step up', async (t) => {
    const service = await gw.mint({ scope: 'pay', claims: { sub: 'svc' } })
    t.equal((await call(t, '/pay', service, false)).status, 401)
  })

  t.test('refusals are counted as their own validation result', async (t) => {
    t.match(gw.metrics.render(), /bearward_token_validations_total\{result="insufficient_user_authentication"\} \d+/)
  })
})

t.test('StepUpRule: unlisted methods need every listed rule (fail closed); HEAD follows GET', async (t) => {
  const rule = new StepUpRule({ GET: { acr: ['mfa', 'phr'], maxAgeSec: null }, POST: { acr: ['phr'], maxAgeSec: 60 } })
  t.same(rule.of('HEAD')?.parts, [{ acr: ['mfa', 'phr'], maxAgeSec: null }])
  const other = rule.of('PATCH')
  t.equal(other?.maxAgeSec, 60)
  t.equal(other?.check({ acr: 'mfa', auth_time: 1000 }, 1000, 0)?.code, 'ERR_INSUFFICIENT_USER_AUTHENTICATION', 'mfa is not enough for POST')
  t.equal(other?.check({ acr: 'phr', auth_time: 1000 }, 1000, 0), null)
  t.equal(new StepUpRule({}).of('GET'), null)
  t.equal(new StepUpRule({ DELETE: { acr: ['mfa'], maxAgeSec: null }, '*': { acr: null, maxAgeSec: null } }).of('GET'), null)
})

t.test('StepUp: parts together name the values they share', async (t) => {
  const both = new StepUp([
    { acr: ['phr', 'mfa'], maxAgeSec: 600 },
    { acr: ['mfa', 'hwk'], maxAgeSec: 60 },
  ])
  const refusal = both.check({ acr: 'phr', auth_time: 0 }, 0, 0)
  t.same(refusal?.challengeParams, { acr_values: 'mfa', max_age: '60' })
  t.equal(both.check({ acr: 'mfa', auth_time: 0 }, 61, 0)?.description, 'More recent authentication is required')
  t.equal(both.check({ acr: 'mfa', auth_time: 0 }, 60, 0), null)
})

t.test("StepUp: another issuer's acr values match exactly, the built-in issuer's are ranked", async (t) => {
  const mfa = new StepUp([{ acr: ['mfa'], maxAgeSec: null }])
  t.equal(mfa.check({ acr: 'phr' }, 0, 0)?.code, 'ERR_INSUFFICIENT_USER_AUTHENTICATION', 'phr of a remote issuer is not mfa')
  t.equal(mfa.check({ acr: 'phr' }, 0, 0, true), null, "phr of bearward's own server meets mfa")
  t.equal(mfa.check({ acr: 'pwd' }, 0, 0, true)?.code, 'ERR_INSUFFICIENT_USER_AUTHENTICATION')
  t.equal(
    new StepUp([{ acr: ['urn:example:loa:2'], maxAgeSec: null }]).check({ acr: 'phr' }, 0, 0, true)?.code,
    'ERR_INSUFFICIENT_USER_AUTHENTICATION',
    'an unranked value exactly',
  )
})

t.test('step-up per MCP tool', async (t) => {
  const gw: Harness = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    authentication: { POST: { acr: [mfa, pwd] }, "*": {} }
    mcp:
      tools:
        get_order: [orders:read]
        delete_order: { scopes: [orders:write], authentication: { acr: [mfa], max_age: 5m } }
        "admin_*": { authentication: { max_age: 1m } }
`,
  })
  t.teardown(() => gw.close())
  const now = (): number => Math.floor(gw.clock.now() / 1000)
  const call = (name: string): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } })

  async function post(t: Test, body: string, token: string, reaches: boolean): Promise<Reply> {
    const before = gw.upstream.seen.length
    const res = await gw.send('/mcp', { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body })
    t.equal(gw.upstream.seen.length, before + (reaches ? 1 : 0), reaches ? 'reached the upstream' : 'nothing reached the upstream')
    if (reaches) t.equal(gw.upstream.seen.at(-1)?.body, body, 'the body arrived byte for byte')
    return res
  }

  const pwd = await gw.mint({ scope: 'mcp:tools orders:read orders:write', claims: { acr: 'pwd', auth_time: now() - 3600 } })
  const mfa = await gw.mint({ scope: 'mcp:tools orders:read orders:write', claims: { acr: 'mfa', auth_time: now() }, expIn: 3600 })

  t.test('a tool without a step-up takes the route rule only', async (t) => {
    t.equal((await post(t, call('get_order'), pwd, true)).status, 200)
    t.equal((await post(t, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), pwd, true)).status, 200)
  })

  t.test('a guarded tool refuses the weaker sign-in, naming route and tool together', async (t) => {
    const res = await post(t, call('delete_order'), pwd, false)
    t.equal(res.status, 401)
    t.equal(
      res.headers['www-authenticate'],
      `Bearer realm="bearward", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="mfa", max_age="300", scope="mcp:tools orders:write", ${meta('/mcp')}` +
        ACCEPTS_DPOP,
    )
    t.equal((await post(t, call('delete_order'), mfa, true)).status, 200, 'the stronger, fresh sign-in is forwarded')
  })

  t.test('a pattern rule applies; time passing on a cached token makes it stale', async (t) => {
    t.equal((await post(t, call('admin_purge'), mfa, true)).status, 200)
    gw.clock.advance(120_000)
    const res = await post(t, call('admin_purge'), mfa, false)
    t.equal(res.status, 401)
    t.match(
      res.headers['www-authenticate'],
      /error_description="More recent authentication is required", acr_values="mfa pwd", max_age="60", scope="mcp:tools", /,
    )
  })

  t.test('a sign-in the route refuses: the 401 names the tool requirement too (body read after the token)', async (t) => {
    const otp = await gw.mint({ scope: 'mcp:tools orders:write', claims: { acr: 'otp', auth_time: now() } })
    const res = await post(t, call('delete_order'), otp, false)
    t.equal(res.status, 401)
    t.match(res.headers['www-authenticate'], /acr_values="mfa", max_age="300", scope="mcp:tools orders:write", /)
    const other = await post(t, call('get_order'), otp, false)
    t.match(other.headers['www-authenticate'], /acr_values="mfa pwd", scope="mcp:tools orders:read", /)
  })

  t.test('GET (the SSE stream) is let off by "*": {}', async (t) => {
    const weak = await gw.mint({ scope: 'mcp:tools', claims: { acr: 'otp' } })
    const before = gw.upstream.seen.length
    t.equal((await gw.get('/mcp', weak, { accept: 'text/event-stream' })).status, 200)
    t.equal(gw.upstream.seen.length, before + 1)
  })
})

t.test("bearward's own opaque tokens: the sign-in kept in the token record", async (t) => {
  const gw: Harness = await startGateway({
    routes: (up) => `
  - name: pay
    match: { path: /pay }
    upstream: ${up}
    token: introspect
    authentication: { acr: [mfa], max_age: 5m }
`,
  })
  t.teardown(() => gw.close())
  const now = Math.floor(gw.clock.now() / 1000)
  /** A stored opaque token of the built-in issuer, as the authorization server writes it (authTime, acr beside the claims). */
  async function stored(token: string, signIn: Record<string, unknown>): Promise<void> {
    const record = {
      iss: PUBLIC_URL,
      sub: 'alice',
      aud: [PUBLIC_URL],
      clientId: 'web',
      scope: '',
      jti: token,
      iat: now,
      exp: now + 3600,
      grantId: null,
      ...signIn,
    }
    await gw.store.opaqueTokens.put(hashToken(token), record)
  }
  await stored('strong-and-fresh', { authTime: now, acr: 'mfa', amr: ['hwk', 'user'] })
  await stored('password-only', { authTime: now, acr: 'pwd' })
  await stored('client-own', {})
  const call = async (token: string, reaches: boolean): Promise<Reply> => {
    const before = gw.upstream.seen.length
    const res = await gw.get('/pay', token)
    t.equal(gw.upstream.seen.length, before + (reaches ? 1 : 0), reaches ? 'reached the upstream' : 'nothing reached the upstream')
    return res
  }
  t.equal((await call('strong-and-fresh', true)).status, 200)
  for (const token of ['password-only', 'client-own']) {
    const res = await call(token, false)
    t.equal(res.status, 401, token)
    t.equal(res.json().error, 'insufficient_user_authentication', token)
  }
  gw.clock.advance(400_000)
  t.equal((await call('strong-and-fresh', false)).status, 401, 'the cached record, now too old')
})

t.test('opaque tokens of a remote issuer: acr and auth_time from the introspection answer (RFC 7662 2.2)', async (t) => {
  const answers = new Map<string, Record<string, unknown>>()
  const idp = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const token = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('token') ?? ''
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(answers.get(token) ?? { active: false }))
    })
  })
  const idpAt = await listen(idp)
  t.teardown(() => closeServer(idp))
  const gw: Harness = await startGateway({
    extra: `
issuers:
  - id: corp
    issuer: https://idp.example
    introspection: { endpoint: ${idpAt.url}/introspect, client_id: gw, client_secret: s, timeout: 1s }
gateway:
  introspection_cache: { ttl: 60s, negative_ttl: 5s }
`,
    routes: (up) => `
  - name: pay
    match: { path: /pay }
    upstream: ${up}
    token: introspect
    issuers: [corp]
    authentication: { acr: [silver], max_age: 10m }
`,
  })
  t.teardown(() => gw.close())
  const now = Math.floor(gw.clock.now() / 1000)
  const active = { active: true, iss: 'https://idp.example', sub: 'alice', aud: PUBLIC_URL, exp: now + 3600 }
  answers.set('strong', { ...active, acr: 'silver', auth_time: now })
  answers.set('weak', { ...active, acr: 'bronze', auth_time: now })
  answers.set('bare', active)
  const before = gw.upstream.seen.length
  t.equal((await gw.get('/pay', 'strong')).status, 200)
  for (const token of ['weak', 'bare']) {
    const res = await gw.get('/pay', token)
    t.equal(res.status, 401, token)
    t.match(res.headers['www-authenticate'], /error="insufficient_user_authentication", .* acr_values="silver", max_age="600", /, token)
  }
  t.equal(gw.upstream.seen.length, before + 1, 'only the strong token reached the upstream')
  gw.clock.advance(11 * 60_000)
  const res = await gw.get('/pay', 'strong')
  t.equal(res.status, 401, 'eleven minutes later the same answer is too old')
  t.match(res.headers['www-authenticate'], /More recent authentication is required/)
})

t.test('StepUp: max_age counts whole seconds, as /authorize does', async (t) => {
  const tenSeconds = new StepUp([{ acr: null, maxAgeSec: 10 }])
  // 10.9 s after a sign-in at 1000: /authorize (floor(now) - auth_time = 10) still takes it as recent.
  t.equal(tenSeconds.check({ auth_time: 1000 }, 1010.9, 0), null, 'a part of a second past max_age: still recent')
  t.equal(tenSeconds.check({ auth_time: 1000 }, 1011, 0)?.description, 'More recent authentication is required', 'a whole second past: too old')
})
