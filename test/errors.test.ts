import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect } from 'node:net'
import { Writable } from 'node:stream'
import * as errors from '../src/errors.js'
import { OAuthError, StoreUnavailableError } from '../src/errors.js'
import { answerFailure, failureOf, type FailureReporting } from '../src/http/failure.js'
import { errorOnSocket, sendError } from '../src/http/reply.js'
import { createLogger } from '../src/log.js'
import { Metrics } from '../src/metrics.js'
import { listen } from './helpers/http.js'

/**
 * Every error class and the answer a client gets for it, rendered by the one
 * failure path on a real server: status, `error`, `error_description`,
 * WWW-Authenticate and the other headers. A new class in src/errors.ts fails
 * this test until its answer is listed here.
 */

interface Expected {
  /** Build one (the arguments a caller would pass). */
  make: () => OAuthError
  code: string
  status: number
  /** `error` in the body; absent for MissingToken (RFC 6750 3.1: no error attribute). */
  error?: string
  description: string
  wwwAuthenticate?: string
  headers?: Record<string, string>
  /** The whole body, when the class answers with its protocol's own error object (MCP's JSON-RPC errors). */
  body?: Record<string, unknown>
}

const E = errors
const CASES: Record<string, Expected> = {
  InvalidRequest: {
    make: () => new E.InvalidRequest(),
    code: 'ERR_INVALID_REQUEST',
    status: 400,
    error: 'invalid_request',
    description: 'The request is missing a parameter or is malformed',
  },
  InvalidClient: {
    make: () => new E.InvalidClient(),
    code: 'ERR_INVALID_CLIENT',
    status: 401,
    error: 'invalid_client',
    description: 'Client authentication failed',
    wwwAuthenticate: 'Basic realm="bearward"',
  },
  InvalidClientAssertion: {
    make: () => new E.InvalidClientAssertion({ cause: 'client assertion: jti replayed' }),
    code: 'ERR_INVALID_CLIENT_ASSERTION',
    status: 401,
    error: 'invalid_client',
    description: 'The client assertion is invalid',
    wwwAuthenticate: 'Basic realm="bearward"',
  },
  InvalidClientCertificate: {
    make: () => new E.InvalidClientCertificate('tls_client_auth: subject DN differs'),
    code: 'ERR_INVALID_CLIENT_CERTIFICATE',
    status: 401,
    error: 'invalid_client',
    description: 'The client certificate does not authenticate this client',
    wwwAuthenticate: 'Basic realm="bearward"',
  },
  InvalidGrant: {
    make: () => new E.InvalidGrant(),
    code: 'ERR_INVALID_GRANT',
    status: 400,
    error: 'invalid_grant',
    description: 'The provided grant is invalid, expired, revoked, or was issued to another client',
  },
  InvalidAssertionGrant: {
    make: () => new E.InvalidAssertionGrant({ cause: 'id-jag: jti replayed' }),
    code: 'ERR_INVALID_ASSERTION_GRANT',
    status: 400,
    error: 'invalid_grant',
    description: 'The assertion is invalid, expired, replayed, or was issued for another client',
  },
  UnauthorizedClient: {
    make: () => new E.UnauthorizedClient(),
    code: 'ERR_UNAUTHORIZED_CLIENT',
    status: 400,
    error: 'unauthorized_client',
    description: 'The client is not allowed to use this grant type',
  },
  UnsupportedGrantType: {
    make: () => new E.UnsupportedGrantType(),
    code: 'ERR_UNSUPPORTED_GRANT_TYPE',
    status: 400,
    error: 'unsupported_grant_type',
    description: 'The grant type is not supported',
  },
  UnsupportedResponseType: {
    make: () => new E.UnsupportedResponseType(),
    code: 'ERR_UNSUPPORTED_RESPONSE_TYPE',
    status: 400,
    error: 'unsupported_response_type',
    description: 'Only response_type=code is supported',
  },
  InvalidScope: {
    make: () => new E.InvalidScope(),
    code: 'ERR_INVALID_SCOPE',
    status: 400,
    error: 'invalid_scope',
    description: 'The requested scope is invalid, unknown, or exceeds what was granted',
  },
  InvalidAuthorizationDetails: {
    make: () => new E.InvalidAuthorizationDetails(),
    code: 'ERR_INVALID_AUTHORIZATION_DETAILS',
    status: 400,
    error: 'invalid_authorization_details',
    description: 'authorization_details is not acceptable',
  },
  InvalidTarget: {
    make: () => new E.InvalidTarget(),
    code: 'ERR_INVALID_TARGET',
    status: 400,
    error: 'invalid_target',
    description: 'The requested resource is not known to this server',
  },
  InvalidRedirectUri: {
    make: () => new E.InvalidRedirectUri(),
    code: 'ERR_INVALID_REDIRECT_URI',
    status: 400,
    error: 'invalid_redirect_uri',
    description: 'A redirect URI is not acceptable',
  },
  InvalidClientMetadata: {
    make: () => new E.InvalidClientMetadata(),
    code: 'ERR_INVALID_CLIENT_METADATA',
    status: 400,
    error: 'invalid_client_metadata',
    description: 'The client metadata is not acceptable',
  },
  AccessDenied: {
    make: () => new E.AccessDenied(),
    code: 'ERR_ACCESS_DENIED',
    status: 400,
    error: 'access_denied',
    description: 'The resource owner denied the request',
  },
  LoginRequired: { make: () => new E.LoginRequired(), code: 'ERR_LOGIN_REQUIRED', status: 400, error: 'login_required', description: 'The user must log in' },
  ConsentRequired: {
    make: () => new E.ConsentRequired(),
    code: 'ERR_CONSENT_REQUIRED',
    status: 400,
    error: 'consent_required',
    description: 'The user must give consent',
  },
  CibaAccessDenied: {
    make: () => new E.CibaAccessDenied(),
    code: 'ERR_CIBA_ACCESS_DENIED',
    status: 403,
    error: 'access_denied',
    description: 'The OpenID Provider denied the request',
  },
  UnknownUserId: {
    make: () => new E.UnknownUserId(),
    code: 'ERR_UNKNOWN_USER_ID',
    status: 400,
    error: 'unknown_user_id',
    description: 'The hint does not identify a known person',
  },
  InvalidBindingMessage: {
    make: () => new E.InvalidBindingMessage(),
    code: 'ERR_INVALID_BINDING_MESSAGE',
    status: 400,
    error: 'invalid_binding_message',
    description: 'The binding message is invalid',
  },
  AuthorizationPending: {
    make: () => new E.AuthorizationPending(),
    code: 'ERR_AUTHORIZATION_PENDING',
    status: 400,
    error: 'authorization_pending',
    description: 'The user has not yet completed authorization',
  },
  SlowDown: {
    make: () => new E.SlowDown(),
    code: 'ERR_SLOW_DOWN',
    status: 400,
    error: 'slow_down',
    description: 'Polling too fast; increase the interval by 5 seconds',
  },
  ExpiredToken: {
    make: () => new E.ExpiredToken(),
    code: 'ERR_EXPIRED_TOKEN',
    status: 400,
    error: 'expired_token',
    description: 'The device code has expired',
  },
  InvalidToken: {
    make: () => new E.InvalidToken(),
    code: 'ERR_INVALID_TOKEN',
    status: 401,
    error: 'invalid_token',
    description: 'The access token is invalid',
    wwwAuthenticate: 'Bearer realm="bearward", error="invalid_token", error_description="The access token is invalid"',
  },
  CertificateBindingMismatch: {
    make: () => new E.CertificateBindingMismatch('The access token is bound to another client certificate', { cause: 'certificate thumbprint differs' }),
    code: 'ERR_CERTIFICATE_BINDING',
    status: 401,
    error: 'invalid_token',
    description: 'The access token is bound to another client certificate',
    wwwAuthenticate: 'Bearer realm="bearward", error="invalid_token", error_description="The access token is bound to another client certificate"',
  },
  AccessTokenExpired: {
    make: () => new E.AccessTokenExpired(),
    code: 'ERR_ACCESS_TOKEN_EXPIRED',
    status: 401,
    error: 'invalid_token',
    description: 'The access token is expired',
    wwwAuthenticate: 'Bearer realm="bearward", error="invalid_token", error_description="The access token is expired"',
  },
  AccessTokenRevoked: {
    make: () => new E.AccessTokenRevoked(),
    code: 'ERR_ACCESS_TOKEN_REVOKED',
    status: 401,
    error: 'invalid_token',
    description: 'The access token has been revoked',
    wwwAuthenticate: 'Bearer realm="bearward", error="invalid_token", error_description="The access token has been revoked"',
  },
  InsufficientScope: {
    make: () => new E.InsufficientScope(['orders:write', 'orders:read']),
    code: 'ERR_INSUFFICIENT_SCOPE',
    status: 403,
    error: 'insufficient_scope',
    description: 'The access token does not grant the scope this request needs',
    wwwAuthenticate:
      'Bearer realm="bearward", error="insufficient_scope", error_description="The access token does not grant the scope this request needs", scope="orders:write orders:read"',
  },
  InsufficientAuthorizationDetails: {
    make: () => new E.InsufficientAuthorizationDetails('payment_initiation'),
    code: 'ERR_INSUFFICIENT_AUTHORIZATION_DETAILS',
    status: 403,
    error: 'insufficient_authorization_details',
    description: 'The access token does not hold the authorization details this request needs',
    wwwAuthenticate:
      'Bearer realm="bearward", error="insufficient_authorization_details", error_description="The access token does not hold the authorization details this request needs", authorization_details_type="payment_initiation"',
  },
  InsufficientUserAuthentication: {
    make: () => new E.InsufficientUserAuthentication({ acrValues: 'phr mfa', maxAgeSec: 300 }, 'max_age', { cause: 'step-up: auth_time older than max_age' }),
    code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
    status: 401,
    error: 'insufficient_user_authentication',
    description: 'More recent authentication is required',
    wwwAuthenticate:
      'Bearer realm="bearward", error="insufficient_user_authentication", error_description="More recent authentication is required", acr_values="phr mfa", max_age="300"',
  },
  MissingToken: {
    make: () => new E.MissingToken(),
    code: 'ERR_MISSING_TOKEN',
    status: 401,
    description: 'A bearer access token is required',
    wwwAuthenticate: 'Bearer realm="bearward"',
  },
  InvalidDpopProof: {
    make: () => new E.InvalidDpopProof('The DPoP proof is invalid', { resource: true, algs: 'ES256 EdDSA' }),
    code: 'ERR_INVALID_DPOP_PROOF',
    status: 401,
    error: 'invalid_dpop_proof',
    description: 'The DPoP proof is invalid',
    wwwAuthenticate: 'DPoP realm="bearward", error="invalid_dpop_proof", error_description="The DPoP proof is invalid", algs="ES256 EdDSA"',
  },
  UseDpopNonce: {
    make: () => new E.UseDpopNonce('n-1'),
    code: 'ERR_USE_DPOP_NONCE',
    status: 400,
    error: 'use_dpop_nonce',
    description: 'The DPoP proof must carry the nonce the server provides in DPoP-Nonce',
    headers: { 'dpop-nonce': 'n-1' },
  },
  RequestNotSupported: {
    make: () => new E.RequestNotSupported(),
    code: 'ERR_REQUEST_NOT_SUPPORTED',
    status: 400,
    error: 'request_not_supported',
    description: 'Request objects are not supported',
  },
  RequestUriNotSupported: {
    make: () => new E.RequestUriNotSupported(),
    code: 'ERR_REQUEST_URI_NOT_SUPPORTED',
    status: 400,
    error: 'request_uri_not_supported',
    description: 'request_uri is not supported',
  },
  InvalidRequestObject: {
    make: () => new E.InvalidRequestObject(),
    code: 'ERR_INVALID_REQUEST_OBJECT',
    status: 400,
    error: 'invalid_request_object',
    description: 'The request object is invalid',
  },
  InvalidRequestUri: {
    make: () => new E.InvalidRequestUri(),
    code: 'ERR_INVALID_REQUEST_URI',
    status: 400,
    error: 'invalid_request_uri',
    description: 'The request_uri is unknown, expired, already used, or was not pushed by this client',
  },
  Forbidden: {
    make: () => new E.Forbidden(),
    code: 'ERR_FORBIDDEN',
    status: 403,
    error: 'forbidden',
    description: 'The form was not sent from this site, or it has expired',
  },
  NotFound: { make: () => new E.NotFound(), code: 'ERR_NOT_FOUND', status: 404, error: 'not_found', description: 'Not found' },
  Conflict: {
    make: () => new E.Conflict('This receiver has a stream already'),
    code: 'ERR_CONFLICT',
    status: 409,
    error: 'conflict',
    description: 'This receiver has a stream already',
  },
  MethodNotAllowed: {
    make: () => new E.MethodNotAllowed(['GET', 'HEAD']),
    code: 'ERR_METHOD_NOT_ALLOWED',
    status: 405,
    error: 'method_not_allowed',
    description: 'Method not allowed',
    headers: { allow: 'GET, HEAD' },
  },
  PayloadTooLarge: {
    make: () => new E.PayloadTooLarge(),
    code: 'ERR_PAYLOAD_TOO_LARGE',
    status: 413,
    error: 'payload_too_large',
    description: 'Request body too large',
  },
  RequestTimeout: {
    make: () => new E.RequestTimeout(),
    code: 'ERR_REQUEST_TIMEOUT',
    status: 408,
    error: 'request_timeout',
    description: 'The request was not received in time',
    headers: { connection: 'close' },
  },
  UriTooLong: {
    make: () => new E.UriTooLong(),
    code: 'ERR_URI_TOO_LONG',
    status: 414,
    error: 'uri_too_long',
    description: 'The request target is too long',
    headers: { connection: 'close' },
  },
  RequestHeaderFieldsTooLarge: {
    make: () => new E.RequestHeaderFieldsTooLarge(),
    code: 'ERR_REQUEST_HEADER_FIELDS_TOO_LARGE',
    status: 431,
    error: 'request_header_fields_too_large',
    description: 'The request header fields are too large',
    headers: { connection: 'close' },
  },
  UnsupportedMediaType: {
    make: () => new E.UnsupportedMediaType(),
    code: 'ERR_UNSUPPORTED_MEDIA_TYPE',
    status: 400,
    error: 'invalid_request',
    description: 'Content-Type must be application/x-www-form-urlencoded',
  },
  TooManyRequests: {
    make: () => new E.TooManyRequests(2.5),
    code: 'ERR_TOO_MANY_REQUESTS',
    status: 429,
    error: 'too_many_requests',
    description: 'Too many attempts; try again later',
    headers: { 'retry-after': '3' },
  },
  RateLimited: {
    make: () => new E.RateLimited(1.2, { 'ratelimit-policy': '"per-client";q=100;w=60', ratelimit: '"per-client";r=0;t=2' }, { id: 7 }),
    code: 'ERR_RATE_LIMITED',
    status: 429,
    error: 'too_many_requests',
    description: 'Too many requests; try again later',
    headers: { 'retry-after': '2', 'ratelimit-policy': '"per-client";q=100;w=60', ratelimit: '"per-client";r=0;t=2' },
    body: { jsonrpc: '2.0', id: 7, error: { code: -32000, message: 'Too Many Requests: retry after 2 s' } },
  },
  ClientAuthenticationLocked: {
    make: () => new E.ClientAuthenticationLocked(0.2),
    code: 'ERR_CLIENT_AUTHENTICATION_LOCKED',
    status: 429,
    error: 'invalid_client',
    description: 'Too many failed client authentications from this address; try again later',
    headers: { 'retry-after': '1' },
  },
  ServerError: { make: () => new E.ServerError(), code: 'ERR_SERVER_ERROR', status: 500, error: 'server_error', description: 'Internal error' },
  ConcurrencyLimitReached: {
    make: () => new E.ConcurrencyLimitReached('requests'),
    code: 'ERR_CONCURRENCY_LIMIT_REACHED',
    status: 503,
    error: 'temporarily_unavailable',
    description: 'This resource is serving as many requests as it allows at once; try again shortly',
    headers: { 'retry-after': '1' },
  },
  RegistrationFull: {
    make: () => new E.RegistrationFull(3600),
    code: 'ERR_REGISTRATION_FULL',
    status: 503,
    error: 'temporarily_unavailable',
    description: 'This server holds as many registered clients as it allows; try again later',
    headers: { 'retry-after': '3600' },
  },
  TemporarilyUnavailable: {
    make: () => new E.TemporarilyUnavailable(),
    code: 'ERR_TEMPORARILY_UNAVAILABLE',
    status: 503,
    error: 'temporarily_unavailable',
    description: 'The service is temporarily unavailable',
  },
  McpApprovalRequired: {
    make: () => new E.McpApprovalRequired({ jsonrpc: '2.0', id: 3, result: { content: [], isError: true } }),
    code: 'ERR_MCP_APPROVAL_REQUIRED',
    status: 200,
    error: 'approval_required',
    description: 'The call waits for the person’s approval',
    body: { jsonrpc: '2.0', id: 3, result: { content: [], isError: true } },
  },
  McpHeaderMismatch: {
    make: () => new E.McpHeaderMismatch(7),
    code: 'ERR_MCP_HEADER_MISMATCH',
    status: 400,
    error: 'invalid_request',
    description: 'The MCP request headers and body disagree',
    body: { jsonrpc: '2.0', id: 7, error: { code: -32020, message: 'Bad Request: The MCP request headers and body disagree' } },
  },
  McpUnsupportedProtocolVersion: {
    make: () => new E.McpUnsupportedProtocolVersion('2099-01-01', ['2025-06-18', '2026-07-28'], true, 'r1'),
    code: 'ERR_MCP_UNSUPPORTED_PROTOCOL_VERSION',
    status: 400,
    error: 'invalid_request',
    description: 'This endpoint does not accept the MCP protocol version of the request',
    body: {
      jsonrpc: '2.0',
      id: 'r1',
      error: { code: -32022, message: 'Unsupported protocol version: 2099-01-01', data: { supported: ['2025-06-18', '2026-07-28'], requested: '2099-01-01' } },
    },
  },
  McpOriginRefused: {
    make: () => new E.McpOriginRefused(),
    code: 'ERR_MCP_ORIGIN_REFUSED',
    status: 403,
    error: 'forbidden',
    description: 'Requests from this Origin are not accepted',
    body: { jsonrpc: '2.0', error: { code: -32000, message: 'Forbidden: Requests from this Origin are not accepted' } },
  },
  McpSessionNotFound: {
    make: () => new E.McpSessionNotFound(),
    code: 'ERR_MCP_SESSION_NOT_FOUND',
    status: 404,
    error: 'not_found',
    description: 'Session not found',
    body: { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null },
  },
  BadGateway: { make: () => new E.BadGateway(), code: 'ERR_BAD_GATEWAY', status: 502, error: 'bad_gateway', description: 'The upstream could not be reached' },
  GatewayTimeout: {
    make: () => new E.GatewayTimeout(),
    code: 'ERR_GATEWAY_TIMEOUT',
    status: 504,
    error: 'gateway_timeout',
    description: 'The upstream did not answer in time',
  },
}

/** Every exported OAuthError subclass, found by walking the module (not by a list that could go stale). */
const exportedClasses = Object.entries(errors).filter(
  (entry): entry is [string, typeof OAuthError] => typeof entry[1] === 'function' && entry[1].prototype instanceof OAuthError,
)

function reporting(): { reporting: FailureReporting; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  const log = createLogger('info', sink as unknown as Parameters<typeof createLogger>[1])
  return { reporting: { face: 'as', metrics: new Metrics(), rootLog: log, quiet: false }, lines }
}

/** A real server whose handler throws what the test tells it to, answered by the one failure path. */
async function throwingServer(t: Test, report: FailureReporting, thrown: Map<string, () => unknown>): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    try {
      throw (thrown.get(req.url ?? '') ?? (() => new Error('no such case')))()
    } catch (err) {
      sendError(res, answerFailure(err, report.rootLog, report).answer)
    }
  })
  const serverAt = await listen(server)
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return serverAt.url
}

t.test('every error class is listed, and every listed class exists', async (t) => {
  const exported = exportedClasses.map(([name]) => name).sort()
  t.same(exported, Object.keys(CASES).sort())
})

t.test('codes are stable ERR_ strings, one per class, the same on the class and its instances', async (t) => {
  const seen = new Set<string>()
  for (const [name, cls] of exportedClasses) {
    const expected = CASES[name]
    if (expected === undefined) continue
    t.equal(cls.code, expected.code, `${name}.code`)
    t.equal(expected.make().code, expected.code, `new ${name}().code`)
    t.match(cls.code, /^ERR_[A-Z_]+$/, `${name}: ERR_ style`)
    t.notOk(seen.has(cls.code), `${name}: its code is its own`)
    seen.add(cls.code)
  }
  t.equal(StoreUnavailableError.code, 'ERR_STORE_UNAVAILABLE')
  t.equal(new StoreUnavailableError().code, 'ERR_STORE_UNAVAILABLE')
  t.equal(new errors.ConfigError([]).code, 'ERR_CONFIG_INVALID')
  t.equal(errors.ClientAborted.code, 'ERR_CLIENT_ABORTED')
  t.equal(new errors.ClientAborted().code, 'ERR_CLIENT_ABORTED')
})

t.test('each class is answered with its status, error, description and headers', async (t) => {
  const { reporting: report } = reporting()
  const base = await throwingServer(t, report, new Map(Object.entries(CASES).map(([name, c]) => [`/${name}`, c.make])))
  for (const [name, c] of Object.entries(CASES)) {
    const r = await fetch(`${base}/${name}`)
    const body = (await r.json()) as Record<string, unknown>
    t.equal(r.status, c.status, `${name}: status`)
    t.same(body, c.body ?? { ...(c.error !== undefined ? { error: c.error } : {}), error_description: c.description }, `${name}: body`)
    t.equal(r.headers.get('www-authenticate'), c.wwwAuthenticate ?? null, `${name}: WWW-Authenticate`)
    t.equal(r.headers.get('cache-control'), 'no-store', `${name}: never cached`)
    t.equal(r.headers.get('content-type'), 'application/json')
    for (const [header, value] of Object.entries(c.headers ?? {})) t.equal(r.headers.get(header), value, `${name}: ${header}`)
  }
})

t.test('anything else thrown: a store outage is 503, a bug is 500 without detail', async (t) => {
  const { reporting: report, lines } = reporting()
  const base = await throwingServer(
    t,
    report,
    new Map<string, () => unknown>([
      ['/store', () => new StoreUnavailableError('redis: connection refused')],
      ['/bug', () => new TypeError('secret-looking detail')],
      ['/string', () => 'a thrown string'],
      ['/undefined', () => undefined],
      ['/errno', () => Object.assign(new Error('x'), { code: 'ERR_STORE_UNAVAILABLE' })],
    ]),
  )
  const store = await fetch(`${base}/store`)
  t.equal(store.status, 503)
  t.same(await store.json(), { error: 'temporarily_unavailable', error_description: 'The service is temporarily unavailable' })
  t.equal(report.metrics.storeErrors.get({ face: 'as' }), 1, 'a store outage is counted, with its face')
  t.match(
    lines.find((l) => l.msg === 'store unavailable'),
    { level: 40, err: 'redis: connection refused' },
  )
  for (const path of ['/bug', '/string', '/undefined', '/errno']) {
    const r = await fetch(`${base}${path}`)
    t.equal(r.status, 500, `${path}: 500`)
    t.same(await r.json(), { error: 'server_error', error_description: 'Internal error' }, `${path}: no detail in the answer`)
  }
  t.equal(report.metrics.storeErrors.get({ face: 'as' }), 1, 'a foreign error borrowing the code is not a store outage')
  t.equal(lines.filter((l) => l.msg === 'unhandled error' && l.level === 50).length, 4, 'each bug is logged at error')
})

t.test('failureOf classifies without side effects', async (t) => {
  t.equal(failureOf(new errors.InvalidGrant()).kind, 'refused')
  t.equal(failureOf(new StoreUnavailableError()).kind, 'store_unavailable')
  t.equal(failureOf(new RangeError()).kind, 'internal')
  t.equal(failureOf(new errors.ClientAborted()).kind, 'client_gone', 'a client that left mid-body is not a bug')
  const own = new errors.SlowDown()
  t.equal(failureOf(own).answer, own, 'a refusal is its own answer')
})

t.test('the gateway face logs refusals only at debug, and store outages under face="gateway"', async (t) => {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'))
      done()
    },
  })
  const log = createLogger('info', sink as unknown as Parameters<typeof createLogger>[1])
  const report: FailureReporting = { face: 'gateway', metrics: new Metrics(), rootLog: log, quiet: true }
  answerFailure(new errors.InvalidToken('The access token is invalid', { cause: 'bad signature' }), log, report)
  answerFailure(new StoreUnavailableError(), log, report)
  t.same(lines, [], 'nothing at info')
  t.equal(report.metrics.storeErrors.get({ face: 'gateway' }), 1)
  t.equal(report.metrics.storeErrors.get({}), 0)
})

t.test('on a raw connection (refused upgrade, unparsable request) the answer is the same one', async (t) => {
  const server = createServer()
  server.on('upgrade', (_req, socket) => errorOnSocket(socket, new errors.InsufficientScope(['chat']), { realm: 'chat' }, 'req-1'))
  const serverAt = await listen(server)
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const socket = connect(serverAt.port, '127.0.0.1')
  socket.write('GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n')
  const chunks: Buffer[] = []
  for await (const chunk of socket) chunks.push(chunk as Buffer)
  const [head = '', body] = Buffer.concat(chunks).toString('latin1').split('\r\n\r\n')
  const lines = head.split('\r\n')
  t.equal(lines[0], 'HTTP/1.1 403 Forbidden')
  const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 2)]))
  t.equal(
    headers.get('www-authenticate'),
    'Bearer realm="chat", error="insufficient_scope", error_description="The access token does not grant the scope this request needs", scope="chat"',
  )
  t.equal(headers.get('connection'), 'close')
  t.equal(headers.get('x-request-id'), 'req-1')
  t.equal(headers.get('cache-control'), 'no-store')
  t.equal(headers.get('content-length'), String(Buffer.byteLength(body ?? '')))
  t.same(JSON.parse(body ?? ''), { error: 'insufficient_scope', error_description: 'The access token does not grant the scope this request needs' })
})
