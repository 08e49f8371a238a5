import type { Audit } from './audit/trail.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Clock } from './clock.js'
import type { Config } from './config/validated-config.js'
import type { KeySet } from './keys/keyset.js'
import type { TrustedProxies } from './http/trusted-proxies.js'
import type { ClientCertificates } from './http/client-certificate.js'
import type { JwtIssuer } from './tokens/verify-jwt.js'
import type { Logger } from './log.js'
import type { Metrics } from './metrics.js'
import type { RevocationList } from './store/revocation-list.js'
import type { RequestTrace, Tracing } from './telemetry/tracing.js'
import type { Store } from './store/types.js'

/**
 * What lives for the whole process and is shared by every Runtime: a reload
 * swaps the config-derived parts, never these.
 */
export interface Shared {
  readonly clock: Clock
  readonly log: Logger
  readonly store: Store
  readonly revocations: RevocationList
  readonly metrics: Metrics
  /** Trace context and span export (process-wide: a change of `telemetry` takes a restart). */
  readonly tracing: Tracing
  /** The audit trail (src/audit/trail.ts; process-wide: a change of `audit` takes a restart). */
  readonly audit: Audit
}

/** Per-request state, created by the dispatcher in src/app.ts. */
export interface RequestContext {
  /** Request id (generated, or the incoming X-Request-Id when trusted). */
  readonly id: string
  /** Logger bound to this request id. */
  readonly log: Logger
  /** The raw path of req.url (before normalization), e.g. `/orders/1`. */
  readonly rawPath: string
  /** The raw query string without `?`, or ''. */
  readonly rawQuery: string
  /**
   * Host of an absolute-form request target (RFC 9112 3.2.2), lower-cased,
   * already checked against Host by the dispatcher; null or absent for
   * origin-form. Both faces route on `rawPath` either way.
   */
  readonly targetHost?: string | null
  /** Label for metrics and the access log: an endpoint (`as:token`) or a route name. */
  routeLabel: string
  /** The request's trace (W3C Trace Context): continued from the client or new. */
  readonly trace: RequestTrace
  /** The matched route's path template (`http.route` of the request's span), once known. */
  httpRoute: string | null
  /** The client the token was issued to, once the gateway admitted the request (for the request's span). */
  clientId: string | null
  /** The token's subject, once the gateway admitted the request (the access line's `sub`, unless `log.access_sub: false`). */
  sub?: string | null
  /** For a refusal, its reason code (`expired`, `revoked`, `insufficient_scope`, `invalid_grant`…): the access line's `reason`. */
  refusal?: string | null
  /**
   * Told once when the response closes, finished or cut off by the client.
   * Whoever creates the context calls it from the response's one `close`
   * listener; the proxy sets it to abort the upstream exchange of a client
   * that went away (one listener per request, not one per layer).
   */
  closeListener: ResponseCloseListener | null
}

/** See RequestContext.closeListener. */
export interface ResponseCloseListener {
  onResponseClose(): void
  /**
   * The request can no longer complete (its body timed out) and is about to
   * be answered by the dispatcher: stop the work done for it (the proxy
   * aborts its upstream exchange, so the upstream is not left with half a body).
   */
  onRequestAbandoned?(): void
}

/** A request handler for one face (authorization server or gateway). */
export interface Face {
  /**
   * Handle the request if this face owns it; return false (without touching
   * the response) when it does not.
   */
  handle(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): Promise<boolean>
  /**
   * Whether `handle` would take a request for this raw path. Optional; when
   * present the dispatcher asks it first, so requests for other faces cost
   * no promise here.
   */
  owns?(rawPath: string): boolean
  /** Release per-runtime resources (connection pools, timers) after the runtime is swapped out and drained. */
  close(): Promise<void>
}

/**
 * The gateway: it decides synchronously whether a route takes the request,
 * and then answers it in every case (refusals, upstream failures and
 * unexpected errors included), so the dispatcher has nothing to await.
 */
export interface GatewayFace {
  /** true when a route took the request (it is answered); false, untouched, when none matches. */
  handle(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): boolean
  close(): Promise<void>
  /** Handle an HTTP upgrade; returns false when no route matches (the caller answers 404 and closes). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext): Promise<boolean>
}

/** Everything a face is built from. */
export interface FaceDeps extends Shared {
  readonly config: Config
  /** The authorization server's keys; null when `authorization_server` is not configured. */
  readonly keys: KeySet | null
  /**
   * `gateway.trusted_proxies` as one matcher, built once per Runtime and used
   * by both faces: the gateway for forwarding headers, the authorization
   * server for the address its throttles key on.
   */
  readonly trustedProxies: TrustedProxies
  /**
   * The client certificate of a request (RFC 8705): from the TLS connection,
   * or from `gateway.client_certificate_header` when a trusted proxy sent it;
   * and the header names the gateway strips (http/client-certificate.ts).
   */
  readonly clientCertificates: ClientCertificates
  /**
   * The authorization server as a JWT issuer (its URL, keys and claim rule;
   * src/tokens/own-access-token.ts), built once per Runtime so both faces
   * verify its access tokens alike; null when it is not configured.
   */
  readonly ownIssuer: JwtIssuer | null
}
