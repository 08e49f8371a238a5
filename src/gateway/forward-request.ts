import type { RouteConfig } from '../config/validated-config.js'
import type { FlatHeaders } from './flat-headers.js'
import type { ConcurrencyPlan, ConcurrencySlot } from './concurrency.js'
import type { UpstreamPlan } from './plan/upstreams.js'
import type { TokenIdentity } from './token-identity.js'
import type { ResponseRewriter } from './upstream/rewrite.js'

/** What the gateway decided to forward, handed to the proxy. */
export interface ForwardRequest {
  route: RouteConfig
  /** The upstream step of the route's plan: the proxy looks nothing up. */
  upstream: UpstreamPlan
  /** The normalized path the policy judged (after strip_prefix when set); always starts with `/`. */
  path: string
  /** Raw query string without `?`, or ''. With token_in_query, the access_token parameter is already removed. */
  query: string
  /** null on public routes and passed-through preflights. */
  identity: TokenIdentity | null
  /** The client's access token, where a signed upstream credential is cached by it (`upstream_token: exchange`); absent: none. */
  token?: string | null
  /** When the gateway had to read the body (form token), the bytes to send instead of the stream. */
  body: Buffer | null
  /** Rewrites the upstream's answer (an MCP list filtered by the token); absent: passed through. */
  rewriter?: ResponseRewriter | null
  /** RateLimit-Policy and RateLimit (limits/fields.ts), replacing the upstream's own; absent: the route has no limits. */
  fields?: FlatHeaders
  /** The route's concurrency step, where a slot is taken before forwarding; absent: the route sets no limit. */
  concurrency?: ConcurrencyPlan | null
  /** The slot taken for this exchange, told of the answer's Content-Type (an event stream moves it); absent: none. */
  slot?: ConcurrencySlot | null
  /** The token's authorization details for `identity_headers.authorization_details` (RFC 9396), as the header's value; absent: none sent. */
  authorizationDetails?: string | null
}
