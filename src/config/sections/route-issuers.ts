import type { RouteTokenKind } from '../validated-config.js'
import type { Located, MapView, Reader } from '../reader.js'
import { suggest } from '../suggest.js'
import { SELF, type RouteContext } from './route-context.js'

/**
 * A route's `issuers`: the ids it trusts, each checked to exist and to be
 * able to validate the route's token kind. `self` by default when the
 * built-in authorization server is configured.
 */
export function readRouteIssuers(r: Reader, m: MapView, ctx: RouteContext, isPublic: boolean, token: RouteTokenKind): string[] {
  const hasSelf = ctx.selfTokenFormat !== null
  if (!m.has('issuers')) {
    if (hasSelf) return [SELF]
    if (!isPublic) {
      r.problem(
        m.node,
        m.pathOf('issuers'),
        'missing required key `issuers`: there is no `authorization_server`, so name the ids of `issuers[]` this route trusts',
      )
    }
    return []
  }
  const listed: Array<Located<string>> = m.opt('issuers', r.located(r.str(), { nonEmpty: !isPublic }), [])
  const out: string[] = []
  for (const { value: id, node, path } of listed) {
    if (out.includes(id)) continue
    if (id === SELF) {
      if (!hasSelf) {
        r.problem(node, path, '`self` is the built-in authorization server, but there is no `authorization_server` section')
        continue
      }
      if (!isPublic && token === 'jwt' && ctx.selfTokenFormat === 'opaque') {
        r.problem(
          node,
          path,
          '`self` issues opaque access tokens (`authorization_server.access_token.format: opaque`); use `token: introspect` or `token: any` on this route',
        )
        continue
      }
      out.push(id)
      continue
    }
    const issuer = ctx.issuers.get(id)
    if (issuer === undefined && ctx.issuerIds.has(id)) continue // its own section reports the problem
    if (issuer === undefined) {
      const known = [...(hasSelf ? [SELF] : []), ...ctx.issuerIds]
      const guess = suggest(id, known)
      const help =
        guess !== undefined
          ? `did you mean \`${guess}\`?`
          : known.length > 0
            ? `known issuers: ${known.map((k) => `\`${k}\``).join(', ')}`
            : 'define it under `issuers`'
      r.problem(node, path, `unknown issuer \`${id}\`; ${help}`)
      continue
    }
    if (!isPublic && token === 'jwt' && issuer.jwksUri === null) {
      r.problem(node, path, `issuer \`${id}\` has no \`jwks_uri\`, so its JWTs cannot be verified; add one, or use \`token: introspect\``)
      continue
    }
    if (!isPublic && token === 'introspect' && issuer.introspection === null) {
      r.problem(node, path, `issuer \`${id}\` has no \`introspection\` endpoint; add one, or use \`token: jwt\``)
      continue
    }
    out.push(id)
  }
  return out
}
