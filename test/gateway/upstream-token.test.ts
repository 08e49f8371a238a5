/**
 * The upstream token modes' parts (src/gateway/upstream-token/): what is
 * signed verifies with jose for every key type bearward signs with; an
 * exchanged token is cached per client token until shortly before its exp,
 * never outlives the client's token and never carries more scope than both
 * allow; an assertion names the request; the header policy strips a
 * client's copy and writes bearward's.
 */
import t from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import { ManualClock } from '../../src/clock.js'
import type { RouteConfig } from '../../src/config/validated-config.js'
import type { RequestContext } from '../../src/context.js'
import { InvalidToken } from '../../src/errors.js'
import { RequestHeaderPolicy } from '../../src/gateway/headers.js'
import type { ForwardRequest } from '../../src/gateway/forward-request.js'
import type { TokenIdentity } from '../../src/gateway/token-identity.js'
import { AssertionSigner } from '../../src/gateway/upstream-token/assertion.js'
import { upstreamCredential } from '../../src/gateway/upstream-token/credential.js'
import { ExchangeMinter, MINTED_TOKEN_TYP } from '../../src/gateway/upstream-token/exchange.js'
import { cappedExp, narrowedScope } from '../../src/gateway/upstream-token/scopes.js'
import { PreparedSigner } from '../../src/gateway/upstream-token/signer.js'
import { TrustedProxies } from '../../src/http/trusted-proxies.js'
import { generatePrivateJwk, KeySet, signingKeyFromJwk, SUPPORTED_ALGS } from '../../src/keys/keyset.js'
import { contextExtras } from '../helpers/trace.js'
import { gatewayConfig, listen, proxyFor, routeConfig, send, silentLog, startUpstream } from './proxy-helpers.js'

const ISSUER = 'https://auth.example.com'
const AUDIENCE = 'https://orders.internal'

const identity = (o: Partial<TokenIdentity> = {}): TokenIdentity => ({
  issuerId: 'self',
  issuer: ISSUER,
  sub: 'alice',
  clientId: 'web',
  scopes: ['openid', 'orders:read', 'orders:write'],
  jti: 'j1',
  grantId: 'g1',
  exp: Math.floor(Date.UTC(2026, 0, 1) / 1000) + 600,
  jkt: null,
  x5t: null,
  claims: {},
  ...o,
})

/** A signer that counts its signatures. */
function counting(signer: PreparedSigner): { signer: PreparedSigner; count: () => number } {
  let n = 0
  const wrapped = Object.create(signer) as PreparedSigner
  wrapped.sign = (payload) => {
    n++
    return signer.sign(payload)
  }
  return { signer: wrapped, count: () => n }
}

t.test('PreparedSigner: every supported algorithm verifies with jose, with the typ and kid asked for', async (t) => {
  for (const alg of SUPPORTED_ALGS) {
    const key = await signingKeyFromJwk(await generatePrivateJwk(alg, `k-${alg}`))
    const jwt = await new PreparedSigner(key, 'at+jwt').sign({ sub: 'alice', n: 1 })
    const { payload, protectedHeader } = await jwtVerify(jwt, createLocalJWKSet({ keys: [key.publicJwk] }), { typ: 'at+jwt' })
    t.same(protectedHeader, { alg, kid: `k-${alg}`, typ: 'at+jwt' }, alg)
    t.same(payload, { sub: 'alice', n: 1 }, alg)
  }
})

t.test('narrowedScope keeps the granted scopes the route allows, in the token order', async (t) => {
  t.equal(narrowedScope(['b', 'a', 'c'], new Set(['a', 'b'])), 'b a')
  t.equal(narrowedScope(['openid'], new Set(['orders:read'])), '')
  t.equal(narrowedScope([], new Set(['a'])), '')
})

t.test('cappedExp: the lifetime, never past the client token’s exp', async (t) => {
  t.equal(cappedExp(1000, 60, 5000), 1060)
  t.equal(cappedExp(1000, 60, 1020), 1020)
  t.equal(cappedExp(1000, 60, Number.NaN), 1060, 'an unusable exp does not poison the claim')
  t.equal(cappedExp(1000, 60, Number.POSITIVE_INFINITY), 1060)
})

t.test('ExchangeMinter: one signature per token and lifetime, renewed before exp, never beyond the token', async (t) => {
  const key = await signingKeyFromJwk(await generatePrivateJwk('ES256', 'k1'))
  const jwks = createLocalJWKSet({ keys: [key.publicJwk] })
  const clock = new ManualClock()
  const { signer, count } = counting(new PreparedSigner(key, MINTED_TOKEN_TYP))
  const minter = new ExchangeMinter({ signer, clock, issuer: ISSUER, audience: AUDIENCE, scopes: ['orders:read', 'payments'], lifetimeSec: 60 })

  // Two requests at once: one signature, one token.
  const [a, b] = await Promise.all([minter.value('tok-1', identity()), minter.value('tok-1', identity())])
  t.equal(count(), 1, 'concurrent first requests share one signature')
  t.equal(a, b)
  t.match(a, /^Bearer /)
  const jwt = (a as string).slice('Bearer '.length)
  const { payload } = await jwtVerify(jwt, jwks, { issuer: ISSUER, audience: AUDIENCE, typ: MINTED_TOKEN_TYP, currentDate: new Date(clock.now()) })
  t.match(payload, { sub: 'alice', client_id: 'web', act: { sub: 'web' }, scope: 'orders:read', grant_id: 'g1' })
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 60)

  const again = minter.value('tok-1', identity())
  t.equal(again, a, 'a cached token is handed out synchronously')
  t.equal(count(), 1)
  t.not(await minter.value('tok-2', identity()), a, 'another client token: another minted token')
  t.equal(count(), 2)

  clock.advance(49_000)
  t.equal(minter.value('tok-1', identity()), a, 'still cached 49 s in')
  clock.advance(1_000)
  const renewed = await minter.value('tok-1', identity())
  t.not(renewed, a, '10 s before exp it is minted anew')
  t.equal(count(), 3)

  // A client token that expires in 20 s: the minted one expires with it.
  const short = identity({ exp: Math.floor(clock.now() / 1000) + 20 })
  const capped = decodeJwt(((await minter.value('tok-3', short)) as string).slice(7))
  t.equal(capped.exp, short.exp, 'never usable after the client token')

  // A token of a client with no person (client_credentials at another issuer): sub is the client.
  const service = decodeJwt(((await minter.value('tok-4', identity({ sub: null, clientId: 'svc' }))) as string).slice(7))
  t.match(service, { sub: 'svc', client_id: 'svc', act: { sub: 'svc' } })
  await t.rejects(Promise.resolve(minter.value('tok-5', identity({ sub: null, clientId: null }))), InvalidToken, 'no one to act for: refused')
})

t.test('ExchangeMinter: the cache is bounded', async (t) => {
  const key = await signingKeyFromJwk(await generatePrivateJwk('ES256', 'k1'))
  const { signer, count } = counting(new PreparedSigner(key, MINTED_TOKEN_TYP))
  const minter = new ExchangeMinter({ signer, clock: new ManualClock(), issuer: ISSUER, audience: AUDIENCE, scopes: [], lifetimeSec: 60, maxEntries: 2 })
  for (const tok of ['a', 'b', 'c']) await minter.value(tok, identity())
  t.equal(count(), 3)
  await minter.value('a', identity())
  t.equal(count(), 4, 'the oldest unused entry was evicted')
})

t.test('AssertionSigner: a new assertion per request, naming the method and URL the upstream receives', async (t) => {
  const key = await signingKeyFromJwk(await generatePrivateJwk('EdDSA', 'k1'))
  const clock = new ManualClock()
  const signer = new AssertionSigner({
    signer: new PreparedSigner(key, 'bearward-assertion+jwt'),
    clock,
    issuer: ISSUER,
    audience: AUDIENCE,
    origin: 'http://10.0.0.5:3000',
    scopes: ['orders:read'],
    lifetimeSec: 30,
  })
  const one = await signer.value(identity(), 'POST', '/api/orders/1')
  const two = await signer.value(identity(), 'POST', '/api/orders/1')
  t.equal(decodeProtectedHeader(one).typ, 'bearward-assertion+jwt')
  const c1 = decodeJwt(one)
  t.match(c1, { iss: ISSUER, sub: 'alice', aud: AUDIENCE, client_id: 'web', scope: 'orders:read', htm: 'POST', htu: 'http://10.0.0.5:3000/api/orders/1' })
  t.equal((c1.exp ?? 0) - (c1.iat ?? 0), 30)
  t.not(c1.jti, decodeJwt(two).jti, 'a jti per request')
  await t.rejects(signer.value(identity({ sub: null, clientId: null }), 'GET', '/'), InvalidToken)
})

t.test('upstreamCredential: passthrough is null; a signed mode without keys stops the build', async (t) => {
  const keys = new KeySet([await signingKeyFromJwk(await generatePrivateJwk('ES256', 'k1'))], false)
  const deps = { keys, issuer: ISSUER, clock: new ManualClock() }
  t.equal(upstreamCredential({ name: 'r', upstream: 'http://up', upstreamToken: null }, deps), null)
  const cfg = { mode: 'exchange' as const, audience: AUDIENCE, scopes: [], lifetimeSec: 60, header: 'authorization' }
  t.throws(() => upstreamCredential({ name: 'r', upstream: 'http://up', upstreamToken: cfg }, null), /needs the authorization server's keys/)
  const exchange = upstreamCredential({ name: 'r', upstream: 'http://up', upstreamToken: cfg }, deps)
  t.equal(exchange?.header, 'authorization')
  await t.rejects(
    Promise.resolve(exchange?.value({ token: null, identity: identity(), method: 'GET', path: '/' })),
    /without the client token/,
    'no token to key the cache by: refused, never signed per request',
  )
  const assertion = upstreamCredential({ name: 'r', upstream: 'wss://ws.internal:8443/x', upstreamToken: { ...cfg, mode: 'assertion', header: 'x-id' } }, deps)
  const value = await assertion?.value({ token: null, identity: identity(), method: 'GET', path: '/x/chat' })
  t.equal(decodeJwt(value ?? '').htu, 'https://ws.internal:8443/x/chat', 'a wss upstream is reached at its https origin')
})

t.test('RequestHeaderPolicy: the credential header is stripped from the client and written by bearward', async (t) => {
  const policy = new RequestHeaderPolicy({
    identityHeaders: { subject: 'X-Auth-Subject', clientId: '', scope: '', issuer: '', claims: {} },
    alsoStrip: ['x-bearward-assertion'],
    forwardAuthorization: false,
    credentialHeader: 'x-orders-identity',
    preserveHost: false,
    upstreamHost: 'up:80',
    trustedProxies: new TrustedProxies([]),
  })
  const pairs: Array<[string, string]> = [
    ['Authorization', 'Bearer client-token'],
    ['DPoP', 'proof'],
    ['X-Orders-Identity', 'forged'],
    ['x_orders_identity', 'forged'],
    ['X-Bearward-Assertion', 'forged'],
    ['Accept', '*/*'],
  ]
  const headers: Record<string, string> = {}
  for (const [name, value] of pairs) headers[name.toLowerCase()] = value
  const req = { method: 'GET', rawHeaders: pairs.flat(), headers, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage
  const out = policy.build(req, identity(), null, false, null, 'signed')
  const names = out.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())
  t.notOk(names.includes('authorization'), 'the client token is not forwarded')
  t.notOk(names.includes('dpop'))
  t.notOk(names.includes('x-bearward-assertion'), 'the default assertion header is stripped on every route')
  t.same(
    out.flatMap((v, i) => (i % 2 === 0 && v.toLowerCase().replaceAll('_', '-') === 'x-orders-identity' ? [out[i + 1]] : [])),
    ['signed'],
    'only bearward’s value arrives',
  )
  const none = policy.build(req, null, null, false, null)
  t.notOk(
    none.some((v, i) => i % 2 === 0 && v.toLowerCase().replaceAll('_', '-') === 'x-orders-identity'),
    'no credential (a passed-through preflight): none at all',
  )
})

t.test('UpstreamProxy: nothing is forwarded when nothing could be signed for the upstream', async (t) => {
  const seen: IncomingMessage[] = []
  const up = await startUpstream((req, res) => {
    seen.push(req)
    res.end('ok')
  })
  const keys = new KeySet([await signingKeyFromJwk(await generatePrivateJwk('ES256', 'k1'))], false)
  const signing = { keys, issuer: ISSUER, clock: new ManualClock() }
  const signed = (mode: 'exchange' | 'assertion'): RouteConfig =>
    routeConfig({
      name: mode,
      upstream: up.url,
      upstreamToken: { mode, audience: AUDIENCE, scopes: [], lifetimeSec: 60, header: mode === 'exchange' ? 'authorization' : 'x-bearward-assertion' },
    })
  const routes = [signed('exchange'), signed('assertion')]
  t.throws(() => proxyFor(routes, gatewayConfig()), /needs the authorization server's keys/, 'no keys: the build stops')
  const { proxy, upstreamOf } = proxyFor(routes, gatewayConfig(), { signing })
  let next: ForwardRequest | null = null
  const server = createServer((req, res) => {
    const ctx = {
      id: 'req-1',
      log: silentLog,
      rawPath: req.url ?? '/',
      rawQuery: '',
      routeLabel: 'r',
      closeListener: null,
      ...contextExtras(),
    } as RequestContext
    res.on('close', () => ctx.closeListener?.onResponseClose())
    proxy.forward(req, res, next as ForwardRequest, ctx)
  })
  const gw = await listen(server)
  t.teardown(async () => {
    await gw.close()
    await proxy.close()
    await up.close()
  })
  const fwd = (route: RouteConfig, o: Partial<ForwardRequest> = {}): ForwardRequest => ({
    route,
    upstream: upstreamOf(route),
    path: '/x',
    query: '',
    identity: identity(),
    body: null,
    ...o,
  })

  next = fwd(routes[0] as RouteConfig, { token: 'client-token' })
  const ok = await send(gw.url, { path: '/x', headers: { authorization: 'Bearer client-token' } })
  t.equal(ok.status, 200)
  t.match(seen[0]?.headers.authorization, /^Bearer eyJ/, 'the minted token, not the client’s')

  next = fwd(routes[0] as RouteConfig)
  const noToken = await send(gw.url, { path: '/x' })
  t.equal(noToken.status, 500, 'exchange without the client token to key its cache by: refused')
  next = fwd(routes[1] as RouteConfig, { identity: identity({ sub: null, clientId: null }) })
  const nobody = await send(gw.url, { path: '/x' })
  t.equal(nobody.status, 401)
  t.match(nobody.headers['www-authenticate'], /error="invalid_token"/)
  t.equal(seen.length, 1, 'neither refusal reached the upstream')
})
