import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { IdentityHeaders } from '../config/validated-config.js'
import { peerAddress, type TrustedProxies } from '../http/trusted-proxies.js'
import { forwardedElement } from './forwarded.js'
import { claimHeaderValue } from './claim-header.js'
import type { FlatHeaders } from './flat-headers.js'
import { canonicalHeaderName, connectionNamed } from './header-names.js'
import { withoutOwnCookies } from './own-cookies.js'
import type { TokenIdentity } from './token-identity.js'

/**
 * Which request headers reach the upstream (response-headers.ts has the
 * other direction). Hop-by-hop headers (RFC 9110 7.6.1) describe one
 * connection and are dropped, with every header the Connection header names.
 * The gateway then adds what only it can vouch for: the client's address
 * (X-Forwarded-*, RFC 7239 `Forwarded`) and who the token speaks for
 * (identity headers). Names are compared canonical (header-names.ts).
 */

/** What to do with one incoming request header. */
const DROP = 0
const AUTHORIZATION = 1
const HOST = 2
const TE = 3
const UPGRADE = 4
const XFF = 5
const XF_PROTO = 6
const XF_HOST = 7
const FORWARDED = 8
const CLIENT_IP = 9
const MAX_FORWARDS = 10
const COOKIE = 11
type Rule =
  | typeof DROP
  | typeof AUTHORIZATION
  | typeof HOST
  | typeof TE
  | typeof UPGRADE
  | typeof XFF
  | typeof XF_PROTO
  | typeof XF_HOST
  | typeof FORWARDED
  | typeof CLIENT_IP
  | typeof MAX_FORWARDS
  | typeof COOKIE

/**
 * Request headers never copied as sent: hop-by-hop ones (RFC 9110 7.6.1, plus
 * the legacy Proxy-Connection), `Expect` (the gateway itself answers
 * `100 Continue` once it has decided to forward; the upstream gets the whole
 * body without asking), `Max-Forwards` (rewritten, RFC 9110 7.6.2), and `Content-Length`, which the proxy sets from the body it sends.
 */
const REQUEST_DROPPED: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'trailer',
  'transfer-encoding',
  // Connection-specific (RFC 7540 3.2.1): the h2c upgrade's settings for
  // this hop, which no upstream connection shares.
  'http2-settings',
  'expect',
  'content-length',
  // The policy judged the request line's method; an upstream framework that
  // honours a method override would run another one (GET judged, DELETE run).
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  // The same for the path: IIS URL Rewrite, Symfony and Zend honour these
  // and serve the path they name instead of the request line's
  // (CVE-2018-14773), so `/public/x` with `X-Original-URL: /admin` would run
  // a protected path the policy never judged.
  'x-original-url',
  'x-rewrite-url',
  'x-override-url',
  'x-original-uri',
  'x-http-destinationurl',
]

/**
 * Headers that name the client's address for frameworks that read them as
 * "the real IP" (nginx real_ip, Akamai, Cloudflare, Fastly, Rails/Express
 * trust-proxy helpers). Like X-Forwarded-For they are believed only from a
 * trusted proxy: from anyone else they are dropped, never passed on.
 */
export const CLIENT_IP_HEADERS: readonly string[] = [
  'x-real-ip',
  'true-client-ip',
  'x-client-ip',
  'x-cluster-client-ip',
  'fastly-client-ip',
  'cf-connecting-ip',
]

/** Every request header name the gateway never passes on as sent (docs/operating.md lists them). */
export const ALWAYS_DROPPED_REQUEST_HEADERS: readonly string[] = REQUEST_DROPPED

/** Per-route settings the request header policy is built from. */
export interface RequestHeaderOptions {
  /** Identity header names for this route (`identity_headers`). */
  identityHeaders: IdentityHeaders
  /** Further names stripped from every request (the gateway-wide defaults), so a route that renames them cannot leave the defaults spoofable. */
  alsoStrip: readonly string[]
  forwardAuthorization: boolean
  /**
   * The header a signed upstream credential travels in (`upstream_token`,
   * src/gateway/upstream-token/), or null: whatever the client sent under
   * that name is dropped, and build's `credential` is written instead.
   */
  credentialHeader?: string | null
  preserveHost: boolean
  /** `host[:port]` of the upstream URL: the Host of WebSocket handshakes unless preserveHost (undici writes it itself for HTTP). */
  upstreamHost: string
  trustedProxies: TrustedProxies
}

/** The trace context the upstream receives (W3C Trace Context): ours, replacing the client's. */
export interface UpstreamTrace {
  readonly traceparent: string
  readonly tracestate: string | null
}

/**
 * The request-side header rules of one route, precomputed per Runtime. One
 * pass over `req.rawHeaders` keeps the client's header order, case and
 * duplicates (e.g. several Cookie lines) for everything that is passed on.
 */
export class RequestHeaderPolicy {
  readonly #rules = new Map<string, Rule>()
  readonly #preserveHost: boolean
  readonly #upstreamHost: string
  readonly #trusted: TrustedProxies
  readonly #identity: readonly [name: string, pick: (id: TokenIdentity) => string | null][]
  readonly #credentialHeader: string | null
  /** `identity_headers.authorization_details` in lower case (RFC 9396), or null: the route sends none. */
  readonly #detailsHeader: string | null

  /** The client's Host is passed on (`preserve_host`): a pool target must not replace it. */
  get preservesHost(): boolean {
    return this.#preserveHost
  }

  constructor(options: RequestHeaderOptions) {
    this.#preserveHost = options.preserveHost
    this.#upstreamHost = options.upstreamHost
    this.#trusted = options.trustedProxies
    for (const name of REQUEST_DROPPED) this.#rules.set(name, DROP)
    this.#rules.set('authorization', options.forwardAuthorization ? AUTHORIZATION : DROP)
    // A DPoP proof travels with the token it proves (RFC 9449 7): forwarded only where the token is.
    this.#rules.set('dpop', options.forwardAuthorization ? AUTHORIZATION : DROP)
    // The client's trace context is replaced by ours (build's `trace`), which names our span as the parent.
    this.#rules.set('traceparent', DROP)
    this.#rules.set('tracestate', DROP)
    this.#rules.set('host', HOST)
    this.#rules.set('te', TE)
    this.#rules.set('upgrade', UPGRADE)
    this.#rules.set('x-forwarded-for', XFF)
    this.#rules.set('x-forwarded-proto', XF_PROTO)
    this.#rules.set('x-forwarded-host', XF_HOST)
    this.#rules.set('forwarded', FORWARDED)
    for (const name of CLIENT_IP_HEADERS) this.#rules.set(name, CLIENT_IP)
    this.#rules.set('max-forwards', MAX_FORWARDS)
    // bearward's own sign-in cookies are the person's session at the authorization server (own-cookies.ts).
    this.#rules.set('cookie', COOKIE)
    const { subject, clientId, scope, issuer, claims } = options.identityHeaders
    for (const name of [subject, clientId, scope, issuer, ...Object.values(claims), ...options.alsoStrip]) {
      if (name !== '') this.#rules.set(canonicalHeaderName(name), DROP)
    }
    // A client's own copy of the signed credential's header (or its `_` variant) never passes.
    this.#credentialHeader = options.credentialHeader?.toLowerCase() ?? null
    if (this.#credentialHeader !== null) this.#rules.set(canonicalHeaderName(this.#credentialHeader), DROP)
    // A client's own copy of the authorization details header never passes, whether or not this request's token has any.
    const details = options.identityHeaders.authorizationDetails ?? ''
    this.#detailsHeader = details === '' ? null : details.toLowerCase()
    if (this.#detailsHeader !== null) this.#rules.set(canonicalHeaderName(this.#detailsHeader), DROP)
    // Sent in lower case: field names are case-insensitive (RFC 9110 5.1),
    // and undici checks a name outside its own table in lower case, so a
    // mixed-case name costs it a lower-casing and a second lookup on every
    // request (docs/performance.md, "Identity headers are written in lower case").
    const identity: [string, (id: TokenIdentity) => string | null][] = []
    if (subject !== '') identity.push([subject.toLowerCase(), (id) => id.sub])
    if (clientId !== '') identity.push([clientId.toLowerCase(), (id) => id.clientId])
    if (scope !== '') identity.push([scope.toLowerCase(), (id) => (id.scopes.length > 0 ? id.scopes.join(' ') : null)])
    if (issuer !== '') identity.push([issuer.toLowerCase(), (id) => id.issuer])
    for (const [claim, name] of Object.entries(claims)) identity.push([name.toLowerCase(), (id) => claimHeaderValue(id.claims[claim])])
    this.#identity = identity
  }

  /**
   * The headers to send upstream for `req`.
   *
   * @param identity who the token speaks for; null on public routes (the
   *   client's identity headers are stripped all the same).
   * @param contentLength the Content-Length of the body actually sent, or null
   *   (no body, or a chunked one).
   * @param upgrade true on the WebSocket path: keep `Upgrade` and send
   *   `Connection: upgrade` (RFC 9110 7.8).
   * @param trace the trace context to send (the client's own is never passed on as sent).
   * @param credential the signed upstream credential's value for this
   *   request (`upstream_token`), sent in the policy's `credentialHeader`.
   * @param details the token's authorization details as the header's value
   *   (src/gateway/authorization-details.ts), sent in `identity_headers.authorization_details`.
   */
  build(
    req: IncomingMessage,
    identity: TokenIdentity | null,
    contentLength: string | null,
    upgrade: boolean,
    trace: UpstreamTrace | null = null,
    credential: string | null = null,
    details: string | null = null,
  ): FlatHeaders {
    const raw = req.rawHeaders
    const named = connectionNamed(req.headers.connection)
    const peer = peerAddress(req.socket)
    const trusted = this.#trusted.has(peer)
    const out: FlatHeaders = []
    let host: string | undefined
    let upgradeValue: string | undefined
    let wantsTrailers = false
    let xff: string | undefined
    let xfProto: string | undefined
    let xfHost: string | undefined
    let forwarded: string | undefined
    let maxForwards: string | undefined

    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string
      const value = raw[i + 1] as string
      const key = canonicalHeaderName(name)
      const rule = this.#rules.get(key)
      if (rule === undefined) {
        // Any other X-Forwarded-* (Port, Prefix, Server...) is as spoofable as For.
        if (key.startsWith('x-forwarded-') && !trusted) continue
        if (named?.has(key)) continue
        out.push(name, value)
        continue
      }
      switch (rule) {
        case DROP:
          break
        case AUTHORIZATION:
          if (named === null || !named.has(key)) out.push(name, value)
          break
        case HOST:
          host ??= value
          break
        case TE:
          // RFC 9110 10.1.4: only "trailers" means anything to the next hop.
          if (value.toLowerCase().includes('trailers')) wantsTrailers = true
          break
        case UPGRADE:
          upgradeValue ??= value
          break
        case XFF:
          if (trusted) xff = xff === undefined ? value : `${xff}, ${value}`
          break
        case XF_PROTO:
          if (trusted) xfProto ??= value
          break
        case XF_HOST:
          if (trusted) xfHost ??= value
          break
        case FORWARDED:
          if (trusted) forwarded = forwarded === undefined ? value : `${forwarded}, ${value}`
          break
        case CLIENT_IP:
          if (trusted && (named === null || !named.has(key))) out.push(name, value)
          break
        case MAX_FORWARDS:
          // RFC 9110 7.6.2: meaningful for TRACE and OPTIONS only, and then
          // decremented by each hop (the gateway answers a 0 itself).
          maxForwards ??= value
          break
        case COOKIE: {
          const kept = withoutOwnCookies(value)
          if (kept !== null && (named === null || !named.has(key))) out.push(name, kept)
          break
        }
      }
    }

    // undici writes the upstream's own host when none is given (the pool's
    // origin, the same `host[:port]`), which also spares it deriving a TLS
    // server name from the header on every request.
    if (this.#preserveHost) out.push('host', host ?? this.#upstreamHost)
    else if (upgrade) out.push('host', this.#upstreamHost)
    if (upgrade && upgradeValue !== undefined) out.push('connection', 'upgrade', 'upgrade', upgradeValue)
    if (contentLength !== null) out.push('content-length', contentLength)
    if (trace !== null) {
      out.push('traceparent', trace.traceparent)
      if (trace.tracestate !== null) out.push('tracestate', trace.tracestate)
    }
    if (wantsTrailers) out.push('te', 'trailers')
    if (maxForwards !== undefined) {
      const method = req.method
      const hops = method === 'TRACE' || method === 'OPTIONS' ? parseMaxForwards(maxForwards) : null
      out.push('max-forwards', hops === null ? maxForwards : String(Math.max(0, hops - 1)))
    }

    // X-Forwarded-For grows by one hop; Proto and Host describe the request the
    // first proxy received, so a trusted proxy's values are kept as they are.
    const proto = (req.socket as Partial<TLSSocket>).encrypted === true ? 'https' : 'http'
    if (peer !== undefined) out.push('x-forwarded-for', xff === undefined ? peer : `${xff}, ${peer}`)
    else if (xff !== undefined) out.push('x-forwarded-for', xff)
    out.push('x-forwarded-proto', xfProto ?? proto)
    const clientHost = xfHost ?? host
    if (clientHost !== undefined) out.push('x-forwarded-host', clientHost)
    // RFC 7239 Forwarded is extended only when a trusted proxy started the
    // chain; X-Forwarded-* already says the same, and every header costs on
    // every request.
    if (forwarded !== undefined) out.push('forwarded', `${forwarded}, ${forwardedElement(peer, host, proto)}`)

    if (identity !== null) {
      for (const [name, pick] of this.#identity) {
        const value = pick(identity)
        if (value !== null && value !== '') out.push(name, value)
      }
    }
    if (credential !== null && this.#credentialHeader !== null) out.push(this.#credentialHeader, credential)
    if (details !== null && this.#detailsHeader !== null) out.push(this.#detailsHeader, details)
    return out
  }
}

/**
 * RFC 9110 7.6.2: Max-Forwards = 1*DIGIT. null when absent or not a number
 * (a malformed value is passed on untouched, as if the field were unknown).
 */
export function parseMaxForwards(value: string | string[] | undefined): number | null {
  if (typeof value !== 'string' || !/^\d{1,9}$/.test(value.trim())) return null
  return Number(value.trim())
}
