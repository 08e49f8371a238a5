/**
 * One error family for every protocol failure. Each class fixes the HTTP status
 * and the RFC `error` code; `description` is a fixed, safe sentence (never a
 * token, a secret or internal detail). Responses and `WWW-Authenticate` headers
 * are built from these in exactly one place: `src/http/reply.ts`.
 */

/**
 * Which challenge a 401/403 carries: Basic at client-authenticated endpoints,
 * Bearer at resources, DPoP for a failed DPoP proof at a resource (RFC 9449 7.1).
 */
export type ChallengeScheme = 'Basic' | 'Bearer' | 'DPoP'

export class OAuthError extends Error {
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

  constructor(
    status: number,
    error: string,
    description?: string,
    options: {
      challenge?: ChallengeScheme
      challengeParams?: Record<string, string>
      headers?: Record<string, string>
      cause?: string
    } = {},
  ) {
    super(description ?? error)
    this.name = new.target.name
    this.status = status
    this.error = error
    this.description = description
    this.challenge = options.challenge
    this.challengeParams = options.challengeParams ?? {}
    this.headers = options.headers ?? {}
    this.cause = options.cause
  }
}

type Opts = { cause?: string; challenge?: ChallengeScheme; headers?: Record<string, string> }

/** RFC 6749 5.2 / RFC 6750 3.1: missing, repeated or malformed parameter. */
export class InvalidRequest extends OAuthError {
  constructor(description = 'The request is missing a parameter or is malformed', o: Opts = {}) {
    super(400, 'invalid_request', description, o)
  }
}

/** RFC 6749 5.2: client authentication failed. Always 401 with a Basic challenge. */
export class InvalidClient extends OAuthError {
  constructor(description = 'Client authentication failed', o: Opts = {}) {
    super(401, 'invalid_client', description, { ...o, challenge: 'Basic' })
  }
}

/** RFC 6749 5.2: one answer for every bad code, refresh token or device code. */
export class InvalidGrant extends OAuthError {
  constructor(description = 'The provided grant is invalid, expired, revoked, or was issued to another client', o: Opts = {}) {
    super(400, 'invalid_grant', description, o)
  }
}

export class UnauthorizedClient extends OAuthError {
  constructor(description = 'The client is not allowed to use this grant type', o: Opts = {}) {
    super(400, 'unauthorized_client', description, o)
  }
}

export class UnsupportedGrantType extends OAuthError {
  constructor(description = 'The grant type is not supported', o: Opts = {}) {
    super(400, 'unsupported_grant_type', description, o)
  }
}

export class UnsupportedResponseType extends OAuthError {
  constructor(description = 'Only response_type=code is supported', o: Opts = {}) {
    super(400, 'unsupported_response_type', description, o)
  }
}

export class InvalidScope extends OAuthError {
  constructor(description = 'The requested scope is invalid, unknown, or exceeds what was granted', o: Opts = {}) {
    super(400, 'invalid_scope', description, o)
  }
}

/** RFC 8707 2: the `resource` parameter names no resource this server issues for. */
export class InvalidTarget extends OAuthError {
  constructor(description = 'The requested resource is not known to this server', o: Opts = {}) {
    super(400, 'invalid_target', description, o)
  }
}

/** RFC 7591 3.2.2: a redirect URI the server will not register. */
export class InvalidRedirectUri extends OAuthError {
  constructor(description = 'A redirect URI is not acceptable', o: Opts = {}) {
    super(400, 'invalid_redirect_uri', description, o)
  }
}

/** RFC 7591 3.2.2: client metadata the server will not accept. */
export class InvalidClientMetadata extends OAuthError {
  constructor(description = 'The client metadata is not acceptable', o: Opts = {}) {
    super(400, 'invalid_client_metadata', description, o)
  }
}

export class AccessDenied extends OAuthError {
  constructor(description = 'The resource owner denied the request', o: Opts = {}) {
    super(400, 'access_denied', description, o)
  }
}

/** OIDC Core 3.1.2.6: prompt=none but the user must log in. */
export class LoginRequired extends OAuthError {
  constructor(description = 'The user must log in', o: Opts = {}) {
    super(400, 'login_required', description, o)
  }
}

/** OIDC Core 3.1.2.6: prompt=none but the user must consent. */
export class ConsentRequired extends OAuthError {
  constructor(description = 'The user must give consent', o: Opts = {}) {
    super(400, 'consent_required', description, o)
  }
}

/** RFC 8628 3.5 */
export class AuthorizationPending extends OAuthError {
  constructor(description = 'The user has not yet completed authorization', o: Opts = {}) {
    super(400, 'authorization_pending', description, o)
  }
}

/** RFC 8628 3.5 */
export class SlowDown extends OAuthError {
  constructor(description = 'Polling too fast; increase the interval by 5 seconds', o: Opts = {}) {
    super(400, 'slow_down', description, o)
  }
}

/** RFC 8628 3.5 */
export class ExpiredToken extends OAuthError {
  constructor(description = 'The device code has expired', o: Opts = {}) {
    super(400, 'expired_token', description, o)
  }
}

/** RFC 6750 3.1: the access token is expired, revoked, malformed or invalid. */
export class InvalidToken extends OAuthError {
  constructor(description = 'The access token is invalid', o: Opts = {}) {
    super(401, 'invalid_token', description, { ...o, challenge: 'Bearer' })
  }
}

/** RFC 6750 3.1: authenticated, but the token's scope is too narrow. */
export class InsufficientScope extends OAuthError {
  constructor(requiredScopes: readonly string[], description = 'The access token does not grant the scope this request needs') {
    super(403, 'insufficient_scope', description, {
      challenge: 'Bearer',
      challengeParams: requiredScopes.length > 0 ? { scope: requiredScopes.join(' ') } : {},
    })
  }
}

/**
 * RFC 6750 3.1: a request without any authentication information gets a
 * challenge with no error attribute.
 */
export class MissingToken extends OAuthError {
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
  /** `algs`: the accepted proof algorithms, space separated, for the challenge. */
  constructor(description = 'The DPoP proof is invalid', o: Opts & { resource?: boolean; algs?: string } = {}) {
    const { resource, algs, ...rest } = o
    super(resource === true ? 401 : 400, 'invalid_dpop_proof', description, resource === true ? { ...rest, challenge: 'DPoP', challengeParams: algsParam(algs) } : rest)
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

export class NotFound extends OAuthError {
  constructor(description = 'Not found') {
    super(404, 'not_found', description)
  }
}

export class MethodNotAllowed extends OAuthError {
  constructor(allowed: readonly string[]) {
    super(405, 'method_not_allowed', 'Method not allowed', { headers: { allow: allowed.join(', ') } })
  }
}

export class PayloadTooLarge extends OAuthError {
  constructor(description = 'Request body too large') {
    super(413, 'payload_too_large', description)
  }
}

/** RFC 9110 15.5.9: the client took too long to send its request (or its body stalled). */
export class RequestTimeout extends OAuthError {
  constructor(description = 'The request was not received in time') {
    super(408, 'request_timeout', description, { headers: { connection: 'close' } })
  }
}

/** RFC 9110 15.5.15: the request target is longer than the server will read. */
export class UriTooLong extends OAuthError {
  constructor(description = 'The request target is too long') {
    super(414, 'uri_too_long', description, { headers: { connection: 'close' } })
  }
}

/** RFC 6585 5: the request's header section is larger than the server will read. */
export class RequestHeaderFieldsTooLarge extends OAuthError {
  constructor(description = 'The request header fields are too large') {
    super(431, 'request_header_fields_too_large', description, { headers: { connection: 'close' } })
  }
}

export class UnsupportedMediaType extends OAuthError {
  constructor(description = 'Content-Type must be application/x-www-form-urlencoded') {
    super(400, 'invalid_request', description)
  }
}

export class TooManyRequests extends OAuthError {
  constructor(retryAfterSec: number, error = 'too_many_requests', description = 'Too many attempts; try again later') {
    super(429, error, description, { headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSec))) } })
  }
}

export class ServerError extends OAuthError {
  constructor(description = 'Internal error', o: Opts = {}) {
    super(500, 'server_error', description, o)
  }
}

export class TemporarilyUnavailable extends OAuthError {
  constructor(description = 'The service is temporarily unavailable', o: Opts = {}) {
    super(503, 'temporarily_unavailable', description, o)
  }
}

export class BadGateway extends OAuthError {
  constructor(description = 'The upstream could not be reached') {
    super(502, 'bad_gateway', description)
  }
}

export class GatewayTimeout extends OAuthError {
  constructor(description = 'The upstream did not answer in time') {
    super(504, 'gateway_timeout', description)
  }
}

/**
 * Thrown by every Store method when the backing store cannot be reached or
 * answers with an error. Callers map it to 503 (routes per their policy).
 */
export class StoreUnavailableError extends Error {
  constructor(message = 'store unavailable', options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StoreUnavailableError'
  }
}

/** A config that cannot be used; carries every problem found. */
export class ConfigError extends Error {
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
