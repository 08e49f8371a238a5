/**
 * What a route trusts, built once per Runtime: the issuers of the config
 * (how each one's JWTs are verified and its opaque tokens checked) and each
 * protected route's validation policy.
 */
import type { Config, IssuerConfig, RemoteIntrospectionConfig, RouteConfig } from '../config/validated-config.js'
import type { Store } from '../store/types.js'
import type { JwtIssuer } from '../tokens/verify-jwt.js'
import type { Tracing } from '../telemetry/tracing.js'
import { RemoteIntrospector, StoreIntrospector, type OpaqueValidator } from './introspection-client.js'
import type { JwksSource } from './jwks-client.js'
import { ScopeRule } from './scope.js'
import { StepUpRule } from './step-up.js'

/** An issuer a route may trust: how its JWTs are verified and its opaque tokens checked. */
export interface TrustedIssuer {
  readonly id: string
  readonly jwt: JwtIssuer | null
  readonly opaque: OpaqueValidator | null
}

/** Everything about a route that token validation needs, built once per Runtime. */
export interface RoutePolicy {
  readonly route: RouteConfig
  readonly jwtIssuers: readonly JwtIssuer[]
  /** By exact `iss`, to choose among several JWT issuers. */
  readonly jwtIssuerByIss: ReadonlyMap<string, JwtIssuer>
  readonly opaque: readonly OpaqueValidator[]
  readonly scopes: ScopeRule
  /** What the sign-in behind the token must be, per method (RFC 9470). */
  readonly stepUp: StepUpRule
  /**
   * Appended to the token hash in verified-token cache keys: what besides
   * the token decides a JWT's validity (audience and trusted issuers).
   */
  readonly cacheScope: string
}

export interface IssuerSources {
  config: Config
  /** The built-in authorization server as a JWT issuer (FaceDeps.ownIssuer), or null when it is not configured. */
  own: JwtIssuer | null
  store: Store
  jwks: JwksSource
  tracing?: Tracing | null
}

function hasJwks(issuer: IssuerConfig): issuer is IssuerConfig & { jwksUri: string } {
  return issuer.jwksUri !== null
}

function hasIntrospection(issuer: IssuerConfig): issuer is IssuerConfig & { introspection: RemoteIntrospectionConfig } {
  return issuer.introspection !== null
}

/**
 * An `issuers[]` entry as a JWT issuer. Only `exp` is required of tokens we
 * did not issue (providers differ in what they write); the types of the
 * claims the gateway reads are checked when it reads them (identityFromClaims).
 */
function remoteJwtIssuer(id: string, issuer: string, algorithms: readonly string[], keys: JwtIssuer['keys']): JwtIssuer {
  return {
    id,
    issuer,
    algorithms: new Set(algorithms),
    algorithmList: Object.freeze([...algorithms]),
    keys,
    requiredClaims: ['exp'],
    claimsWellFormed: () => true,
  }
}

/**
 * The issuers of a config: `self` (when the authorization server is
 * configured: issuer = public_url, keys = its key set, opaque tokens from
 * the store) and every `issuers[]` entry (JWKS client from the process-wide
 * registry, introspection client per Runtime).
 */
export function buildTrustedIssuers(sources: IssuerSources): Map<string, TrustedIssuer> {
  const { config, own } = sources
  const issuers = new Map<string, TrustedIssuer>()
  if (own !== null) {
    issuers.set('self', {
      id: 'self',
      jwt: own,
      opaque: new StoreIntrospector(sources.store, config.publicUrl, {
        maxEntries: config.gateway.tokenCacheMaxEntries,
        ttlSec: config.gateway.introspectionCacheTtlSec,
      }),
    })
  }
  const used = new Set(config.routes.filter((r) => !r.public).flatMap((r) => r.issuers))
  for (const issuer of config.issuers) {
    if (!used.has(issuer.id)) continue
    issuers.set(issuer.id, {
      id: issuer.id,
      jwt: hasJwks(issuer) ? remoteJwtIssuer(issuer.id, issuer.issuer, issuer.algorithms, sources.jwks.client(issuer)) : null,
      opaque: hasIntrospection(issuer) ? new RemoteIntrospector(issuer, { gateway: config.gateway, tracing: sources.tracing ?? null }) : null,
    })
  }
  return issuers
}

/** The validation plan of a protected route. Throws when it names an issuer the config does not define. */
export function buildPolicy(route: RouteConfig, issuers: ReadonlyMap<string, TrustedIssuer>): RoutePolicy {
  const trusted = route.issuers.map((id) => {
    const issuer = issuers.get(id)
    if (issuer === undefined) throw new Error(`route ${route.name}: issuer ${id} is not configured`)
    return issuer
  })
  const jwtIssuers = route.token === 'introspect' ? [] : trusted.flatMap((i) => (i.jwt === null ? [] : [i.jwt]))
  // The built-in issuer first: a store lookup sends the token nowhere.
  const opaque =
    route.token === 'jwt'
      ? []
      : trusted.flatMap((i) => (i.opaque === null ? [] : [i.opaque])).sort((a, b) => Number(b.issuerId === 'self') - Number(a.issuerId === 'self'))
  return {
    route,
    jwtIssuers,
    jwtIssuerByIss: new Map(jwtIssuers.map((i) => [i.issuer, i])),
    opaque,
    scopes: new ScopeRule(route.scopes),
    stepUp: new StepUpRule(route.authentication),
    cacheScope: `\n${route.audiences.join(' ')}\n${route.token}\n${route.issuers.join(',')}`,
  }
}
