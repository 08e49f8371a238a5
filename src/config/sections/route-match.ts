/** A route's `match`: the path (prefix), the host and the methods it takes. */
import type { RouteConfig } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { checkRoutePath } from '../route-path.js'
import { isHostname } from '../listen.js'
import { HTTP_TOKEN } from '../values.js'
import { keysAt } from '../contract.js'

export const MATCH_KEYS = keysAt('#/$defs/route/properties/match')

export function readMatch(r: Reader, m: MapView): RouteConfig['match'] | undefined {
  const node = m.get('match')
  if (node === undefined) {
    r.problem(m.node, m.pathOf('match'), 'missing required key `match` (e.g. `match: { path: /orders }`)')
    return undefined
  }
  const match = r.map(node, m.pathOf('match'), MATCH_KEYS)
  if (match === undefined) return undefined
  const path = match.req('path', r.str({ check: checkRoutePath }))
  const host = match.isNull('host')
    ? null
    : (match.maybe(
        'host',
        r.str({
          check: (v) =>
            /:\d+$/.test(v) && !v.startsWith('[')
              ? `match a host without its port: \`${v.replace(/:\d+$/, '')}\``
              : isHostname(v.replace(/^\[(.*)\]$/, '$1'))
                ? undefined
                : `\`${v}\` is not a host name`,
        }),
      ) ?? null)
  const methods = match.has('methods')
    ? match.maybe(
        'methods',
        r.list(r.str({ check: (v) => (HTTP_TOKEN.test(v) ? undefined : `\`${v}\` is not an HTTP method`) }), {
          nonEmpty: true,
          emptyMessage: 'list at least one method, or remove `methods` to match every method',
        }),
      )
    : null
  const caseInsensitive = match.opt('case_insensitive', r.bool(), false)
  if (path === undefined || methods === undefined) return undefined
  return {
    path,
    host: host === null ? null : host.toLowerCase(),
    methods: methods === null ? null : [...new Set(methods.map((x) => x.toUpperCase()))],
    caseInsensitive,
  }
}
