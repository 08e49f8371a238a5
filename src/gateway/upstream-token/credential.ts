/**
 * What a route's upstream receives instead of the client's token
 * (`upstream_token`, docs/agents.md): built once per Runtime from the route
 * and the authorization server's signing key, asked once per forwarded
 * request. Either mode replaces the client's Authorization (and DPoP),
 * which a route with a signed mode never forwards, and the header it writes
 * is stripped from what the client sent (src/gateway/headers.ts).
 */
import type { Clock } from '../../clock.js'
import type { UpstreamTokenConfig } from '../../config/validated-config.js'
import type { KeySet } from '../../keys/keyset.js'
import type { TokenIdentity } from '../token-identity.js'
import { ASSERTION_TYP, AssertionSigner } from './assertion.js'
import { ExchangeMinter, MINTED_TOKEN_TYP } from './exchange.js'
import { PreparedSigner } from './signer.js'

/** The header an assertion travels in when `upstream_assertion.header` is not set; stripped from every client request. */
export const DEFAULT_ASSERTION_HEADER = 'x-bearward-assertion'

/** What signing needs from the Runtime: the authorization server's keys and issuer, and the clock. */
export interface CredentialDeps {
  keys: KeySet
  /** bearward's issuer (public_url): `iss` of everything signed. */
  issuer: string
  clock: Clock
}

/** One forwarded request, as the credential needs it. */
export interface CredentialRequest {
  /** The client's access token (the exchange cache key). */
  token: string | null
  identity: TokenIdentity
  method: string
  /** The path the upstream receives (its base path included), without the query. */
  path: string
}

export interface UpstreamCredential {
  /** The request header it travels in, lower case. */
  readonly header: string
  /** Its value for one request: synchronous when nothing needs signing (a cached exchanged token). */
  value(request: CredentialRequest): string | Promise<string>
}

/** `ws:`/`wss:`/`h2c:` upstreams as the http(s) origin the upstream is reached at. */
function httpOrigin(upstream: string): string {
  return new URL(
    upstream
      .replace(/^h2c:\/\//, 'http://')
      .replace(/^ws:\/\//, 'http://')
      .replace(/^wss:\/\//, 'https://'),
  ).origin
}

/**
 * The route's credential, or null for `passthrough`.
 *
 * @throws Error when the route asks for one and there are no keys to sign
 *   with (config load refuses that; this guards a Runtime built otherwise).
 */
export function upstreamCredential(
  route: { name: string; upstream: string; upstreamToken: UpstreamTokenConfig | null },
  deps: CredentialDeps | null,
): UpstreamCredential | null {
  const cfg = route.upstreamToken
  if (cfg === null) return null
  if (deps === null) throw new Error(`route ${route.name}: upstream_token: ${cfg.mode} needs the authorization server's keys`)
  const key = deps.keys.signing
  if (cfg.mode === 'exchange') {
    const minter = new ExchangeMinter({
      signer: new PreparedSigner(key, MINTED_TOKEN_TYP),
      clock: deps.clock,
      issuer: deps.issuer,
      audience: cfg.audience,
      scopes: cfg.scopes,
      lifetimeSec: cfg.lifetimeSec,
    })
    return {
      header: cfg.header,
      value: (r) => {
        // Without the client's token there is nothing to key the cache by: refuse rather than sign per request unseen.
        if (r.token === null) return Promise.reject(new Error('upstream token exchange without the client token'))
        return minter.value(r.token, r.identity)
      },
    }
  }
  const signer = new AssertionSigner({
    signer: new PreparedSigner(key, ASSERTION_TYP),
    clock: deps.clock,
    issuer: deps.issuer,
    audience: cfg.audience,
    origin: httpOrigin(route.upstream),
    scopes: cfg.scopes,
    lifetimeSec: cfg.lifetimeSec,
  })
  return { header: cfg.header, value: (r) => signer.value(r.identity, r.method, r.path) }
}
