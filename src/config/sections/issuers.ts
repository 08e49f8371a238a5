/**
 * `issuers[]`: trusted issuers other than the built-in one (`self`). Tokens
 * from them are validated with their JWKS (RFC 7517) or by remote
 * introspection (RFC 7662). The accepted algorithms are fixed here and never
 * taken from a token (RFC 8725 3.1); symmetric and `none` are refused.
 */
import type { Node } from 'yaml'
import type { IssuerConfig, RemoteIntrospectionConfig } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { UniqueSet } from '../unique.js'
import { checkHttpUrl } from '../values.js'
import { enumAt, keysAt } from '../contract.js'

export const ISSUER_KEYS = keysAt('#/$defs/issuer')
export const INTROSPECTION_KEYS = keysAt('#/$defs/issuer/properties/introspection')
export const JWKS_KEYS = keysAt('#/$defs/issuer/properties/jwks')

/** Asymmetric JWS algorithms (RFC 7518 3.1, RFC 8037). */
export const ALGORITHMS = enumAt<string>('#/$defs/issuer/properties/algorithms')

const SYMMETRIC =
  'symmetric algorithms are refused: a shared secret would let every resource server mint tokens; use an asymmetric algorithm such as RS256 or ES256'
const REFUSED_ALGORITHMS: Readonly<Record<string, string>> = {
  HS256: SYMMETRIC,
  HS384: SYMMETRIC,
  HS512: SYMMETRIC,
  none: '`none` means unsigned tokens and is never accepted (RFC 8725 3.1)',
}

/** Issuer ids: short names used in `routes[].issuers`. */
const ISSUER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/

export interface ReadIssuers {
  /** The issuers that validated completely. */
  issuers: IssuerConfig[]
  /**
   * Every id defined, complete or not: a route naming an issuer whose own
   * section has a problem gets no second, misleading "unknown issuer".
   */
  ids: Set<string>
}

export function readIssuers(r: Reader, node: Node, path: string, selfIssuer: string | null): ReadIssuers {
  const issuers: IssuerConfig[] = []
  const allIds = new Set<string>()
  const ids = new UniqueSet(r, 'issuer id')
  const issuerUrls = new UniqueSet(r, 'issuer')
  for (const item of r.items(node, path) ?? []) {
    const m = r.map(item.node, item.path, ISSUER_KEYS)
    if (m === undefined) continue
    const id = m.req(
      'id',
      r.str({
        check: (v) =>
          v === 'self'
            ? '`self` is the built-in authorization server; give this issuer another id'
            : ISSUER_ID.test(v)
              ? undefined
              : 'an issuer id is letters, digits, `.`, `_` and `-`, starting with a letter or digit',
      }),
    )
    const issuer = m.req('issuer', r.str({ check: (v) => checkHttpUrl(v) }))
    const jwksUri = m.isNull('jwks_uri') ? null : (m.maybe('jwks_uri', r.str({ check: (v) => checkHttpUrl(v, { query: true }) })) ?? null)
    const algorithms = [
      ...new Set(
        m.opt('algorithms', r.list(r.oneOf(ALGORITHMS, { refused: REFUSED_ALGORITHMS, what: 'an accepted algorithm' }), { nonEmpty: true }), [
          'RS256',
          'ES256',
        ]),
      ),
    ]
    const introspection = !m.has('introspection') || m.isNull('introspection') ? null : readIntrospection(r, m.get('introspection'), m.pathOf('introspection'))
    const jwks = r.map(m.get('jwks'), m.pathOf('jwks'), JWKS_KEYS)
    const minTtlSec = jwks?.opt('min_ttl', r.seconds(), 300) ?? 300
    const maxTtlSec = jwks?.opt('max_ttl', r.seconds(), 86400) ?? 86400
    if (jwks !== undefined && minTtlSec > maxTtlSec) {
      r.problem(jwks.get('min_ttl') ?? jwks.get('max_ttl'), jwks.pathOf('min_ttl'), `\`min_ttl\` (${minTtlSec}s) must not exceed \`max_ttl\` (${maxTtlSec}s)`)
    }
    const hasJwksUri = m.has('jwks_uri') && !m.isNull('jwks_uri')
    const hasIntrospection = m.has('introspection') && !m.isNull('introspection')
    if (!hasJwksUri && !hasIntrospection) {
      r.problem(m.node, item.path, 'an issuer needs `jwks_uri` (to verify JWTs), `introspection` (to check opaque tokens), or both')
    }
    const fresh = id !== undefined && ids.add(id, m.get('id'), m.pathOf('id'))
    if (id !== undefined) allIds.add(id)
    if (issuer !== undefined) {
      issuerUrls.add(issuer, m.get('issuer'), m.pathOf('issuer'))
      if (issuer === selfIssuer) {
        r.problem(
          m.get('issuer'),
          m.pathOf('issuer'),
          `\`${issuer}\` is the built-in authorization server's issuer (public_url); refer to it as \`self\` in routes instead`,
        )
      }
    }
    // `introspection` undefined here means present but refused (problem recorded).
    if (!fresh || issuer === undefined || introspection === undefined) continue
    issuers.push({
      id,
      issuer,
      jwksUri,
      algorithms,
      introspection,
      jwks: {
        minTtlSec,
        maxTtlSec,
        cooldownSec: jwks?.opt('cooldown', r.seconds(), 30) ?? 30,
        staleSec: jwks?.opt('stale', r.seconds(), 86400) ?? 86400,
        firstFetchWaitMs: jwks?.opt('first_fetch_wait', r.millis(), 2000) ?? 2000,
        timeoutMs: jwks?.opt('timeout', r.millis({ min: 1 }), 5000) ?? 5000,
      },
    })
  }
  return { issuers, ids: allIds }
}

function readIntrospection(r: Reader, node: Node | undefined, path: string): RemoteIntrospectionConfig | undefined {
  const m = r.map(node, path, INTROSPECTION_KEYS)
  if (m === undefined) return undefined
  const endpoint = m.req('endpoint', r.str({ check: (v) => checkHttpUrl(v) }))
  const clientId = m.req('client_id', r.str())
  const clientSecret = m.req('client_secret', r.str())
  const timeoutMs = m.opt('timeout', r.millis({ min: 1 }), 2000)
  if (endpoint === undefined || clientId === undefined || clientSecret === undefined) return undefined
  return { endpoint, clientId, clientSecret, timeoutMs }
}
