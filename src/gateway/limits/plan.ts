/**
 * The traffic-limit step of a route's plan (docs/traffic.md): its rate
 * limits and quotas, compiled once per Runtime, and decided together for
 * each request in one store call, after the token (who is calling) and, on
 * an MCP route, the body (which tools) are known.
 *
 * Store keys are hashes of the route, the limit and who is counted, never
 * the raw identity, address or tool name a request carries.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { QuotaConfig, RateLimitConfig, RouteConfig, TrafficLimitKey } from '../../config/validated-config.js'
import { type JsonRpcId, type OAuthError, RateLimited, StoreUnavailableError, TemporarilyUnavailable } from '../../errors.js'
import type { Logger } from '../../log.js'
import { labelKey, type Metrics } from '../../metrics.js'
import type { LimitTake, LimitVerdict, QuotaRule, RateRule, TrafficLimitStore } from '../../store/types.js'
import type { FlatHeaders } from '../flat-headers.js'
import { foldName } from '../mcp/name-text.js'
import { NameValues } from '../mcp/names.js'
import type { TokenIdentity } from '../token-identity.js'
import { POLICY_FIELD, STATE_FIELD, policyItem, policyName, stateItem } from './fields.js'

/** What every route's limit step shares in one gateway. */
export interface LimitDeps {
  readonly store: TrafficLimitStore
  readonly metrics: Pick<Metrics, 'trafficLimitDecisions' | 'trafficLimitStoreFailures'>
  /** Now, epoch ms (the Runtime's clock): which quota period a request falls in. */
  readonly now: () => number
  /** The client's address as the gateway derives it (trusted proxies), bucketed (an IPv6 one by its network). */
  readonly address: (req: IncomingMessage) => string
  /** The built-in authorization server's clients' `rate_limits` overrides, by client_id. */
  readonly overrides: ReadonlyMap<string, Readonly<Record<string, number>>>
  readonly outage: StoreOutage
}

/** What the step concluded: the fields every answer carries, or the refusal. */
export type LimitOutcome = { readonly fields: FlatHeaders } | { readonly refusal: OAuthError }

/** The request as the limit step sees it. */
export interface LimitedRequest {
  readonly req: IncomingMessage
  /** null on a public route. */
  readonly identity: TokenIdentity | null
  /** The tool of each tools/call in an MCP body (empty when none). */
  readonly toolCalls: readonly string[]
  /** Set on an MCP route: the refusal is a JSON-RPC error naming this id. */
  readonly mcp: { readonly id: JsonRpcId } | null
}

/**
 * One store outage is logged once, when it starts, and once when a take
 * succeeds again; every request decided without the store is counted.
 */
export class StoreOutage {
  readonly #log: Logger
  #down = false

  constructor(log: Logger) {
    this.#log = log
  }

  failed(err: unknown): void {
    if (this.#down) return
    this.#down = true
    this.#log.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'traffic limits: store unreachable; routes decide by on_store_failure until it answers',
    )
  }

  answered(): void {
    if (!this.#down) return
    this.#down = false
    this.#log.info('traffic limits: store answers again')
  }
}

interface Compiled {
  readonly name: string
  /** `name` as the fields' sf-string. */
  readonly field: string
  readonly key: TrafficLimitKey
  readonly limit: number
  readonly deny: boolean
  /** Hash input prefix: route and limit name. */
  readonly prefix: string
  /** Store keys of the identities this limit counted lately: the same callers repeat, a hash per request is waste. */
  readonly keys: Map<string, string>
  readonly allowed: string
  readonly limited: string
}

interface CompiledRate extends Compiled {
  readonly kind: 'rate'
  readonly perMs: number
  readonly burst: number
  readonly rule: RateRule
}

interface CompiledQuota extends Compiled {
  readonly kind: 'quota'
  readonly per: QuotaConfig['per']
}

type CompiledLimit = CompiledRate | CompiledQuota

/** One limit a request meets: who is counted, and how many units. */
interface Applied {
  readonly limit: CompiledLimit
  readonly take: LimitTake
  /** This client's own limit (an override) or the route's. */
  readonly quota: number
  readonly windowSec: number
}

const DAY_MS = 86_400_000

/**
 * Buckets per `key: tool` limit (and per set of matching patterns) for the
 * tool names the route's config does not name: a caller invents names for
 * free, and on Redis each would be a key of its own (docs/traffic.md).
 */
export const UNNAMED_TOOL_BUCKETS = 1024

/** Called names whose identity is kept worked out (the names of real tools repeat; a flood clears it). */
const MAX_CACHED_TOOL_NAMES = 4096

/** Keys kept per limit (about 100 bytes each): a flood of new identities clears them, never grows them. */
const MAX_CACHED_KEYS = 10_000

/** The store key of `identity` under `limit`, kept for its next request. */
function keyOf(limit: Compiled, identity: string): string {
  const key = keyHash(limit.prefix, identity)
  if (limit.keys.size >= MAX_CACHED_KEYS) limit.keys.clear()
  limit.keys.set(identity, key)
  return key
}

/** A 128-bit hash, base64url: the store key of who is counted by which limit. */
function keyHash(prefix: string, identity: string): string {
  return createHash('sha256')
    .update(prefix + identity)
    .digest('base64url')
    .slice(0, 22)
}

/** The UTC calendar period `nowMs` falls in: its name and its end. */
function periodOf(per: QuotaConfig['per'], nowMs: number): { period: string; startMs: number; endMs: number } {
  const d = new Date(nowMs)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth()
  if (per === 'month') {
    const startMs = Date.UTC(y, m, 1)
    return { period: `m${y}-${m + 1}`, startMs, endMs: Date.UTC(y, m + 1, 1) }
  }
  const startMs = Date.UTC(y, m, d.getUTCDate())
  return { period: `d${y}-${m + 1}-${d.getUTCDate()}`, startMs, endMs: startMs + DAY_MS }
}

/** A lease is this part of a limit (1 %): small enough that units withheld by leases stay a small part of it. */
const LEASE_DIVISOR = 100

/**
 * The GCRA rule of `limit` per `perMs` with `burst` more (types.ts,
 * RateRule), with the lease an instance may take of it on Redis: 1 % of
 * `limit`, only when that is at least 2 units (a limit under 200 stays
 * exact, one store call per request).
 */
export function rateRule(limit: number, perMs: number, burst: number): RateRule {
  const intervalMs = perMs / limit
  const lease = Math.floor(limit / LEASE_DIVISOR)
  const rule = { kind: 'rate', intervalMs, capacityMs: (limit + burst) * intervalMs } as const
  return lease >= 2 ? { ...rule, lease } : rule
}

export class LimitPlan {
  readonly #route: RouteConfig
  readonly #deps: LimitDeps
  readonly #routeLimits: readonly CompiledLimit[]
  /** Tools' own limits, by the tool name or pattern they were written for. */
  readonly #toolLimits: NameValues<CompiledRate>
  /** The route's `mcp.tools` keys (names and patterns), each to itself: which rules a called name meets. */
  readonly #toolRules: NameValues<string>
  /** `key: tool` identities already worked out, by name as called (bounded: cleared when full). */
  readonly #toolIdentities = new Map<string, string>()
  /** The route can serve while the store is down (public, or `store_unavailable: open`): on_store_failure decides. */
  readonly #servesWithoutStore: boolean
  readonly #storeFailure: { readonly allowed: string; readonly refused: string }

  constructor(route: RouteConfig, deps: LimitDeps) {
    const limits = route.limits
    if (limits === null || limits === undefined) throw new Error(`route ${route.name} has no limits`)
    this.#route = route
    this.#deps = deps
    const compile = <T extends CompiledLimit>(name: string, extra: Omit<T, keyof Compiled>, key: TrafficLimitKey, limit: number, deny: boolean): T =>
      ({
        name,
        field: policyName(name),
        key,
        limit,
        deny,
        prefix: `${route.name}\n${name}\n${key}\n`,
        keys: new Map<string, string>(),
        allowed: labelKey({ route: route.name, limit: name, result: 'allowed' }),
        limited: labelKey({ route: route.name, limit: name, result: 'limited' }),
        ...extra,
      }) as T
    const rate = (l: RateLimitConfig): CompiledRate =>
      compile<CompiledRate>(
        l.name,
        { kind: 'rate', perMs: l.perMs, burst: l.burst, rule: rateRule(l.limit, l.perMs, l.burst) },
        l.key,
        l.limit,
        l.onStoreFailure === 'deny',
      )
    const quota = (q: QuotaConfig): CompiledQuota => compile<CompiledQuota>(q.name, { kind: 'quota', per: q.per }, q.key, q.limit, q.onStoreFailure === 'deny')
    this.#routeLimits = [...limits.rateLimits.filter((l) => l.tool === null).map(rate), ...limits.quotas.map(quota)]
    this.#toolLimits = new NameValues(Object.fromEntries(limits.rateLimits.flatMap((l) => (l.tool === null ? [] : [[l.tool, rate(l)]]))))
    const ruleKeys = [...Object.keys(route.mcp?.tools ?? {}), ...limits.rateLimits.flatMap((l) => (l.tool === null ? [] : [l.tool]))]
    this.#toolRules = new NameValues(Object.fromEntries(ruleKeys.map((k) => [k, k])))
    this.#servesWithoutStore = route.public || route.storeUnavailable === 'open'
    this.#storeFailure = {
      allowed: labelKey({ route: route.name, result: 'allowed' }),
      refused: labelKey({ route: route.name, result: 'refused' }),
    }
  }

  /** Decide `r` against every limit it meets, and count it in them when each has room. */
  apply(r: LimitedRequest): LimitOutcome | Promise<LimitOutcome> {
    const applied = this.#applied(r)
    if (applied.length === 0) return { fields: [] }
    let verdict: LimitVerdict | Promise<LimitVerdict>
    try {
      verdict = this.#deps.store.take(applied.map((a) => a.take))
    } catch (err) {
      return this.#failed(err, applied)
    }
    // Decided from leases, at once: no promise, so the request goes on in this turn of the event loop.
    if (!(verdict instanceof Promise)) return this.#decided(verdict, applied, r.mcp)
    return verdict.then(
      (v) => this.#decided(v, applied, r.mcp),
      (err: unknown) => this.#failed(err, applied),
    )
  }

  #decided(verdict: LimitVerdict, applied: readonly Applied[], mcp: LimitedRequest['mcp']): LimitOutcome {
    // Decided from leases, the store was not asked: that says nothing about an outage's end.
    if (verdict.leased !== true) this.#deps.outage.answered()
    return this.#outcome(verdict, applied, mcp)
  }

  #failed(err: unknown, applied: readonly Applied[]): LimitOutcome {
    if (!(err instanceof StoreUnavailableError)) throw err
    return this.#withoutStore(err, applied)
  }

  /** The limits `r` meets, each with the key of who it counts and the units it costs. */
  #applied(r: LimitedRequest): Applied[] {
    const out: Applied[] = []
    const now = this.#deps.now()
    const override =
      r.identity !== null && r.identity.issuerId === 'self' && r.identity.clientId !== null ? this.#deps.overrides.get(r.identity.clientId) : undefined
    const add = (limit: CompiledLimit, identity: string, cost: number): void => {
      const quota = override?.[limit.name] ?? limit.limit
      const key = limit.keys.get(identity) ?? keyOf(limit, identity)
      // A tool name is the body's free text: the memory store keeps its keys apart from identities' (memory.ts).
      const named = limit.key === 'tool'
      if (limit.kind === 'rate') {
        const rule = quota === limit.limit ? limit.rule : rateRule(quota, limit.perMs, limit.burst)
        out.push({ limit, take: { key, cost, rule, named }, quota, windowSec: Math.ceil(limit.perMs / 1000) })
        return
      }
      const { period, startMs, endMs } = periodOf(limit.per, now)
      const rule: QuotaRule = { kind: 'quota', limit: quota, period, endMs }
      out.push({ limit, take: { key, cost, rule, named }, quota, windowSec: Math.round((endMs - startMs) / 1000) })
    }
    for (const limit of this.#routeLimits) {
      if (limit.key !== 'tool') {
        add(limit, this.#identity(limit.key, r), 1)
        continue
      }
      // Per tool: each tool the body calls is counted once per call, under its identity (#toolIdentity).
      for (const [tool, calls] of countBy(r.toolCalls.map((n) => this.#toolIdentity(n)))) add(limit, tool, calls)
    }
    if (r.toolCalls.length > 0 && !this.#toolLimits.empty) {
      const calls = new Map<CompiledRate, Map<string, number>>()
      for (const name of r.toolCalls) {
        for (const limit of this.#toolLimits.of(name)) {
          const identity = limit.key === 'tool' ? this.#toolIdentity(name) : this.#identity(limit.key, r)
          const byIdentity = calls.get(limit) ?? new Map<string, number>()
          byIdentity.set(identity, (byIdentity.get(identity) ?? 0) + 1)
          calls.set(limit, byIdentity)
        }
      }
      for (const [limit, byIdentity] of calls) for (const [identity, cost] of byIdentity) add(limit, identity, cost)
    }
    return out
  }

  /**
   * Who a `key: tool` limit counts for a called tool name. A name the
   * route's config writes out (an `mcp.tools` key without `*`, matched as
   * tool scopes are) is counted under that key, folded (`Search` is
   * `search`). Any other name is counted in one of UNNAMED_TOOL_BUCKETS
   * buckets by a hash of its folded form, apart for each set of patterns it
   * matches: so the keys a caller can make a `key: tool` limit create are
   * bounded whatever names it invents, and an invented name can share a
   * bucket only with tools that need the same scopes (which its caller may
   * call anyway). Two unnamed tools sharing a bucket count together
   * (stricter); naming a tool in `mcp.tools` gives it its own count.
   */
  #toolIdentity(name: string): string {
    const known = this.#toolIdentities.get(name)
    if (known !== undefined) return known
    const rules = this.#toolRules.of(name)
    const exact = rules.find((k) => !k.includes('*'))
    let identity: string
    if (exact !== undefined) identity = foldName(exact)
    else {
      const folded = foldName(name)
      const bucket = createHash('sha256').update(folded).digest().readUInt32BE(0) % UNNAMED_TOOL_BUCKETS
      identity = `\u0000${[...rules].sort().join('\u0000')}\u0000${bucket}`
    }
    // Bounded: invented names would otherwise grow the cache without end.
    if (this.#toolIdentities.size >= MAX_CACHED_TOOL_NAMES) this.#toolIdentities.clear()
    this.#toolIdentities.set(name, identity)
    return identity
  }

  /**
   * Who a limit counts. The issuer is part of every token identity (two
   * issuers may both have a client `web`); a token without the claim a key
   * needs is counted by its client.
   */
  #identity(key: TrafficLimitKey, r: LimitedRequest): string {
    const id = r.identity
    if (key === 'address' || id === null) return this.#deps.address(r.req)
    const client = `${id.issuerId}\nc\n${id.clientId ?? ''}`
    if (key === 'subject') return id.sub === null ? client : `${id.issuerId}\ns\n${id.sub}`
    if (key === 'grant') return id.grantId === null ? client : `${id.issuerId}\ng\n${id.grantId}`
    return client
  }

  #outcome(verdict: LimitVerdict, applied: readonly Applied[], mcp: LimitedRequest['mcp']): LimitOutcome {
    // One item per policy name: a `key: tool` limit applies once per tool a
    // batch calls, and naming each would grow the fields with the batch
    // (megabytes for a large one) under the same name; the tightest state,
    // the one the client must respect, stands for them all.
    const byField = new Map<string, { policy: string; remaining: number; resetSec: number }>()
    let waitMs = 0
    for (const [i, a] of applied.entries()) {
      const state = verdict.states[i]
      if (state === undefined) continue
      const resetSec = Math.ceil(state.resetMs / 1000)
      const seen = byField.get(a.limit.field)
      if (seen === undefined) byField.set(a.limit.field, { policy: policyItem(a.limit.field, a.quota, a.windowSec), remaining: state.remaining, resetSec })
      else if (state.remaining < seen.remaining || (state.remaining === seen.remaining && resetSec > seen.resetSec)) {
        seen.remaining = state.remaining
        seen.resetSec = resetSec
      }
      if (state.waitMs > waitMs) waitMs = state.waitMs
      if (verdict.allowed) this.#deps.metrics.trafficLimitDecisions.incKey(a.limit.allowed)
      else if (state.waitMs > 0) this.#deps.metrics.trafficLimitDecisions.incKey(a.limit.limited)
    }
    const items = [...byField]
    const policy = items.map(([, v]) => v.policy).join(', ')
    const state = items.map(([field, v]) => stateItem(field, v.remaining, v.resetSec)).join(', ')
    if (verdict.allowed) return { fields: [POLICY_FIELD, policy, STATE_FIELD, state] }
    return { refusal: new RateLimited(waitMs / 1000, { [POLICY_FIELD]: policy, [STATE_FIELD]: state }, mcp, { cause: 'traffic limit reached' }) }
  }

  /**
   * The store did not answer. A route that fails closed on the store keeps
   * failing closed; one that can serve without it follows each limit's
   * `on_store_failure`: one `deny` refuses (503), else the request goes on
   * uncounted, without fields (nothing true could be said in them).
   */
  #withoutStore(err: StoreUnavailableError, applied: readonly Applied[]): LimitOutcome {
    this.#deps.outage.failed(err)
    const refuse = !this.#servesWithoutStore || applied.some((a) => a.limit.deny)
    this.#deps.metrics.trafficLimitStoreFailures.incKey(refuse ? this.#storeFailure.refused : this.#storeFailure.allowed)
    if (!refuse) return { fields: [] }
    return {
      refusal: new TemporarilyUnavailable('The rate limits of this resource cannot be checked right now', {
        cause: `traffic limits of route ${this.#route.name}: store unavailable`,
      }),
    }
  }
}

function countBy(values: readonly string[]): Map<string, number> {
  const out = new Map<string, number>()
  for (const v of values) out.set(v, (out.get(v) ?? 0) + 1)
  return out
}
