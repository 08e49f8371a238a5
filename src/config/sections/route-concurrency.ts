/**
 * A route's `max_in_flight` and `max_streams` (docs/traffic.md, Concurrency
 * limits): how many requests, and how many long-lived streams, one instance
 * lets the route hold at once, route-wide and per caller.
 *
 * ```yaml
 * max_in_flight: 200                                                   # route-wide
 * max_streams: { route: 50, per_key: { key: client, limit: 5 } }      # and per client
 * ```
 */
import { isMap } from 'yaml'
import type { ConcurrencyKey, ConcurrencyLimitConfig, RouteConcurrencyConfig } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { enumAt, keysAt } from '../contract.js'

export const CONCURRENCY_LIMIT_KEYS = keysAt('#/$defs/concurrencyLimit')
export const CONCURRENCY_PER_KEY_KEYS = keysAt('#/$defs/concurrencyLimit/anyOf/1/properties/per_key')
const CONCURRENCY_KEYS = enumAt<ConcurrencyKey>('#/$defs/concurrencyLimit/anyOf/1/properties/per_key/properties/key')

/** Keys that only a token can give: a public route has no client, subject or grant. */
const TOKEN_KEYS: ReadonlySet<ConcurrencyKey> = new Set(['client', 'subject', 'grant'])

/** The route's concurrency limits; null when it sets neither (the plan then has no concurrency step). */
export function readConcurrency(r: Reader, m: MapView, isPublic: boolean): RouteConcurrencyConfig | null {
  const maxInFlight = readLimit(r, m, 'max_in_flight', isPublic)
  const maxStreams = readLimit(r, m, 'max_streams', isPublic)
  if (maxInFlight === null && maxStreams === null) return null
  return { maxInFlight, maxStreams }
}

function readLimit(r: Reader, m: MapView, name: 'max_in_flight' | 'max_streams', isPublic: boolean): ConcurrencyLimitConfig | null {
  const node = m.get(name)
  if (node === undefined || m.isNull(name)) return null
  const where = m.pathOf(name)
  if (!isMap(r.resolve(node))) {
    const route = r.int({ min: 1 })(node, where)
    return route === undefined ? null : { route, perKey: null }
  }
  const limit = r.map(node, where, CONCURRENCY_LIMIT_KEYS)
  if (limit === undefined) return null
  const route = limit.maybe('route', r.int({ min: 1 })) ?? null
  const perKeyNode = limit.get('per_key')
  const perKeyMap = perKeyNode === undefined ? undefined : r.map(perKeyNode, limit.pathOf('per_key'), CONCURRENCY_PER_KEY_KEYS)
  let perKey: ConcurrencyLimitConfig['perKey'] = null
  if (perKeyMap !== undefined) {
    const key = perKeyMap.req('key', r.oneOf(CONCURRENCY_KEYS, { what: 'a concurrency key' }))
    const keyLimit = perKeyMap.req('limit', r.int({ min: 1 }))
    if (key !== undefined && isPublic && TOKEN_KEYS.has(key)) {
      r.problem(perKeyMap.get('key'), perKeyMap.pathOf('key'), `a public route takes no token, so it has no ${key} to count by; use \`key: address\``)
    } else if (key !== undefined && keyLimit !== undefined) {
      perKey = { key, limit: keyLimit }
      if (route !== null && keyLimit > route) {
        r.problem(perKeyMap.get('limit'), perKeyMap.pathOf('limit'), `a per-key limit (${keyLimit}) above the route's (${route}) never applies; lower it`)
      }
    }
  }
  if (route === null && perKeyNode === undefined) {
    r.problem(node, where, `\`${name}\` needs \`route\`, \`per_key\` or both (or a plain number: the route-wide limit)`)
    return null
  }
  return route === null && perKey === null ? null : { route, perKey }
}
