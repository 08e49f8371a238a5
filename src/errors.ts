/**
 * One error family for every protocol failure. Each class fixes the HTTP status
 * and the RFC `error` code; `description` is a fixed, safe sentence (never a
 * token, a secret or internal detail). Responses and `WWW-Authenticate` headers
 * are built from these in exactly one place: `src/http/reply.ts`. Every class
 * carries a stable `code` (`ERR_INVALID_GRANT`, jose style) that code
 * classifying failures switches on; `src/http/failure.ts` maps anything
 * thrown to one of them.
 */

/**
 * Which challenge a 401/403 carries: Basic at client-authenticated endpoints,
 * Bearer at resources, DPoP for a failed DPoP proof at a resource (RFC 9449 7.1).
 */
export type ChallengeScheme = 'Basic' | 'Bearer' | 'DPoP'

export class OAuthError extends Error {
  /**
   * Stable machine-readable code of the class (jose's `ERR_JWT_EXPIRED`
   * style): code that classifies a failure switches on it, never on the
   * description text, which is free to change.
   */
  static readonly code: string = 'ERR_OAUTH'
  /** This error's class code (see `OAuthError.code`). */
  readonly code: string
  /** HTTP status of the response. */
  readonly status: number
  /** RFC error code, e.g. `invalid_grant`. */
  readonly error: string
  /** Safe, human-readable text for developers. */
  readonly description: string | undefined
  /** Challenge scheme, when the response must carry `WWW-Authenticate`. */
  readonly challenge: ChallengeScheme | undefined
  /** Extra challenge attributes (e.g. `scope` for insufficient_scope). */
  readonly challengeParams: Readonly<Record<string, string>>
  /** Extra response headers (e.g. `Allow` for 405, `Retry-After` for 429). */
  readonly headers: Readonly<Record<string, string>>
  /** Server-side reason, logged but never sent (e.g. which invalid_grant check failed). */
  override readonly cause: string | undefined
  /**
   * The answer's body when a protocol defines its own error object (MCP's
   * JSON-RPC errors); undefined for the OAuth `{ error, error_description }`.
   */
  readonly body: Readonly<Record<string, unknown>> | undefined

  /** Protected: a failure is one of the named classes below, never an ad-hoc status and code. */
  protected constructor(
    status: number,
    error: string,
    description?: string,
    options: {
      challenge?: ChallengeScheme
      challengeParams?: Record<string, string>
      headers?: Record<string, string>
      cause?: string
      body?: Record<string, unknown>
    } = {},
  ) {
    super(description ?? error)
    this.name = new.target.name
    this.code = (new.target as typeof OAuthError).code
    this.status = status
    this.error = error
    this.description = description
    this.challenge = options.challenge
    this.challengeParams = options.challengeParams ?? {}
    this.headers = options.headers ?? {}
    this.cause = options.cause
    this.body = options.body
  }
}

type Opts = { cause?: string; challenge?: ChallengeScheme; headers?: Record<string, string> }

/** RFC 6749 5.2 / RFC 6750 3.1: missing, repeated or malformed parameter. */
export class InvalidRequest extends OAuthError {
  static override readonly code = 'ERR_INVALID_REQUEST'
  constructor(description = 'The request is missing a parameter or is malformed', o: Opts = {}) {
    super(400, 'invalid_request', description, o)
  }
}

/** RFC 6749 5.2: client authentication failed. Always 401 with a Basic challenge. */
export class InvalidClient extends OAuthError {
  static override readonly code: string = 'ERR_INVALID_CLIENT'
  constructor(description = 'Client authentication failed', o: Opts = {}) {
    super(401, 'invalid_client', description, { ...o, challenge: 'Basic' })
  }
}

/**
 * RFC 7523 3.2: a client assertion (`private_key_jwt`, or a workload's
 * platform token) that does not authenticate the client: bad signature,
 * wrong iss/sub/aud, expired or too long-lived, replayed jti, unknown key.
 * The answer is invalid_client's; the cause is only logged.
 */
export class InvalidClientAssertion extends InvalidClient {
  static override readonly code = 'ERR_INVALID_CLIENT_ASSERTION'
  constructor(o: Opts = {}) {
    super('The client assertion is invalid', o)
  }
}

/** RFC 6749 5.2: one answer for every bad code, refresh token or device code. */
/**
 * RFC 8705 2: a mutual-TLS client (`tls_client_auth`,
 * `self_signed_tls_client_auth`) whose request carries no certificate, or
 * one that does not authenticate it (another CA, another subject or SAN, a
 * key not in its jwks). invalid_client's answer; the cause is only logged.
 */
export class InvalidClientCertificate extends InvalidClient {
  static override readonly code = 'ERR_INVALID_CLIENT_CERTIFICATE'
  constructor(cause: string) {
    super('The client certificate does not authenticate this client', { cause })
  }
}

export class InvalidGrant extends OAuthError {
  static override readonly code: string = 'ERR_INVALID_GRANT'
  constructor(description = 'The provided grant is invalid, expired, revoked, or was issued to another client', o: Opts = {}) {
    super(400, 'invalid_grant', description, o)
  }
}

/**
 * RFC 7523 3.1: the `assertion` of a jwt-bearer grant (an ID-JAG) is not
 * accepted: unknown issuer, wrong typ or aud, expired, replayed jti, issued
 * to another client, no person for its subject. invalid_grant's answer; the
 * cause is only logged.
 */
export class InvalidAssertionGrant extends InvalidGrant {
  static override readonly code = 'ERR_INVALID_ASSERTION_GRANT'
  constructor(o: Opts = {}) {
    super('The assertion is invalid, expired, replayed, or was issued for another client', o)
  }
}

export class UnauthorizedClient extends OAuthError {
  static override readonly code = 'ERR_UNAUTHORIZED_CLIENT'
  constructor(description = 'The client is not allowed to use this grant type', o: Opts = {}) {
    super(400, 'unauthorized_client', description, o)
  }
}

export class UnsupportedGrantType extends OAuthError {
  static override readonly code = 'ERR_UNSUPPORTED_GRANT_TYPE'
  constructor(description = 'The grant type is not supported', o: Opts = {}) {
    super(400, 'unsupported_grant_type', description, o)
  }
}

export class UnsupportedResponseType extends OAuthError {
  static override readonly code = 'ERR_UNSUPPORTED_RESPONSE_TYPE'
  constructor(description = 'Only response_type=code is supported', o: Opts = {}) {
    super(400, 'unsupported_response_type', description, o)
  }
}

export class InvalidScope extends OAuthError {
  static override readonly code = 'ERR_INVALID_SCOPE'
  constructor(description = 'The requested scope is invalid, unknown, or exceeds what was granted', o: Opts = {}) {
    super(400, 'invalid_scope', description, o)
  }
}

/**
 * RFC 9396 5: `authorization_details` is not a JSON array of objects, names
 * a type unknown or not allowed to the client, fails its type's schema, is
 * too large, or (at /token) asks for more than was granted. The description
 * names the entry's index and the failing path, never the values.
 * @see https://www.rfc-editor.org/rfc/rfc9396#section-5
 */
export class InvalidAuthorizationDetails extends OAuthError {
  static override readonly code = 'ERR_INVALID_AUTHORIZATION_DETAILS'
  constructor(description = 'authorization_details is not acceptable', o: Opts = {}) {
    super(400, 'invalid_authorization_details', description, o)
  }
}

/** RFC 8707 2: the `resource` parameter names no resource this server issues for. */
export class InvalidTarget extends OAuthError {
  static override readonly code = 'ERR_INVALID_TARGET'
  constructor(description = 'The requested resource is not known to this server', o: Opts = {}) {
    super(400, 'invalid_target', description, o)
  }
}

/** RFC 7591 3.2.2: a redirect URI the server will not register. */
export class InvalidRedirectUri extends OAuthError {
  static override readonly code = 'ERR_INVALID_REDIRECT_URI'
  constructor(description = 'A redirect URI is not acceptable', o: Opts = {}) {
    super(400, 'invalid_redirect_uri', description, o)
  }
}

/** RFC 7591 3.2.2: client metadata the server will not accept. */
export class InvalidClientMetadata extends OAuthError {
  static override readonly code = 'ERR_INVALID_CLIENT_METADATA'
  constructor(description = 'The client metadata is not acceptable', o: Opts = {}) {
    super(400, 'invalid_client_metadata', description, o)
  }
}

export class AccessDenied extends OAuthError {
  static override readonly code = 'ERR_ACCESS_DENIED'
  constructor(description = 'The resource owner denied the request', o: Opts = {}) {
    super(400, 'access_denied', description, o)
  }
}

/** OpenID CIBA Core 1.0 13: the backchannel authentication request was refused by the server or the person's bounds (403). */
export class CibaAccessDenied extends OAuthError {
  static override readonly code = 'ERR_CIBA_ACCESS_DENIED'
  constructor(description = 'The OpenID Provider denied the request', o: Opts = {}) {
    super(403, 'access_denied', description, o)
  }
}

/** OpenID CIBA Core 1.0 13: the hint names nobody this server knows (or nobody who may sign in). */
export class UnknownUserId extends OAuthError {
  static override readonly code = 'ERR_UNKNOWN_USER_ID'
  constructor(description = 'The hint does not identify a known person', o: Opts = {}) {
    super(400, 'unknown_user_id', description, o)
  }
}

/** OpenID CIBA Core 1.0 13: the binding message is invalid or unacceptable. */
export class InvalidBindingMessage extends OAuthError {
  static override readonly code = 'ERR_INVALID_BINDING_MESSAGE'
  constructor(description = 'The binding message is invalid', o: Opts = {}) {
    super(400, 'invalid_binding_message', description, o)
  }
}

/** OIDC Core 3.1.2.6: prompt=none but the user must log in. */
export class LoginRequired extends OAuthError {
  static override readonly code = 'ERR_LOGIN_REQUIRED'
  constructor(description = 'The user must log in', o: Opts = {}) {
    super(400, 'login_required', description, o)
  }
}

/** OIDC Core 3.1.2.6: prompt=none but the user must consent. */
export class ConsentRequired extends OAuthError {
  static override readonly code = 'ERR_CONSENT_REQUIRED'
  constructor(description = 'The user must give consent', o: Opts = {}) {
    super(400, 'consent_required', description, o)
  }
}

/** RFC 8628 3.5 */
export class AuthorizationPending extends OAuthError {
  static override readonly code = 'ERR_AUTHORIZATION_PENDING'
  constructor(description = 'The user has not yet completed authorization', o: Opts = {}) {
    super(400, 'authorization_pending', description, o)
  }
}

/** RFC 8628 3.5 */
export class SlowDown extends OAuthError {
  static override readonly code = 'ERR_SLOW_DOWN'
  constructor(description = 'Polling too fast; increase the interval by 5 seconds', o: Opts = {}) {
    super(400, 'slow_down', description, o)
  }
}

/** RFC 8628 3.5 */
export class ExpiredToken extends OAuthError {
  static override readonly code = 'ERR_EXPIRED_TOKEN'
  constructor(description = 'The device code has expired', o: Opts = {}) {
    super(400, 'expired_token', description, o)
  }
}

/** RFC 6750 3.1: the access token is expired, revoked, malformed or invalid. */
export class InvalidToken extends OAuthError {
  static override readonly code: string = 'ERR_INVALID_TOKEN'
  constructor(description = 'The access token is invalid', o: Opts = {}) {
    super(401, 'invalid_token', description, { ...o, challenge: 'Bearer' })
  }
}

/**
 * RFC 8705 3: a certificate-bound token (`cnf.x5t#S256`) presented without
 * that certificate: none on the connection, or another one.
 * invalid_token's answer with a description that says which.
 */
export class CertificateBindingMismatch extends InvalidToken {
  static override readonly code = 'ERR_CERTIFICATE_BINDING'
  constructor(description: string, o: Opts = {}) {
    super(description, o)
  }
}

/** RFC 6750 3.1: a well-formed token whose `exp` has passed (counted apart in the token validation metrics). */
export class AccessTokenExpired extends InvalidToken {
  static override readonly code = 'ERR_ACCESS_TOKEN_EXPIRED'
  constructor(o: Opts = {}) {
    super('The access token is expired', o)
  }
}

/** RFC 6750 3.1, RFC 7009: a token whose jti or grant was revoked (counted apart in the token validation metrics). */
export class AccessTokenRevoked extends InvalidToken {
  static override readonly code = 'ERR_ACCESS_TOKEN_REVOKED'
  constructor(o: Opts = {}) {
    super('The access token has been revoked', o)
  }
}

/** RFC 6750 3.1: authenticated, but the token's scope is too narrow. */
export class InsufficientScope extends OAuthError {
  static override readonly code = 'ERR_INSUFFICIENT_SCOPE'
  constructor(requiredScopes: readonly string[], description = 'The access token does not grant the scope this request needs') {
    super(403, 'insufficient_scope', description, {
      challenge: 'Bearer',
      challengeParams: requiredScopes.length > 0 ? { scope: requiredScopes.join(' ') } : {},
    })
  }
}

/**
 * A route's `authorization_details: { type }` (RFC 9396): the token holds no
 * entry of that type, or its entries are too large to forward. RFC 9396
 * defines no resource server error; this is the 403 of RFC 6750 3.1 with
 * the code draft-zehavi-oauth-rar-metadata proposes, and the type needed in
 * the challenge (docs/authorization-details.md).
 */
export class InsufficientAuthorizationDetails extends OAuthError {
  static override readonly code = 'ERR_INSUFFICIENT_AUTHORIZATION_DETAILS'
  constructor(type: string | null, description = 'The access token does not hold the authorization details this request needs') {
    super(403, 'insufficient_authorization_details', description, {
      challenge: 'Bearer',
      challengeParams: type === null ? {} : { authorization_details_type: type },
    })
  }
}

/** Why a sign-in falls short of a step-up rule: the `error_description` RFC 9470 3 shows for each. */
export type StepUpShortfall = 'acr' | 'max_age'

/**
 * RFC 9470 3: the token is valid, but the person's sign-in behind it is not
 * the kind (`acr`) or not as recent (`auth_time`) as this request needs. A
 * 401 whose Bearer challenge tells the client what to ask the authorization
 * server for: `acr_values` (space separated, in order of preference) and
 * `max_age` (seconds), as `/authorize` takes them.
 * @see https://www.rfc-editor.org/rfc/rfc9470#section-3
 */
export class InsufficientUserAuthentication extends OAuthError {
  static override readonly code = 'ERR_INSUFFICIENT_USER_AUTHENTICATION'
  /** What fell short: the kind of sign-in (`acr`) or its age (`max_age`). */
  readonly shortfall: StepUpShortfall
  constructor(required: { readonly acrValues: string | null; readonly maxAgeSec: number | null }, shortfall: StepUpShortfall, o: { cause?: string } = {}) {
    const params: Record<string, string> = {}
    if (required.acrValues !== null) params.acr_values = required.acrValues
    if (required.maxAgeSec !== null) params.max_age = String(required.maxAgeSec)
    const description = shortfall === 'acr' ? 'A different authentication level is required' : 'More recent authentication is required'
    super(401, 'insufficient_user_authentication', description, {
      challenge: 'Bearer',
      challengeParams: params,
      ...(o.cause === undefined ? {} : { cause: o.cause }),
    })
    this.shortfall = shortfall
  }
}

/**
 * RFC 6750 3.1: a request without any authentication information gets a
 * challenge with no error attribute.
 */
export class MissingToken extends OAuthError {
  static override readonly code = 'ERR_MISSING_TOKEN'
  constructor() {
    super(401, '', undefined, { challenge: 'Bearer' })
  }
}

/**
 * RFC 9449 4.3, 7.1: the DPoP proof is missing where one is required, malformed,
 * or fails a check. 400 at the token endpoint; 401 with a DPoP challenge at a
 * resource (`resource: true`).
 */
export class InvalidDpopProof extends OAuthError {
  static override readonly code = 'ERR_INVALID_DPOP_PROOF'
  /** `algs`: the accepted proof algorithms, space separated, for the challenge. */
  constructor(description = 'The DPoP proof is invalid', o: Opts & { resource?: boolean; algs?: string } = {}) {
    const { resource, algs, ...rest } = o
    super(
      resource === true ? 401 : 400,
      'invalid_dpop_proof',
      description,
      resource === true ? { ...rest, challenge: 'DPoP', challengeParams: algsParam(algs) } : rest,
    )
  }
}

function algsParam(algs: string | undefined): Record<string, string> {
  return algs === undefined ? {} : { algs }
}

/**
 * RFC 9449 8, 9: the server wants a proof carrying its nonce, given in the
 * `DPoP-Nonce` header. 400 at the token endpoint; 401 with a DPoP challenge
 * at a resource.
 */
export class UseDpopNonce extends OAuthError {
  static override readonly code = 'ERR_USE_DPOP_NONCE'
  constructor(nonce: string, o: { resource?: boolean; cause?: string; algs?: string } = {}) {
    const headers = { 'dpop-nonce': nonce }
    const description = 'The DPoP proof must carry the nonce the server provides in DPoP-Nonce'
    super(
      o.resource === true ? 401 : 400,
      'use_dpop_nonce',
      description,
      o.resource === true ? { headers, challenge: 'DPoP', cause: o.cause, challengeParams: algsParam(o.algs) } : { headers, cause: o.cause },
    )
  }
}

/** OIDC Core 6.1: `request` (a request object) is not supported. */
export class RequestNotSupported extends OAuthError {
  static override readonly code = 'ERR_REQUEST_NOT_SUPPORTED'
  constructor(description = 'Request objects are not supported') {
    super(400, 'request_not_supported', description)
  }
}

/** OIDC Core 6.2: `request_uri` is not supported. */
export class RequestUriNotSupported extends OAuthError {
  static override readonly code = 'ERR_REQUEST_URI_NOT_SUPPORTED'
  constructor(description = 'request_uri is not supported') {
    super(400, 'request_uri_not_supported', description)
  }
}

/**
 * RFC 9101 6.1 / OIDC Core 6.1: the request object is not one this server
 * accepts (signature, key, `alg`, `aud`, `iss`, lifetime, replayed `jti`,
 * a claim of the wrong type). Which check failed is only logged.
 */
export class InvalidRequestObject extends OAuthError {
  static override readonly code = 'ERR_INVALID_REQUEST_OBJECT'
  constructor(description = 'The request object is invalid', o: Opts = {}) {
    super(400, 'invalid_request_object', description, o)
  }
}

/**
 * RFC 9126 2.2, RFC 9101 6.2: the `request_uri` is unknown, expired, already
 * used, or was pushed by another client. The same answer for each, so a
 * stranger learns nothing of another client's requests.
 */
export class InvalidRequestUri extends OAuthError {
  static override readonly code = 'ERR_INVALID_REQUEST_URI'
  constructor(description = 'The request_uri is unknown, expired, already used, or was not pushed by this client', o: Opts = {}) {
    super(400, 'invalid_request_uri', description, o)
  }
}

/** A form POST whose CSRF token or Origin is wrong (a page answer; nothing was changed). */
export class Forbidden extends OAuthError {
  static override readonly code = 'ERR_FORBIDDEN'
  constructor(description = 'The form was not sent from this site, or it has expired') {
    super(403, 'forbidden', description)
  }
}

export class NotFound extends OAuthError {
  static override readonly code = 'ERR_NOT_FOUND'
  constructor(description = 'Not found') {
    super(404, 'not_found', description)
  }
}

/** 409: the resource exists already (SSF 1.0 8.1.1.1: a receiver creating a second stream). */
export class Conflict extends OAuthError {
  static override readonly code = 'ERR_CONFLICT'
  constructor(description: string) {
    super(409, 'conflict', description)
  }
}

export class MethodNotAllowed extends OAuthError {
  static override readonly code = 'ERR_METHOD_NOT_ALLOWED'
  constructor(allowed: readonly string[]) {
    super(405, 'method_not_allowed', 'Method not allowed', { headers: { allow: allowed.join(', ') } })
  }
}

export class PayloadTooLarge extends OAuthError {
  static override readonly code = 'ERR_PAYLOAD_TOO_LARGE'
  constructor(description = 'Request body too large') {
    super(413, 'payload_too_large', description)
  }
}

/** RFC 9110 15.5.9: the client took too long to send its request (or its body stalled). */
export class RequestTimeout extends OAuthError {
  static override readonly code = 'ERR_REQUEST_TIMEOUT'
  constructor(description = 'The request was not received in time') {
    super(408, 'request_timeout', description, { headers: { connection: 'close' } })
  }
}

/** RFC 9110 15.5.15: the request target is longer than the server will read. */
export class UriTooLong extends OAuthError {
  static override readonly code = 'ERR_URI_TOO_LONG'
  constructor(description = 'The request target is too long') {
    super(414, 'uri_too_long', description, { headers: { connection: 'close' } })
  }
}

/** RFC 6585 5: the request's header section is larger than the server will read. */
export class RequestHeaderFieldsTooLarge extends OAuthError {
  static override readonly code = 'ERR_REQUEST_HEADER_FIELDS_TOO_LARGE'
  constructor(description = 'The request header fields are too large') {
    super(431, 'request_header_fields_too_large', description, { headers: { connection: 'close' } })
  }
}

export class UnsupportedMediaType extends OAuthError {
  static override readonly code = 'ERR_UNSUPPORTED_MEDIA_TYPE'
  constructor(description = 'Content-Type must be application/x-www-form-urlencoded') {
    super(400, 'invalid_request', description)
  }
}

export class TooManyRequests extends OAuthError {
  static override readonly code = 'ERR_TOO_MANY_REQUESTS'
  constructor(retryAfterSec: number, description = 'Too many attempts; try again later') {
    super(429, 'too_many_requests', description, { headers: retryAfter(retryAfterSec) })
  }
}

/**
 * A route's rate limit or quota has no room for the request (docs/traffic.md):
 * 429 with Retry-After and the RateLimit-Policy and RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers-11). On an MCP route the body is a
 * JSON-RPC error, code -32000 as an MCP SDK server gives its other HTTP-level
 * refusals, so an SDK client reports the status and the message.
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/
 */
export class RateLimited extends OAuthError {
  static override readonly code = 'ERR_RATE_LIMITED'
  /** The JSON-RPC error code of the MCP answer. */
  static readonly rpcCode = -32000
  constructor(retryAfterSec: number, fields: Record<string, string>, mcp: { id: JsonRpcId } | null, o: Opts = {}) {
    const description = 'Too many requests; try again later'
    const headers = { ...retryAfter(retryAfterSec), ...fields }
    const wait = headers['retry-after']
    const body =
      mcp === null ? undefined : { jsonrpc: '2.0', id: mcp.id, error: { code: RateLimited.rpcCode, message: `Too Many Requests: retry after ${wait} s` } }
    super(429, 'too_many_requests', description, { ...o, headers, ...(body === undefined ? {} : { body }) })
  }
}

/**
 * Client authentication from this address is locked after repeated failures:
 * 429 with `Retry-After`, and the RFC 6749 5.2 code `invalid_client` so a
 * client library reports it as an authentication failure.
 */
export class ClientAuthenticationLocked extends OAuthError {
  static override readonly code = 'ERR_CLIENT_AUTHENTICATION_LOCKED'
  constructor(retryAfterSec: number, description = 'Too many failed client authentications from this address; try again later') {
    super(429, 'invalid_client', description, { headers: retryAfter(retryAfterSec) })
  }
}

/**
 * Registration is refused because the store holds `registration.max_clients`
 * live self-registered clients. RFC 7591 3.2.2 has no error for this; it is
 * the server's limit, not the caller's rate, so it is 503 with the RFC 6749
 * code for an overloaded server, `temporarily_unavailable`, and Retry-After
 * (when the first client frees its seat), rather than 429, which would tell
 * a client that registered nothing that it asked too often.
 */
export class RegistrationFull extends OAuthError {
  static override readonly code = 'ERR_REGISTRATION_FULL'
  constructor(retryAfterSec: number, description = 'This server holds as many registered clients as it allows; try again later') {
    super(503, 'temporarily_unavailable', description, { headers: retryAfter(retryAfterSec) })
  }
}

/**
 * A route's `max_in_flight` or `max_streams` is reached (docs/traffic.md,
 * Concurrency limits), route-wide or for this caller. It is this instance's
 * capacity, not the caller's rate, so 503 with the RFC 6749 code for an
 * overloaded server and a Retry-After, answered at once: nothing waits in
 * a queue for a slot.
 */
export class ConcurrencyLimitReached extends OAuthError {
  static override readonly code = 'ERR_CONCURRENCY_LIMIT_REACHED'
  constructor(kind: 'requests' | 'streams', retryAfterSec = 1) {
    super(
      503,
      'temporarily_unavailable',
      kind === 'requests'
        ? 'This resource is serving as many requests as it allows at once; try again shortly'
        : 'This resource holds as many open streams as it allows; try again shortly',
      { headers: retryAfter(retryAfterSec) },
    )
  }
}

function retryAfter(seconds: number): Record<string, string> {
  return { 'retry-after': String(Math.max(1, Math.ceil(seconds))) }
}

export class ServerError extends OAuthError {
  static override readonly code = 'ERR_SERVER_ERROR'
  constructor(description = 'Internal error', o: Opts = {}) {
    super(500, 'server_error', description, o)
  }
}

export class TemporarilyUnavailable extends OAuthError {
  static override readonly code = 'ERR_TEMPORARILY_UNAVAILABLE'
  constructor(description = 'The service is temporarily unavailable', o: Opts = {}) {
    super(503, 'temporarily_unavailable', description, o)
  }
}

/** A JSON-RPC request id (JSON-RPC 2.0 4), or null when the request's could not be read. */
export type JsonRpcId = string | number | null

/**
 * A `tools/call` of a tool whose rule says `approval: required` (docs/approvals.md), held: the call was
 * not forwarded, and the client is sent to the approval page in the form its revision defines (the
 * 2025-11-25 `-32042` error, the 2026-07-28 `input_required` result, or a tool result with `isError`).
 * Not an HTTP failure: 200 with that JSON-RPC answer, which an MCP client reads as the call's answer.
 */
export class McpApprovalRequired extends OAuthError {
  static override readonly code = 'ERR_MCP_APPROVAL_REQUIRED'
  constructor(body: Record<string, unknown>, o: Opts = {}) {
    super(200, 'approval_required', 'The call waits for the person’s approval', { ...o, body })
  }
}

/**
 * MCP 2026-07-28 Streamable HTTP, Server Validation: a required standard
 * header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) is missing or
 * disagrees with the body. 400 with the JSON-RPC `HeaderMismatch` error
 * (-32020) carrying the request's id, so a client of both eras reads it as a
 * modern answer and does not fall back to `initialize`.
 * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#server-validation
 */
export class McpHeaderMismatch extends OAuthError {
  static override readonly code = 'ERR_MCP_HEADER_MISMATCH'
  /** The JSON-RPC error code of the spec's HeaderMismatch. */
  static readonly rpcCode = -32020
  constructor(id: JsonRpcId = null, description = 'The MCP request headers and body disagree', o: Opts = {}) {
    super(400, 'invalid_request', description, {
      ...o,
      body: { jsonrpc: '2.0', id, error: { code: McpHeaderMismatch.rpcCode, message: `Bad Request: ${description}` } },
    })
  }
}

/**
 * The route does not accept the MCP protocol revision the request declares
 * (`mcp.protocol_versions`). A 2026-07-28 request gets the spec's
 * UnsupportedProtocolVersionError (-32022, with `supported` and
 * `requested`); an earlier one the 400 an SDK 1.x server sends.
 * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#protocol-version-header
 */
export class McpUnsupportedProtocolVersion extends OAuthError {
  static override readonly code = 'ERR_MCP_UNSUPPORTED_PROTOCOL_VERSION'
  constructor(requested: string, supported: readonly string[], modern: boolean, id: JsonRpcId = null, o: Opts = {}) {
    const description = 'This endpoint does not accept the MCP protocol version of the request'
    const body = modern
      ? { jsonrpc: '2.0', id, error: { code: -32022, message: `Unsupported protocol version: ${requested}`, data: { supported: [...supported], requested } } }
      : {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32000, message: `Bad Request: Unsupported protocol version: ${requested} (supported versions: ${supported.join(', ')})` },
        }
    super(400, 'invalid_request', description, { ...o, body })
  }
}

/**
 * MCP Streamable HTTP, Security: a browser request (it carries `Origin`)
 * from an origin the route does not allow: 403, against DNS rebinding. The
 * body is a JSON-RPC error without an id, as the transport allows.
 * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#security-%26-endpoint
 */
export class McpOriginRefused extends OAuthError {
  static override readonly code = 'ERR_MCP_ORIGIN_REFUSED'
  constructor(o: Opts = {}) {
    const description = 'Requests from this Origin are not accepted'
    super(403, 'forbidden', description, { ...o, body: { jsonrpc: '2.0', error: { code: -32000, message: `Forbidden: ${description}` } } })
  }
}

/**
 * An `Mcp-Session-Id` the gateway did not see opened for this token's
 * issuer, subject and client: another person's session, or one it never saw
 * (or forgot). Answered as the transport answers a session it does not
 * know, so that the client starts a new one and learns nothing of whose it
 * was; 403 would confirm that the id is live.
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#session-management
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/security_best_practices#session-hijacking
 */
export class McpSessionNotFound extends OAuthError {
  static override readonly code = 'ERR_MCP_SESSION_NOT_FOUND'
  constructor(o: Opts = {}) {
    super(404, 'not_found', 'Session not found', { ...o, body: { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null } })
  }
}

export class BadGateway extends OAuthError {
  static override readonly code = 'ERR_BAD_GATEWAY'
  constructor(description = 'The upstream could not be reached') {
    super(502, 'bad_gateway', description)
  }
}

export class GatewayTimeout extends OAuthError {
  static override readonly code = 'ERR_GATEWAY_TIMEOUT'
  constructor(description = 'The upstream did not answer in time') {
    super(504, 'gateway_timeout', description)
  }
}

/**
 * Thrown by every Store method when the backing store cannot be reached or
 * answers with an error. Callers map it to 503 (routes per their policy).
 */
export class StoreUnavailableError extends Error {
  static readonly code = 'ERR_STORE_UNAVAILABLE'
  readonly code = StoreUnavailableError.code
  constructor(message = 'store unavailable', options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StoreUnavailableError'
  }
}

/**
 * The client went away in the middle of its request body (the connection
 * closed or was reset before the declared body arrived). Not a server fault
 * and not a refusal: there is nobody left to answer. The dispatcher logs it
 * quietly and counts it (`bearward_requests_aborted_total`).
 */
export class ClientAborted extends Error {
  static readonly code = 'ERR_CLIENT_ABORTED'
  readonly code = ClientAborted.code
  constructor(options?: { cause?: unknown }) {
    super('the client closed the connection before its request body was complete', options)
    this.name = 'ClientAborted'
  }
}

/** A config that cannot be used; carries every problem found. */
export class ConfigError extends Error {
  static readonly code = 'ERR_CONFIG_INVALID'
  readonly code = ConfigError.code
  readonly problems: readonly ConfigProblem[]
  constructor(problems: readonly ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'))
    this.name = 'ConfigError'
    this.problems = problems
  }
}

export interface ConfigProblem {
  file: string
  line: number
  col: number
  /** Dotted key path, e.g. `routes[2].match.path`. */
  path: string
  message: string
}

export function formatProblem(p: ConfigProblem): string {
  return `${p.file}:${p.line}:${p.col}: ${p.path ? p.path + ': ' : ''}${p.message}`
}
