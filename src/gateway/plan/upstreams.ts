import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { Pool, buildConnector } from 'undici'
import type { GatewayConfig, RouteConfig, UpstreamPoolConfig } from '../../config/validated-config.js'
import { redactUrl } from '../../log.js'
import type { TrustedProxies } from '../../http/trusted-proxies.js'
import { RequestHeaderPolicy } from '../headers.js'
import { DEFAULT_ASSERTION_HEADER, upstreamCredential, type CredentialDeps, type UpstreamCredential } from '../upstream-token/credential.js'
import { clientCertificateHeaderNames } from '../../http/client-certificate.js'
import { withoutServername } from '../upstream/connector.js'
import { errorCode } from '../upstream/failure.js'
import { WebSocketUpstream } from '../upstream/websocket.js'
import { Balancer, type TargetGroup } from '../upstream/balancer.js'
import { DnsGroup, isHostName, nameResolver } from '../upstream/dns-group.js'
import { UpstreamTargets, type TargetSpec } from '../upstream/targets.js'

/**
 * The upstream step of a route's plan (route-plan.ts): where and how its
 * authorized requests are sent. Built by planUpstreams for every route at
 * once, because routes that reach the same origin with the same options
 * share one pool.
 */
export interface UpstreamPlan {
  /** The route's name, for logs, metrics and the open-exchange registry. */
  readonly name: string
  /** The route's realm, named in a refusal the proxy writes itself (no upstream credential). */
  readonly realm: string
  /** The route's one pool; null on a pooled route, whose balancer picks a target's pool per request. */
  readonly pool: Pool | null
  /** `upstream: [..]` / `upstreams`: the targets and how one is chosen (upstream/balancer.ts); null: one upstream URL. */
  readonly balancer: Balancer | null
  readonly ws: WebSocketUpstream
  /** The upstream URL's own path without a trailing slash (`''` for `/`). */
  readonly basePath: string
  readonly headers: RequestHeaderPolicy
  /** What the upstream gets instead of the client's token (`upstream_token`); null: passthrough. */
  readonly credential: UpstreamCredential | null
  readonly maxBodyBytes: number
  /** The upstream origin for logs (userinfo redacted). */
  readonly label: string
  /** `label`'s host and port, the upstream span's `server.address` and `server.port`: parsed once here, not per traced request. */
  readonly server: { readonly address: string; readonly port: number }
  /**
   * TLS server name for an https upstream (its own host name, or its address
   * for an IP literal), sent with every request; undefined for http.
   */
  readonly servername: string | undefined
}

/**
 * Routes share a Pool when they reach the same origin with the same options
 * (CA bundle and timeouts).
 */
function poolKey(origin: string, caFile: string | null, timeouts: RouteConfig['timeouts']): string {
  return `${origin}\n${caFile ?? ''}\n${timeouts.connectMs}\n${timeouts.headersMs}\n${timeouts.idleMs}`
}

function readCa(route: RouteConfig): string | null {
  if (route.upstreamCaFile === null) return null
  try {
    return readFileSync(route.upstreamCaFile, 'utf8')
  } catch (err) {
    throw new Error(`route ${route.name}: cannot read upstream_ca ${route.upstreamCaFile}: ${errorCode(err)}`)
  }
}

/** `ws:` and `wss:` upstreams are reached over http/https like any other; `h2c:` is http spoken as HTTP/2. */
function httpOrigin(url: URL): string {
  if (url.protocol === 'ws:' || url.protocol === 'h2c:') return `http://${url.host}`
  if (url.protocol === 'wss:') return `https://${url.host}`
  return url.origin
}

/**
 * The upstream URL as http(s): an `h2c://` upstream is an http one whose
 * connections start with the HTTP/2 preface (its WebSocket upgrades, which
 * HTTP/2 has no form of here, go over HTTP/1.1).
 */
function asHttpUrl(upstream: string): URL {
  return new URL(upstream.startsWith('h2c://') ? `http://${upstream.slice('h2c://'.length)}` : upstream)
}

/**
 * undici's connection options. HTTP/2 upstreams: over TLS
 * undici offers `h2` by ALPN (`allowH2`) and speaks whatever the upstream
 * picks; for h2c (`useH2c`, undici 7.10+) it takes every connection as
 * HTTP/2 from its first byte (RFC 9113 3.3, prior knowledge).
 */
export function poolOptions(route: RouteConfig, secure: boolean, ipLiteral: boolean, ca: string | null): Pool.Options {
  const tls = { timeout: route.timeouts.connectMs, ...(ca !== null ? { ca } : {}) }
  const base = { headersTimeout: route.timeouts.headersMs, bodyTimeout: route.timeouts.idleMs }
  if (!route.upstreamHttp2) return { ...base, connect: secure && ipLiteral ? withoutServername(buildConnector(tls)) : tls }
  if (!secure) return { ...base, allowH2: true, connect: buildConnector({ ...tls, allowH2: true, useH2c: true } as buildConnector.BuildOptions) }
  const h2 = { ...tls, allowH2: true }
  return { ...base, allowH2: true, connect: ipLiteral ? withoutServername(buildConnector(h2)) : h2 }
}

/** Every route's upstream step, in the order of the routes, and the pools they share (what close() releases). */
export interface UpstreamPlans {
  readonly upstreams: readonly UpstreamPlan[]
  readonly pools: readonly Pool[]
  /** The pooled routes' balancers, closed (their targets released) after the pools drained. */
  readonly balancers: readonly Balancer[]
}

/**
 * The upstream step of every route, in their order: pools (shared by routes
 * that reach the same origin with the same options), CA bundles, WebSocket
 * upstreams and header rules.
 *
 * @throws Error when a route's upstream URL is not http(s)/ws(s) or its CA
 *   file cannot be read. `trusted` is the Runtime's one trusted-proxy matcher.
 */
export function planUpstreams(
  routes: readonly RouteConfig[],
  gateway: GatewayConfig,
  trusted: TrustedProxies,
  signing: CredentialDeps | null = null,
  targets: UpstreamTargets = new UpstreamTargets(),
): UpstreamPlans {
  const defaults = gateway.identityHeaders
  // Assertion headers (`upstream_assertion.header`, and its default) are
  // stripped on every route: an upstream that takes assertions from one
  // route must not find a client-written one arriving through another.
  const assertionHeaders = routes.flatMap((r) => (r.upstreamToken?.mode === 'assertion' ? [r.upstreamToken.header] : []))
  const identityDefaults = [
    defaults.subject,
    defaults.clientId,
    defaults.scope,
    defaults.issuer,
    ...Object.values(defaults.claims),
    ...(defaults.authorizationDetails === undefined ? [] : [defaults.authorizationDetails]),
  ]
  // A client certificate reaches the gateway from a trusted proxy's header only; no upstream ever learns one from a header.
  // Likewise every route's authorization details header (RFC 9396): a client's copy never reaches an upstream through another route.
  const detailsHeaders = routes.flatMap((r) => (r.identityHeaders.authorizationDetails === undefined ? [] : [r.identityHeaders.authorizationDetails]))
  const alsoStrip = [...identityDefaults, DEFAULT_ASSERTION_HEADER, ...assertionHeaders, ...detailsHeaders, ...clientCertificateHeaderNames(gateway)]
  const pools = new Map<string, Pool>()
  const sockets = new Map<string, WebSocketUpstream>()
  const upstreams: UpstreamPlan[] = []
  const balancers: Balancer[] = []

  // Everything that can throw comes before the first pool is opened, so a
  // refused build leaves no pool behind.
  const cas = routes.map((route) => {
    for (const target of route.upstreamPool?.targets ?? [route.upstream]) {
      if (!['http:', 'https:', 'ws:', 'wss:', 'h2c:'].includes(new URL(target).protocol)) {
        throw new Error(`route ${route.name}: upstream must be an http(s) or ws(s) URL, or h2c://`)
      }
    }
    return readCa(route)
  })
  const credentials = routes.map((route) => upstreamCredential(route, signing))
  for (const [i, route] of routes.entries()) {
    const url = asHttpUrl(route.upstream)
    const ca = cas[i] ?? null
    const origin = httpOrigin(url)
    const key = `${poolKey(origin, route.upstreamCaFile, route.timeouts)}\n${route.upstreamHttp2}`
    const secure = origin.startsWith('https:')
    const upstreamName = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    const ipLiteral = isIP(upstreamName) !== 0
    let pool: Pool | null = null
    let balancer: Balancer | null = null
    if (route.upstreamPool !== null) {
      balancer = planBalancer(route, route.upstreamPool, ca, key, targets)
      balancers.push(balancer)
    } else {
      pool = pools.get(key) ?? null
      if (pool === null) {
        pool = new Pool(origin, poolOptions(route, secure, ipLiteral, ca))
        pools.set(key, pool)
      }
    }
    const handshakeTimeoutMs = route.timeouts.connectMs + route.timeouts.headersMs
    const wsKey = `${key}\n${handshakeTimeoutMs}`
    let ws = sockets.get(wsKey)
    if (ws === undefined) {
      ws = new WebSocketUpstream({ url, ca, handshakeTimeoutMs })
      sockets.set(wsKey, ws)
    }
    const basePath = url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname
    const credential = credentials[i] ?? null
    const label = redactUrl(origin)
    upstreams.push({
      name: route.name,
      realm: route.realm,
      pool,
      balancer,
      ws,
      basePath,
      headers: new RequestHeaderPolicy({
        identityHeaders: route.identityHeaders,
        alsoStrip,
        forwardAuthorization: route.forwardAuthorization,
        credentialHeader: credential?.header ?? null,
        preserveHost: route.preserveHost,
        upstreamHost: url.host,
        trustedProxies: trusted,
      }),
      credential,
      maxBodyBytes: route.maxBodyBytes,
      label,
      server: serverOf(label),
      servername: secure ? upstreamName : undefined,
    })
  }
  return { upstreams, pools: [...pools.values()], balancers }
}

/** The host and port of an origin URL (the scheme's default port when it names none). */
function serverOf(origin: string): { address: string; port: number } {
  const url = new URL(origin)
  return { address: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) }
}

/**
 * A pooled route's balancer: each target acquired from the process-wide
 * registry (kept across reloads), a host name as a DNS group of addresses.
 * Every target shares the first one's scheme and path (checked at load), so
 * the route's pool options and path rewrite hold for all.
 */
function planBalancer(route: RouteConfig, config: UpstreamPoolConfig, ca: string | null, optionsKey: string, registry: UpstreamTargets): Balancer {
  const resolver = nameResolver(config.dnsServers)
  const groups: TargetGroup[] = config.targets.map((target) => {
    const url = asHttpUrl(target)
    const secure = httpOrigin(url).startsWith('https:')
    const name = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    const hostName = isHostName(url)
    const specFor = (dial: string): TargetSpec => ({
      route,
      dial,
      host: url.host,
      servername: secure ? name : undefined,
      // A resolved name is dialled by address but named by its host name: SNI stays on.
      options: poolOptions(route, secure, !hostName, ca),
      optionsKey,
      websocket: { ca, handshakeTimeoutMs: route.timeouts.connectMs + route.timeouts.headersMs },
    })
    if (!hostName) return { target: registry.acquire(specFor(httpOrigin(url))) }
    return { dns: new DnsGroup(new URL(httpOrigin(url)), specFor, registry, resolver, registry.log) }
  })
  return new Balancer(groups, config.balance, registry)
}
