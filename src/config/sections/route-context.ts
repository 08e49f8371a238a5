import type { GatewayConfig, IssuerConfig } from '../validated-config.js'

/** The built-in authorization server's issuer id. */
export const SELF = 'self'

/** What reading a route needs from the rest of the config. */
export interface RouteContext {
  /** The built-in AS's access token format, or null when there is no AS. */
  selfTokenFormat: 'jwt' | 'opaque' | null
  /** Issuers that validated completely, by id. */
  issuers: ReadonlyMap<string, IssuerConfig>
  /** Every issuer id defined, including those whose section has problems. */
  issuerIds: ReadonlySet<string>
  publicUrl: string
  gateway: GatewayConfig
}
