/**
 * The limit step on its own (src/gateway/limits/plan.ts): a client's
 * override of a limit applies to tokens of the built-in authorization
 * server only (another issuer's `web` is another client), store keys are
 * hashes, and the RateLimit fields name each limit once.
 */
import type { IncomingMessage } from 'node:http'
import t from 'tap'
import { ManualClock } from '../../../src/clock.js'
import type { RouteConfig } from '../../../src/config/validated-config.js'
import { policyName } from '../../../src/gateway/limits/fields.js'
import { LimitPlan, StoreOutage } from '../../../src/gateway/limits/plan.js'
import type { TokenIdentity } from '../../../src/gateway/token-identity.js'
import { StoreUnavailableError } from '../../../src/errors.js'
import { createLogger, type Logger } from '../../../src/log.js'
import { Metrics } from '../../../src/metrics.js'
import { MemoryScope } from '../../../src/store/memory/scope.js'
import { MemoryTrafficLimits } from '../../../src/store/traffic-limits/memory.js'
import type { LimitTake, LimitVerdict, TrafficLimitStore } from '../../../src/store/types.js'

const route = {
  name: 'api',
  public: false,
  storeUnavailable: 'closed',
  limits: { rateLimits: [{ name: 'per-client', key: 'client', limit: 2, perMs: 60_000, burst: 0, onStoreFailure: 'allow', tool: null }], quotas: [] },
} as unknown as RouteConfig

function identity(issuerId: string, clientId: string): TokenIdentity {
  return { issuerId, issuer: issuerId, sub: 'alice', clientId, scopes: [], jti: null, grantId: null, exp: 0, jkt: null, x5t: null, claims: {} }
}

const req = { socket: { remoteAddress: '127.0.0.1' }, headers: {} } as unknown as IncomingMessage

function plan(store: TrafficLimitStore): LimitPlan {
  return new LimitPlan(route, {
    store,
    metrics: new Metrics(),
    now: () => 0,
    address: () => '127.0.0.1',
    overrides: new Map([['paying', { 'per-client': 5 }]]),
    outage: new StoreOutage(createLogger('silent')),
  })
}

async function allowedOf(p: LimitPlan, id: TokenIdentity, n: number): Promise<number> {
  let allowed = 0
  for (let i = 0; i < n; i++) if ('fields' in (await p.apply({ req, identity: id, toolCalls: [], mcp: null }))) allowed++
  return allowed
}

t.test("a client's override applies to the built-in issuer's tokens of that client only", async (t) => {
  const p = plan(new MemoryTrafficLimits(new MemoryScope(new ManualClock())))
  t.equal(await allowedOf(p, identity('self', 'paying'), 10), 5, 'the paying tier')
  t.equal(await allowedOf(p, identity('corp', 'paying'), 10), 2, "another issuer's client of the same id: the route's limit")
  t.equal(await allowedOf(p, identity('self', 'free'), 10), 2, 'another client')
  const outcome = await p.apply({ req, identity: identity('self', 'paying'), toolCalls: [], mcp: null })
  t.match(outcome, { refusal: { status: 429, headers: { 'ratelimit-policy': '"per-client";q=5;w=60' } } }, 'the policy names its own limit')
})

t.test('store keys are hashes: no client id, address or tool name is written to the store', async (t) => {
  const takes: LimitTake[] = []
  const store: TrafficLimitStore = {
    take: async (ts) => {
      takes.push(...ts)
      return { allowed: true, states: ts.map(() => ({ remaining: 1, resetMs: 1, waitMs: 0 })) }
    },
  }
  await plan(store).apply({ req, identity: identity('self', 'client-{with}-braces\nand newlines'), toolCalls: [], mcp: null })
  t.equal(takes.length, 1)
  t.match(takes[0]?.key, /^[A-Za-z0-9_-]{22}$/, 'a 128-bit base64url hash')
})

t.test('a policy name is an sf-string whatever a tool pattern holds', async (t) => {
  t.equal(policyName('per-client'), '"per-client"')
  t.equal(policyName('tool:say "hi"\\'), '"tool:say \\"hi\\"\\\\"')
  t.equal(policyName('tool:café'), '"tool:caf%C3%A9"', 'non-ASCII percent-encoded (an sf-string is printable ASCII)')
})

t.test('an outage ends when the store answers, not when a request was decided from a lease', async (t) => {
  const lines: string[] = []
  const log = { warn: (_o: object, msg: string) => lines.push(msg), info: (msg: string) => lines.push(msg) } as unknown as Logger
  const answers: Array<() => Promise<LimitVerdict>> = [
    () => Promise.reject(new StoreUnavailableError('down')),
    () => Promise.resolve({ allowed: true, states: [{ remaining: 1, resetMs: 1, waitMs: 0 }], leased: true }),
    () => Promise.resolve({ allowed: true, states: [{ remaining: 1, resetMs: 1, waitMs: 0 }] }),
  ]
  const store: TrafficLimitStore = { take: () => (answers.shift() as () => Promise<LimitVerdict>)() }
  const p = new LimitPlan({ ...route, public: true } as RouteConfig, {
    store,
    metrics: new Metrics(),
    now: () => 0,
    address: () => '127.0.0.1',
    overrides: new Map(),
    outage: new StoreOutage(log),
  })
  const apply = () => p.apply({ req, identity: identity('self', 'c'), toolCalls: [], mcp: null })
  t.same(await apply(), { fields: [] }, 'store down, public route: served without fields')
  t.equal(lines.length, 1, 'the outage is logged')
  t.ok('fields' in (await apply()))
  t.equal(lines.length, 1, 'a request decided from a lease says nothing of the store')
  await apply()
  t.same(lines.slice(1), ['traffic limits: store answers again'], 'the next store answer ends the outage')
})
