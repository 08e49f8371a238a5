/**
 * A route's upstream: one URL (`upstream: http://...`), or a pool of targets
 * (`upstream: [..]`, or `upstreams: { targets, balance, health, dns }`),
 * docs/traffic.md "Upstream pools". Exactly one of the two keys.
 */
import { isSeq } from 'yaml'
import type { UpstreamPoolConfig } from '../validated-config.js'
import { enumAt, keysAt } from '../contract.js'
import type { MapView, Reader } from '../reader.js'
import { checkHttpUrl, stripTrailingSlash } from '../values.js'

const UPSTREAMS_KEYS = keysAt('#/$defs/route/properties/upstreams')
const HEALTH_KEYS = keysAt('#/$defs/route/properties/upstreams/properties/health')
const DNS_KEYS = keysAt('#/$defs/route/properties/upstreams/properties/dns')
const BALANCES = enumAt<UpstreamPoolConfig['balance']>('#/$defs/route/properties/upstreams/properties/balance')

/** The scheme of a cleartext HTTP/2 upstream (prior knowledge, RFC 9113 3.3). */
export const H2C = 'h2c://'
/** More targets than this is a config mistake, and every one costs a pool and a checker. */
const MAX_TARGETS = 64
const DEFAULT_INTERVAL_MS = 5000
const DEFAULT_CHECK_TIMEOUT_MS = 2000

/** An http(s):// upstream, or `h2c://` with the same shape as http://. */
export function checkUpstreamUrl(value: string): string | undefined {
  if (!value.startsWith(H2C)) return checkHttpUrl(value)
  return checkHttpUrl(`http://${value.slice(H2C.length)}`)?.replace('http://', H2C)
}

/** Scheme and path of a target: what every target of one pool must share (the path rewrite is the route's, not a target's). */
function schemeAndPath(target: string): { scheme: string; path: string } {
  const scheme = target.slice(0, target.indexOf('://'))
  const url = new URL(target.startsWith(H2C) ? `http://${target.slice(H2C.length)}` : target)
  return { scheme, path: url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '') }
}

/**
 * `upstream` (a URL or a list) or `upstreams`. `upstream` is the URL the
 * rest of the route reads (the first target of a pool); undefined after a
 * problem.
 */
export function readRouteUpstream(r: Reader, m: MapView): { upstream: string | undefined; pool: UpstreamPoolConfig | null } {
  if (m.has('upstream') && m.has('upstreams')) {
    r.problem(m.get('upstreams'), m.pathOf('upstreams'), 'a route has `upstream` or `upstreams`, not both')
    return { upstream: undefined, pool: null }
  }
  if (m.has('upstreams')) return readUpstreams(r, m)
  const node = m.get('upstream')
  if (node !== undefined && isSeq(r.resolve(node))) {
    const targets = readTargets(r, m, 'upstream')
    if (targets === undefined) return { upstream: undefined, pool: null }
    const pool: UpstreamPoolConfig = {
      targets,
      balance: 'round_robin',
      health: { path: null, intervalMs: DEFAULT_INTERVAL_MS, timeoutMs: DEFAULT_CHECK_TIMEOUT_MS, unhealthyAfter: 3, healthyAfter: 2 },
      dnsServers: null,
    }
    return { upstream: targets[0], pool }
  }
  const upstream = m.req('upstream', r.str({ check: checkUpstreamUrl }), ' (or `upstreams`)')
  return { upstream: upstream === undefined ? undefined : stripTrailingSlash(upstream), pool: null }
}

function readUpstreams(r: Reader, m: MapView): { upstream: string | undefined; pool: UpstreamPoolConfig | null } {
  const u = r.map(m.get('upstreams'), m.pathOf('upstreams'), UPSTREAMS_KEYS)
  if (u === undefined) return { upstream: undefined, pool: null }
  const targets = readTargets(r, u, 'targets')
  const balance = u.opt('balance', r.oneOf(BALANCES, { what: 'a balancing policy' }), 'round_robin')
  const h = r.map(u.get('health'), u.pathOf('health'), HEALTH_KEYS)
  const path =
    h?.maybe('path', r.str({ check: (v) => (/^\/[^\s#]*$/.test(v) ? undefined : 'a health check path starts with `/` (no spaces, no fragment)') })) ?? null
  const intervalMs = h?.opt('interval', r.millis({ min: 10 }), DEFAULT_INTERVAL_MS) ?? DEFAULT_INTERVAL_MS
  const timeoutMs = h?.opt('timeout', r.millis({ min: 1 }), Math.min(DEFAULT_CHECK_TIMEOUT_MS, intervalMs)) ?? Math.min(DEFAULT_CHECK_TIMEOUT_MS, intervalMs)
  if (timeoutMs > intervalMs) r.problem(h?.get('timeout'), `${u.pathOf('health')}.timeout`, '`timeout` must not exceed `interval`: checks would overlap')
  if (path === null && h?.has('healthy_after') === true) {
    r.problem(
      h.get('healthy_after'),
      h.pathOf('healthy_after'),
      '`healthy_after` counts active checks: set `health.path` too (without it an ejected target is retried after `interval`)',
    )
  }
  const health = {
    path,
    intervalMs,
    timeoutMs,
    unhealthyAfter: h?.opt('unhealthy_after', r.int({ min: 1, max: 100 }), 3) ?? 3,
    healthyAfter: h?.opt('healthy_after', r.int({ min: 1, max: 100 }), 2) ?? 2,
  }
  const d = r.map(u.get('dns'), u.pathOf('dns'), DNS_KEYS)
  const dnsServers = d?.maybe('servers', r.list(r.str(), { nonEmpty: true })) ?? null
  if (targets === undefined) return { upstream: undefined, pool: null }
  return { upstream: targets[0], pool: { targets, balance, health, dnsServers } }
}

/** The target list at `key`: URLs, distinct, one scheme and one path for all. */
function readTargets(r: Reader, m: MapView, key: string): string[] | undefined {
  const node = m.get(key)
  if (node === undefined) {
    r.problem(m.node, m.pathOf(key), `missing required key \`${key}\``)
    return undefined
  }
  const located = r.located(r.str({ check: checkUpstreamUrl }), { nonEmpty: true, emptyMessage: 'a pool needs at least one target' })(node, m.pathOf(key))
  if (located === undefined) return undefined
  if (located.length > MAX_TARGETS) {
    r.problem(node, m.pathOf(key), `at most ${MAX_TARGETS} targets`)
    return undefined
  }
  const targets: string[] = []
  let first: { scheme: string; path: string } | null = null
  for (const item of located) {
    const target = stripTrailingSlash(item.value)
    const shape = schemeAndPath(target)
    if (targets.includes(target)) {
      r.problem(item.node, item.path, `\`${target}\` is listed twice`)
      return undefined
    }
    if (first !== null && (shape.scheme !== first.scheme || shape.path !== first.path)) {
      r.problem(
        item.node,
        item.path,
        `every target of a pool has the same scheme and path (the first is \`${first.scheme}://…${first.path}\`): a request must reach the same resource whichever target serves it`,
      )
      return undefined
    }
    first ??= shape
    targets.push(target)
  }
  return targets
}
