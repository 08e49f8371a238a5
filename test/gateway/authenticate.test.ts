/**
 * The Authenticator on its own: the verified-token cache (per token, per
 * validation scope) and the sharing of one signature check among concurrent
 * first uses of a token. A counting key lookup shows how often a signature
 * was actually checked.
 */
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { parseConfig } from '../../src/config/load.js'
import type { RouteConfig } from '../../src/config/validated-config.js'
import { OAuthError } from '../../src/errors.js'
import { Authenticator } from '../../src/gateway/authenticate.js'
import { planToken } from '../../src/gateway/plan/build.js'
import type { TrustedIssuer } from '../../src/gateway/plan/issuers.js'
import type { TokenPlan } from '../../src/gateway/plan/route-plan.js'
import { StaticKeys, type KeyLookup, type VerificationKey } from '../../src/tokens/verify-jwt.js'
import { createLogger } from '../../src/log.js'
import { mint, newKey, PUBLIC_URL } from './fixture.js'

const clock = new ManualClock(Date.UTC(2026, 0, 1))
const key = await newKey('ES256', 'k1')

/** Two routes that differ only in audience. */
const config = parseConfig(
  `
listen: 127.0.0.1:0
public_url: ${PUBLIC_URL}
authorization_server:
  clients: []
routes:
  - name: a
    match: { path: /a }
    upstream: http://127.0.0.1:9
    token: jwt
  - name: b
    match: { path: /b }
    upstream: http://127.0.0.1:9
    token: jwt
    audience: https://b.example
`,
  '<inline>',
  {},
)

class CountingKeys implements KeyLookup {
  lookups = 0
  readonly #inner = new StaticKeys([{ kid: key.kid, key: key.publicKey, alg: key.alg } satisfies VerificationKey])
  resolve(kid: string | undefined, alg: string): VerificationKey | undefined {
    this.lookups++
    return this.#inner.resolve(kid, alg)
  }
}

function setup(): { auth: Authenticator; keys: CountingKeys; policyA: TokenPlan; policyB: TokenPlan } {
  const keys = new CountingKeys()
  const self: TrustedIssuer = {
    id: 'self',
    jwt: {
      id: 'self',
      issuer: PUBLIC_URL,
      algorithms: new Set(['ES256']),
      algorithmList: ['ES256'],
      keys,
      requiredClaims: ['exp'],
      claimsWellFormed: () => true,
    },
    opaque: null,
  }
  const issuers = new Map([['self', self]])
  const [a, b] = config.routes as [RouteConfig, RouteConfig]
  const auth = new Authenticator({
    clock,
    log: createLogger('silent'),
    revocations: { isRevoked: () => false, healthy: true },
    gateway: { clockSkewSec: 60, tokenCacheMaxEntries: 100 },
  })
  return { auth, keys, policyA: planToken(a, issuers), policyB: planToken(b, issuers) }
}

/** The OAuthError `run` throws or rejects with; null when it succeeds. */
async function refusal(run: () => unknown): Promise<OAuthError | null> {
  try {
    await run()
    return null
  } catch (err) {
    if (err instanceof OAuthError) return err
    throw err
  }
}

t.test('concurrent first uses of one token share one signature check', async (t) => {
  const { auth, keys, policyA } = setup()
  const token = await mint(clock, { key })
  const results = await Promise.all(Array.from({ length: 20 }, () => auth.authenticate(token, policyA, 'GET')))
  t.equal(keys.lookups, 1, 'one verification for 20 concurrent requests')
  t.ok(
    results.every((r) => r.sub === 'alice'),
    'every request got the identity',
  )
  const again = auth.authenticate(token, policyA, 'GET')
  t.notOk(again instanceof Promise, 'a cached token is answered without a promise')
  t.equal(keys.lookups, 1, 'and without another verification')
})

t.test('a failed verification is neither cached nor shared once settled', async (t) => {
  const { auth, keys, policyA } = setup()
  const other = await newKey('ES256', 'k1')
  const forged = await mint(clock, { key: other })
  for (let i = 0; i < 2; i++) {
    const err = await refusal(() => auth.authenticate(forged, policyA, 'GET'))
    t.equal(err?.status, 401, 'refused with 401')
    t.equal(err?.error, 'invalid_token')
  }
  t.equal(keys.lookups, 2, 'each attempt checked again')
})

t.test('a validation holds only for the scope (audience, issuers) it was made under', async (t) => {
  const { auth, keys, policyA, policyB } = setup()
  const forA = await mint(clock, { key })
  t.equal((await auth.authenticate(forA, policyA, 'GET')).sub, 'alice')
  const err = await refusal(() => auth.authenticate(forA, policyB, 'GET'))
  t.equal(err?.status, 401, 'the cached validation for route a does not admit it on route b')
  t.equal((await auth.authenticate(forA, policyA, 'GET')).sub, 'alice', 'still valid on route a')

  const forBoth = await mint(clock, { key, aud: [PUBLIC_URL, 'https://b.example'] })
  await auth.authenticate(forBoth, policyA, 'GET')
  await auth.authenticate(forBoth, policyB, 'GET')
  const before = keys.lookups
  t.notOk(auth.authenticate(forBoth, policyA, 'GET') instanceof Promise)
  t.notOk(auth.authenticate(forBoth, policyB, 'GET') instanceof Promise)
  t.equal(keys.lookups, before, 'a token valid on both routes stays cached for both')
})

t.test("a cached token's signature on another payload is checked, and refused", async (t) => {
  const { auth, keys, policyA } = setup()
  const token = await mint(clock, { key, claims: { sub: 'alice' } })
  t.equal((await auth.authenticate(token, policyA, 'GET')).sub, 'alice')
  t.equal(keys.lookups, 1)
  const [header, , signature] = token.split('.')
  const payload = Buffer.from(
    JSON.stringify({ ...JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()), sub: 'mallory', scope: 'orders:read admin' }),
  ).toString('base64url')
  const forged = `${header}.${payload}.${signature}`
  const err = await refusal(() => auth.authenticate(forged, policyA, 'GET'))
  t.equal(err?.status, 401, 'the forged token is refused')
  t.equal(keys.lookups, 2, 'its signature was checked, not answered from the cache')
  t.equal((auth.authenticate(token, policyA, 'GET') as { sub: string }).sub, 'alice', 'the real token still answers from the cache')
  t.equal(keys.lookups, 2)
})

t.test('the b64token grammar: checked for every token not already validated, before anything else', async (t) => {
  const { auth, keys, policyA } = setup()
  const token = await mint(clock, { key })
  t.equal((await auth.authenticate(token, policyA, 'GET')).sub, 'alice', 'a well-formed token is verified')
  t.equal(keys.lookups, 1)
  // Strings that differ from the cached token only by what the grammar forbids.
  for (const bad of [`${token} extra`, `${token},`, `"${token}"`, `${token}\u00e9`, token.replace('.', '$.')]) {
    const err = await refusal(() => auth.authenticate(bad, policyA, 'GET'))
    t.equal(err?.status, 400, `${JSON.stringify(bad.slice(-8))}: 400`)
    t.equal(err?.error, 'invalid_request')
    t.match(err?.challenge ?? '', /^Bearer/, 'with the Bearer challenge')
  }
  t.equal(keys.lookups, 1, 'no malformed token reached signature verification')
  t.equal((auth.authenticate(token, policyA, 'GET') as { sub: string }).sub, 'alice', 'the cached token itself still answers')

  const unverified = await mint(clock, { key, claims: { sub: 'bob' } })
  const checkedByCaller = await refusal(() => auth.authenticate(`${unverified}$`, policyA, 'GET', true))
  t.equal(checkedByCaller?.status, 401, 'a caller that checked the grammar itself (query, body) is taken at its word: the signature decides')
})
