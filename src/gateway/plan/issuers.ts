/**
 * The issuers routes may trust, built once per Runtime and shared by every
 * route's plan: how each one's JWTs are verified and its opaque tokens
 * checked.
 */
import type { Config, IssuerConfig, RemoteIntrospectionConfig } from '../../config/validated-config.js'
import type { Store } from '../../store/types.js'
import type { JwtIssuer } from '../../tokens/verify-jwt.js'
import type { Tracing } from '../../telemetry/tracing.js'
import { RemoteIntrospector, StoreIntrospector, type OpaqueValidator } from '../introspection-client.js'
import type { JwksSource } from '../jwks-client.js'

/** An issuer a route may trust: how its JWTs are verified and its opaque tokens checked. */
export interface TrustedIssuer {
  readonly id: string
  readonly jwt: JwtIssuer | null
  readonly opaque: OpaqueValidator | null
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
