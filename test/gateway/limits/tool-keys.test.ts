/**
 * `key: tool` limits on Redis (src/gateway/limits/plan.ts, #toolIdentity;
 * docs/traffic.md): a tool the route's config names is counted under its
 * own key; any other name a caller sends falls in one of a bounded number
 * of buckets per set of matching patterns, so invented names cannot create
 * store keys without bound, nor reach the bucket of a tool that needs other
 * scopes. Real Redis; keys counted with SCAN.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { ManualClock } from '../../../src/clock.js'
import type { RouteConfig } from '../../../src/config/validated-config.js'
import { LimitPlan, StoreOutage, UNNAMED_TOOL_BUCKETS } from '../../../src/gateway/limits/plan.js'
import { foldName } from '../../../src/gateway/mcp/name-text.js'
import type { TokenIdentity } from '../../../src/gateway/token-identity.js'
import { createLogger } from '../../../src/log.js'
import { Metrics } from '../../../src/metrics.js'
import { RedisStore } from '../../../src/store/redis.js'
import { readRateLimitFields } from '../../helpers/ratelimit-fields.js'
import { startRedis } from '../../helpers/redis.js'

const redis = await startRedis()
t.teardown(() => redis.stop())
const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 })
t.teardown(() => raw.disconnect())

function route(limit: number): RouteConfig {
  return {
    name: 'mcp',
    public: false,
    storeUnavailable: 'closed',
    mcp: { tools: { search: [], 'admin_*': ['admin'] }, resources: {}, prompts: {} },
    limits: { rateLimits: [{ name: 'per-tool', key: 'tool', limit, perMs: 60_000, burst: 0, onStoreFailure: 'allow', tool: null }], quotas: [] },
  } as unknown as RouteConfig
}

const caller: TokenIdentity = {
  issuerId: 'self',
  issuer: 'self',
  sub: 'mallory',
  clientId: 'mallory',
  scopes: [],
  jti: null,
  grantId: null,
  exp: 0,
  jkt: null,
  x5t: null,
  claims: {},
}
const req = { socket: { remoteAddress: '127.0.0.1' }, headers: {} } as unknown as IncomingMessage

async function plan(t: Test, name: string, limit: number): Promise<{ p: LimitPlan; keys: () => Promise<number> }> {
  const clock = new ManualClock()
  const keyPrefix = `${redis.prefix}${name}:`
  const store = new RedisStore({ url: redis.url, keyPrefix, clock, commandTimeoutMs: 1000 })
  t.teardown(() => store.close())
  const p = new LimitPlan(route(limit), {
    store: store.trafficLimits,
    metrics: new Metrics(),
    now: () => clock.now(),
    address: () => '127.0.0.1',
    overrides: new Map(),
    outage: new StoreOutage(createLogger('silent')),
  })
  const keys = async (): Promise<number> => {
    let n = 0
    let cursor = '0'
    do {
      const [next, found] = await raw.scan(cursor, 'MATCH', `${keyPrefix}tl:*`, 'COUNT', 1000)
      cursor = next
      n += found.length
    } while (cursor !== '0')
    return n
  }
  return { p, keys }
}

/** The bucket plan.ts puts an unnamed tool in. */
function bucketOf(name: string): number {
  return createHash('sha256').update(foldName(name)).digest().readUInt32BE(0) % UNNAMED_TOOL_BUCKETS
}

function remaining(outcome: Awaited<ReturnType<LimitPlan['apply']>>): number | undefined {
  if (!('fields' in outcome)) return undefined
  const fields = outcome.fields
  const headers: Record<string, string> = {}
  for (let i = 0; i < fields.length; i += 2) headers[String(fields[i])] = String(fields[i + 1])
  return readRateLimitFields(headers).states.get('per-tool')?.r
}

t.test('12,000 invented tool names make at most the bucket bound of Redis keys; a named tool keeps its own count', async (t) => {
  const { p, keys } = await plan(t, 'flood', 1000)
  for (let r = 0; r < 4; r++) {
    const names = Array.from({ length: 3000 }, (_, i) => `invented-${r}-${i}`)
    const outcome = await p.apply({ req, identity: caller, toolCalls: names, mcp: null })
    t.ok('fields' in outcome, `flood ${r + 1} allowed (each bucket far under 1000)`)
  }
  const held = await keys()
  t.ok(held <= UNNAMED_TOOL_BUCKETS, `${held} keys for 12,000 names (bound ${UNNAMED_TOOL_BUCKETS})`)
  t.ok(held > UNNAMED_TOOL_BUCKETS / 2, `the names spread over the buckets (${held})`)
  const search = await p.apply({ req, identity: caller, toolCalls: ['Search'], mcp: null })
  t.equal(remaining(search), 999, 'search (named in mcp.tools, any case) is counted apart: the flood did not touch it')
  t.equal(await keys(), held + 1, 'one key of its own')
})

t.test('an unnamed tool shares its bucket only with names that meet the same patterns', async (t) => {
  const { p } = await plan(t, 'share', 2)
  const target = 'report'
  const b = bucketOf(target)
  let twin = ''
  let admin = ''
  for (let i = 0; twin === '' || admin === ''; i++) {
    if (twin === '' && bucketOf(`x-${i}`) === b) twin = `x-${i}`
    if (admin === '' && bucketOf(`admin_${i}`) === b) admin = `admin_${i}`
  }
  const call = async (name: string): Promise<boolean> => 'fields' in (await p.apply({ req, identity: caller, toolCalls: [name], mcp: null }))
  t.same([await call(target), await call(target), await call(target)], [true, true, false], 'report: 2 a minute')
  t.equal(await call(twin), false, `${twin}, in report's bucket and meeting no pattern either, counts with it (stricter: the documented cost)`)
  t.equal(await call(admin), true, `${admin}, same hash but under admin_* (other scopes), has a bucket of its own`)
})
