/**
 * CORS for the authorization server's back channel.
 *
 * - Public documents (metadata, JWKS): any origin, no credentials (`*`).
 * - Client endpoints (/token, /revoke, /userinfo, /device_authorization):
 *   only origins some client lists in `allowed_origins`. Other origins get
 *   no CORS headers at all, so the browser withholds the answer; their
 *   preflight is answered 204 without `Access-Control-Allow-Origin`, which
 *   the browser treats as a refusal. `Vary: Origin` on every answer keeps
 *   shared caches from mixing them up.
 * No endpoint sets Access-Control-Allow-Credentials: none of them reads a cookie.
 *
 * @see https://fetch.spec.whatwg.org/#http-cors-protocol
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ClientConfig } from '../config/validated-config.js'

export type CorsMode = 'public' | 'clients' | 'none'

/** How long a browser may cache a preflight answer. */
const PREFLIGHT_MAX_AGE_SEC = '600'

/** Headers a script may read besides the CORS-safelisted ones (the Bearer challenge, back-off hints). */
const EXPOSED = 'WWW-Authenticate, Retry-After'

/** Request headers the client endpoints accept cross-origin. */
const ALLOWED_REQUEST_HEADERS = 'Authorization, Content-Type'

/** The CORS decisions of one Runtime; the allowed origins are computed once from the clients. */
export class CorsPolicy {
  readonly #origins: ReadonlySet<string>

  constructor(clients: Iterable<ClientConfig>) {
    const origins = new Set<string>()
    for (const c of clients) for (const o of c.allowedOrigins) origins.add(o)
    this.#origins = origins
  }

  /** True when some client lists `origin`. */
  allows(origin: string | undefined): origin is string {
    return origin !== undefined && this.#origins.has(origin)
  }

  /** Set the CORS headers of an actual (non-preflight) response. */
  apply(mode: CorsMode, req: IncomingMessage, res: ServerResponse): void {
    if (mode === 'public') {
      res.setHeader('access-control-allow-origin', '*')
      return
    }
    if (mode === 'none') return
    res.setHeader('vary', 'Origin')
    const origin = req.headers.origin
    if (this.allows(origin)) {
      res.setHeader('access-control-allow-origin', origin)
      res.setHeader('access-control-expose-headers', EXPOSED)
    }
  }

  /**
   * Answer an OPTIONS request at an endpoint that allows `methods`: 204,
   * with the preflight headers when the origin may use it.
   */
  preflight(mode: CorsMode, methods: readonly string[], req: IncomingMessage, res: ServerResponse): void {
    const isPreflight = req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined
    res.statusCode = 204
    res.setHeader('allow', [...methods, 'OPTIONS'].join(', '))
    if (isPreflight && (mode === 'public' || this.allows(req.headers.origin))) {
      this.apply(mode, req, res)
      res.setHeader('access-control-allow-methods', methods.join(', '))
      res.setHeader('access-control-allow-headers', ALLOWED_REQUEST_HEADERS)
      res.setHeader('access-control-max-age', PREFLIGHT_MAX_AGE_SEC)
    } else if (mode === 'clients') {
      res.setHeader('vary', 'Origin')
    }
    res.setHeader('content-length', 0)
    res.end()
  }
}
