/**
 * A route's traffic limits (docs/traffic.md): `rate_limits[]`, `quotas[]`,
 * and the `rate_limit` of a tool's rule on an MCP route (`mcp.tools.<name>:
 * { scopes, rate_limit }`), which is read here from the same mapping the MCP
 * section reads its scopes from, so either can gain keys alone.
 */
import { isMap, type Node } from 'yaml'
import type { McpRouteConfig, QuotaConfig, RateLimitConfig, RouteLimitsConfig, StoreFailureMode, TrafficLimitKey } from '../validated-config.js'
import { enumAt, keysAt } from '../contract.js'
import type { MapView, Reader } from '../reader.js'
import { childPath } from '../key-path.js'

export const RATE_LIMIT_KEYS = keysAt('#/$defs/rateLimit')
export const QUOTA_KEYS = keysAt('#/$defs/quota')
export const TOOL_RATE_LIMIT_KEYS = keysAt('#/$defs/toolRateLimit')
const OVERRIDE_KEYS = keysAt('#/$defs/client/properties/rate_limits/additionalProperties')
const LIMIT_KEYS = enumAt<TrafficLimitKey>('#/$defs/rateLimit/properties/key')
const QUOTA_PERIODS = enumAt<QuotaConfig['per']>('#/$defs/quota/properties/per')
const FAILURE_MODES = enumAt<StoreFailureMode>('#/$defs/rateLimit/properties/on_store_failure')

const LIMIT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
/** Shorter than a second, Retry-After (whole seconds) could not say when to come back. */
const MIN_PER_MS = 1000
/** The defaults of a limit's optional keys, written once (docs/configuration.md reads them). */
export const LIMIT_DEFAULTS = Object.freeze({ burst: 0, onStoreFailure: 'allow' as StoreFailureMode, toolKey: 'client' as TrafficLimitKey })

/** The keys that need a token's identity: a public route has none to count by. */
const IDENTITY_KEYS: ReadonlySet<TrafficLimitKey> = new Set(['client', 'subject', 'grant', 'tool'])

interface RouteShape {
  readonly isPublic: boolean
  readonly mcp: McpRouteConfig | null
}

/** Read `rate_limits`, `quotas` and the tools' `rate_limit`; null when the route sets none. */
export function readRouteLimits(r: Reader, m: MapView, shape: RouteShape): RouteLimitsConfig | null {
  const names = new Map<string, Node | undefined>()
  const unique = (name: string, node: Node | undefined, path: string): void => {
    const earlier = names.get(name)
    if (names.has(name)) r.problem(node, path, `a limit named \`${name}\` is already defined on this route (${r.lineOf(earlier)}); names are unique per route`)
    names.set(name, node)
  }
  const rateLimits: RateLimitConfig[] = []
  const quotas: QuotaConfig[] = []
  for (const item of m.has('rate_limits') ? (r.items(m.get('rate_limits') as Node, m.pathOf('rate_limits')) ?? []) : []) {
    const { name, limit } = readRateLimit(r, item.node, item.path, shape)
    if (name !== undefined) unique(name, item.node, item.path)
    if (limit !== undefined) rateLimits.push(limit)
  }
  for (const item of m.has('quotas') ? (r.items(m.get('quotas') as Node, m.pathOf('quotas')) ?? []) : []) {
    const { name, quota } = readQuota(r, item.node, item.path, shape)
    if (name !== undefined) unique(name, item.node, item.path)
    if (quota !== undefined) quotas.push(quota)
  }
  rateLimits.push(...readToolLimits(r, m, shape))
  return rateLimits.length === 0 && quotas.length === 0 ? null : { rateLimits, quotas }
}

function readKey(r: Reader, view: MapView, shape: RouteShape, fallback?: TrafficLimitKey): TrafficLimitKey | undefined {
  const read = r.oneOf(LIMIT_KEYS, { what: 'a limit key' })
  const key = fallback === undefined ? view.req('key', read) : view.opt('key', read, fallback)
  if (key === undefined) return undefined
  if (shape.isPublic && IDENTITY_KEYS.has(key)) {
    r.problem(view.get('key') ?? view.node, view.pathOf('key'), `a public route checks no token, so there is no ${key} to count by; use \`key: address\``)
    return undefined
  }
  if (key === 'tool' && shape.mcp === null) {
    r.problem(view.get('key') ?? view.node, view.pathOf('key'), '`key: tool` counts MCP tool calls: only an MCP route (`mcp`) has them')
    return undefined
  }
  return key
}

function readRateLimit(r: Reader, node: Node, path: string, shape: RouteShape): { name: string | undefined; limit: RateLimitConfig | undefined } {
  const v = r.map(node, path, RATE_LIMIT_KEYS)
  if (v === undefined) return { name: undefined, limit: undefined }
  const name = v.req('name', r.str({ check: (s) => (LIMIT_NAME.test(s) ? undefined : 'a limit name is letters, digits, `.`, `_` and `-`') }))
  const key = readKey(r, v, shape)
  const limit = v.req('limit', r.int({ min: 1 }))
  const perMs = v.req('per', r.millis({ min: MIN_PER_MS }))
  const burst = v.opt('burst', r.int({ min: 0 }), LIMIT_DEFAULTS.burst)
  const onStoreFailure = v.opt('on_store_failure', r.oneOf(FAILURE_MODES, { what: 'a store failure mode' }), LIMIT_DEFAULTS.onStoreFailure)
  if (name === undefined || key === undefined || limit === undefined || perMs === undefined) return { name, limit: undefined }
  return { name, limit: { name, key, limit, perMs, burst, onStoreFailure, tool: null } }
}

function readQuota(r: Reader, node: Node, path: string, shape: RouteShape): { name: string | undefined; quota: QuotaConfig | undefined } {
  const v = r.map(node, path, QUOTA_KEYS)
  if (v === undefined) return { name: undefined, quota: undefined }
  const name = v.req('name', r.str({ check: (s) => (LIMIT_NAME.test(s) ? undefined : 'a limit name is letters, digits, `.`, `_` and `-`') }))
  const key = readKey(r, v, shape)
  const limit = v.req('limit', r.int({ min: 1 }))
  const per = v.req('per', r.oneOf(QUOTA_PERIODS, { what: 'a quota period' }))
  const onStoreFailure = v.opt('on_store_failure', r.oneOf(FAILURE_MODES, { what: 'a store failure mode' }), LIMIT_DEFAULTS.onStoreFailure)
  if (name === undefined || key === undefined || limit === undefined || per === undefined) return { name, quota: undefined }
  return { name, quota: { name, key, limit, per, onStoreFailure } }
}

/**
 * The `rate_limit` of each tool rule written as a mapping. The MCP section
 * (route-mcp.ts) already reported any problem with the mapping itself; this
 * reads only the `rate_limit` value, so nothing is reported twice.
 */
function readToolLimits(r: Reader, m: MapView, shape: RouteShape): RateLimitConfig[] {
  if (shape.mcp === null) return []
  const mcp = r.resolve(m.get('mcp'))
  if (!isMap(mcp)) return []
  const toolsPair = mcp.items.find((p) => {
    const k = r.resolve(p.key)
    return k !== undefined && 'value' in k && k.value === 'tools'
  })
  const tools = r.resolve(toolsPair?.value)
  if (tools === undefined || !isMap(tools)) return []
  const toolsPath = childPath(m.pathOf('mcp'), 'tools')
  const out: RateLimitConfig[] = []
  for (const tool of r.entries(tools, toolsPath) ?? []) {
    if (tool.key === '' || !isMap(r.resolve(tool.value))) continue
    const rateLimit = (r.entries(tool.value, tool.path) ?? []).find((e) => e.key === 'rate_limit')
    if (rateLimit === undefined) continue
    const v = r.map(rateLimit.value, rateLimit.path, TOOL_RATE_LIMIT_KEYS)
    if (v === undefined) continue
    const key = readKey(r, v, shape, LIMIT_DEFAULTS.toolKey)
    const limit = v.req('limit', r.int({ min: 1 }))
    const perMs = v.req('per', r.millis({ min: MIN_PER_MS }))
    const burst = v.opt('burst', r.int({ min: 0 }), LIMIT_DEFAULTS.burst)
    const onStoreFailure = v.opt('on_store_failure', r.oneOf(FAILURE_MODES, { what: 'a store failure mode' }), LIMIT_DEFAULTS.onStoreFailure)
    if (key === undefined || limit === undefined || perMs === undefined) continue
    out.push({ name: `tool:${tool.key}`, key, limit, perMs, burst, onStoreFailure, tool: tool.key })
  }
  return out
}

/**
 * A client's `rate_limits` overrides (`{ <name>: { limit } }`): the limit
 * name to this client's own `limit`. Whether each name is a limit of some
 * route is checked once the routes are read ({@link checkLimitOverrides}).
 */
export function readClientRateLimits(r: Reader, c: MapView): Record<string, number> | undefined {
  const node = c.get('rate_limits')
  if (node === undefined) return undefined
  const out: Record<string, number> = {}
  for (const e of r.entries(node, c.pathOf('rate_limits')) ?? []) {
    const v = r.map(e.value, e.path, OVERRIDE_KEYS)
    const limit = v?.req('limit', r.int({ min: 1 }))
    if (limit !== undefined) out[e.key] = limit
  }
  return out
}

/**
 * Refuse an override that names no limit of any route: a typo would leave
 * a paying client on the default tier without a word.
 */
export function checkLimitOverrides(
  r: Reader,
  at: Node | undefined,
  clients: ReadonlyArray<{ clientId: string; rateLimits?: Readonly<Record<string, number>> }>,
  routes: ReadonlyArray<{ limits?: RouteLimitsConfig | null }>,
): void {
  const known = new Set<string>()
  for (const route of routes) {
    for (const l of route.limits?.rateLimits ?? []) known.add(l.name)
    for (const q of route.limits?.quotas ?? []) known.add(q.name)
  }
  for (const c of clients) {
    for (const name of Object.keys(c.rateLimits ?? {})) {
      if (known.has(name)) continue
      r.problem(
        at,
        `authorization_server.clients[${c.clientId}].rate_limits.${name}`,
        `no route has a rate limit or quota named \`${name}\`; name one of ${known.size === 0 ? '(none defined)' : [...known].map((k) => `\`${k}\``).join(', ')}`,
      )
    }
  }
}
