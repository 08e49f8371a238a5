/**
 * What both faces of one Runtime are built from: the process-wide parts, the
 * config, the keys, and what is derived from them once for both faces (the
 * trusted-proxy matcher, the authorization server as a JWT issuer).
 */
import type { Config } from './config/validated-config.js'
import type { FaceDeps, Shared } from './context.js'
import { ClientCertificates } from './http/client-certificate.js'
import { TrustedProxies } from './http/trusted-proxies.js'
import type { KeySet } from './keys/keyset.js'
import { ownAccessTokenIssuer } from './tokens/own-access-token.js'

export function buildFaceDeps(shared: Shared, config: Config, keys: KeySet | null): FaceDeps {
  const trustedProxies = new TrustedProxies(config.gateway.trustedProxies)
  return {
    ...shared,
    config,
    keys,
    trustedProxies,
    clientCertificates: new ClientCertificates(trustedProxies, config.gateway.clientCertificateHeader),
    ownIssuer: keys === null ? null : ownAccessTokenIssuer(config.publicUrl, keys),
  }
}
