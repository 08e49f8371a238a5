/**
 * bearward's own paths on `listen`: every endpoint and page of the
 * authorization server and its well-known documents, by what serves each.
 * One list: the AS router (server.ts) registers exactly these, and config
 * load (config/own-path-overlap.ts) refuses a route that would hide one.
 * No handler is imported here, so loading a config does not load the server.
 */
import type { AuthorizationServerConfig } from './validated-config.js'

/** The pages a browser visits, relative to the issuer (handlers: interaction/front-channel-routes.ts, which must cover each). */
export const FRONT_CHANNEL_PATHS = [
  '/authorize',
  '/login',
  '/upstream-login',
  '/consent',
  '/logout',
  '/account',
  '/device',
  '/assets/bearward.css',
  '/passkey-options',
  '/passkeys',
  '/passkey-login',
  '/assets/passkeys.js',
  '/second-factor',
  '/totp',
  '/set-password',
  '/approve',
] as const

export type FrontChannelPath = (typeof FRONT_CHANNEL_PATHS)[number]

/** The back-channel endpoints, relative to the issuer. */
export const BACK_CHANNEL_PATHS = {
  openidConfiguration: '/.well-known/openid-configuration',
  jwks: '/jwks.json',
  token: '/token',
  revoke: '/revoke',
  introspect: '/introspect',
  userinfo: '/userinfo',
  register: '/register',
  par: '/par',
  deviceAuthorization: '/device_authorization',
  /** OpenID CIBA Core 1.0 7: `backchannel_authentication_endpoint`. */
  backchannelAuthentication: '/bc-authorize',
} as const

export type BackChannelEndpoint = keyof typeof BACK_CHANNEL_PATHS

/** The Shared Signals endpoints, relative to the issuer (docs/signals.md): the receiver's push endpoint and the transmitter's. */
export const SIGNALS_PATHS = {
  events: '/signals/events',
  stream: '/ssf/stream',
  status: '/ssf/status',
  verify: '/ssf/verify',
} as const

/** Which Shared Signals endpoints a config serves: a push receiver, a transmitter. */
export interface SignalsEndpoints {
  readonly push: boolean
  readonly transmitter: boolean
}

export type SignalsEndpoint = keyof typeof SIGNALS_PATHS | 'ssfConfiguration'

/** What serves an own path. */
export type OwnEndpoint =
  | { readonly kind: 'page'; readonly page: string }
  | { readonly kind: 'upstream-callback'; readonly provider: string }
  | { readonly kind: 'upstream-logout'; readonly provider: string }
  /** RFC 8414 3.1: the well-known segment between host and the issuer's path. */
  | { readonly kind: 'oauth-metadata' }
  | { readonly kind: 'back'; readonly name: BackChannelEndpoint }
  | { readonly kind: 'signals'; readonly name: SignalsEndpoint }

export interface OwnPath {
  readonly path: string
  readonly endpoint: OwnEndpoint
}

/** Where a provider's sign-in comes back, relative to the issuer: one callback per provider. */
export function callbackPath(providerId: string): string {
  return `/login/upstream/${providerId}/callback`
}

/** `/idp/{id}/backchannel-logout` (OIDC Back-Channel Logout 1.0, from an upstream provider). */
export function backchannelLogoutPath(providerId: string): string {
  return `/idp/${providerId}/backchannel-logout`
}

/** The issuer's path without a trailing slash (`''` for an issuer at the root). */
export function issuerBasePath(issuer: string): string {
  return new URL(issuer).pathname.replace(/\/+$/, '')
}

/**
 * Every own path for `issuer` and `as`, in registration order. `pages`: the
 * front channel's paths (tests serve their own pages).
 */
export function ownPaths(
  issuer: string,
  as: Pick<AuthorizationServerConfig, 'identityProviders' | 'registration'>,
  pages: Iterable<string> = FRONT_CHANNEL_PATHS,
  signals: SignalsEndpoints | null = null,
): OwnPath[] {
  const base = issuerBasePath(issuer)
  const out: OwnPath[] = []
  for (const page of pages) out.push({ path: base + page, endpoint: { kind: 'page', page } })
  for (const p of as.identityProviders) {
    out.push({ path: base + callbackPath(p.id), endpoint: { kind: 'upstream-callback', provider: p.id } })
    if (p.backchannelLogout) out.push({ path: base + backchannelLogoutPath(p.id), endpoint: { kind: 'upstream-logout', provider: p.id } })
  }
  out.push({ path: `/.well-known/oauth-authorization-server${base}`, endpoint: { kind: 'oauth-metadata' } })
  for (const name of Object.keys(BACK_CHANNEL_PATHS) as BackChannelEndpoint[]) {
    if (name === 'register' && as.registration === null) continue
    out.push({ path: base + BACK_CHANNEL_PATHS[name], endpoint: { kind: 'back', name } })
  }
  // RFC 8935 2: where transmitters push their SETs.
  if (signals?.push === true) out.push({ path: base + SIGNALS_PATHS.events, endpoint: { kind: 'signals', name: 'events' } })
  if (signals?.transmitter === true) {
    // SSF 1.0 7.2: the well-known segment goes between host and the issuer's path, as RFC 8414's does.
    out.push({ path: `/.well-known/ssf-configuration${base}`, endpoint: { kind: 'signals', name: 'ssfConfiguration' } })
    for (const name of ['stream', 'status', 'verify'] as const) out.push({ path: base + SIGNALS_PATHS[name], endpoint: { kind: 'signals', name } })
  }
  return out
}

/** How a problem names an own path's endpoint. */
export function describeOwnEndpoint(e: OwnEndpoint): string {
  switch (e.kind) {
    case 'page':
      return `bearward's ${e.page} page`
    case 'upstream-callback':
      return `the sign-in callback of identity provider \`${e.provider}\``
    case 'upstream-logout':
      return `the back-channel logout endpoint of identity provider \`${e.provider}\``
    case 'oauth-metadata':
      return 'the authorization server metadata document'
    case 'back':
      return `bearward's ${BACK_CHANNEL_PATHS[e.name]} endpoint`
    case 'signals':
      return e.name === 'ssfConfiguration' ? 'the Shared Signals transmitter metadata document' : `bearward's ${SIGNALS_PATHS[e.name]} endpoint`
  }
}
