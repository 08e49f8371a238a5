import { STATUS_CODES, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { OAuthError } from '../errors.js'
import { isGrpcRequest, sendGrpcError } from './grpc.js'
import { cutResponse } from './http2-request.js'

/**
 * The one place where a failure becomes an HTTP answer: status, JSON body,
 * and the `WWW-Authenticate` challenge (`errorAnswer`), written on a
 * response (`sendError`) or on a raw connection (`errorOnSocket`). Every
 * endpoint and the gateway throw an `OAuthError` and let this render it;
 * `failure.ts` turns anything else thrown into one.
 */

/** Headers every token-bearing JSON answer carries (RFC 6749 5.1). */
export const NO_STORE: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  pragma: 'no-cache',
})

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const payload = JSON.stringify(body)
  res.statusCode = status
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  res.setHeader('content-type', 'application/json')
  res.setHeader('content-length', Buffer.byteLength(payload))
  res.end(payload)
}

/**
 * RFC 6750 3 limits error_description and scope to printable ASCII without
 * `"` and `\`; anything else is dropped rather than escaped so a header can
 * never be broken out of.
 */
export function challengeValue(value: string): string {
  return value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '')
}

/**
 * Build a `WWW-Authenticate` value: `Bearer realm="x", error="invalid_token", ...`.
 * RFC 6750 3: realm first; a request without credentials gets no error attribute.
 */
export function buildChallenge(scheme: string, realm: string, params: Readonly<Record<string, string | undefined>>): string {
  const parts = [`realm="${challengeValue(realm)}"`]
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === '') continue
    parts.push(`${name}="${challengeValue(value)}"`)
  }
  return `${scheme} ${parts.join(', ')}`
}

/**
 * How a resource that takes DPoP-bound tokens challenges (RFC 9449 7.1): a
 * `DPoP` challenge with `algs`, beside `Bearer` where bearer tokens are
 * accepted too. The error goes in the challenge of the scheme the client
 * used (or in `DPoP` when it is the only one).
 */
export interface DpopChallenge {
  /** The accepted proof algorithms, space separated. */
  readonly algs: string
  /** Bearer tokens are accepted too: both challenges are sent. */
  readonly bearer: boolean
  /** The request used the DPoP scheme: the error goes in the DPoP challenge. */
  readonly presented: boolean
}

export interface ErrorReplyOptions {
  /** realm for the challenge (default `bearward`). */
  realm?: string
  /** The resource takes DPoP-bound tokens: challenge for DPoP too (RFC 9449 7.1). */
  dpop?: DpopChallenge
  /** Extra headers, e.g. CORS headers already decided by the endpoint. */
  headers?: Readonly<Record<string, string>>
  /**
   * RFC 9728 5.1: the route's protected resource metadata URL, named in
   * every Bearer challenge as `resource_metadata`.
   */
  resourceMetadata?: string
  /**
   * The scopes the request needs, space separated: `scope` of a 401 Bearer
   * challenge, so a client asks for them at once (RFC 6750 3; MCP
   * authorization, scope selection). A 403 names its own.
   */
  scope?: string
}

/**
 * The `WWW-Authenticate` value of a resource's refusal: Bearer, DPoP, or both
 * (RFC 6750 3, RFC 9449 7.1). The error (and on a 401 the scope the request
 * needs) goes in the challenge of the scheme the client used, with realm and
 * `resource_metadata` (RFC 9728 5.1); beside a Bearer error the DPoP
 * challenge is just `DPoP algs="…"`, which tells a client DPoP is taken.
 */
function resourceChallenge(err: OAuthError, realm: string, options: ErrorReplyOptions): string {
  const params: Record<string, string | undefined> = {
    error: err.error || undefined,
    error_description: err.error ? err.description : undefined,
    ...err.challengeParams,
  }
  if (err.status === 401 && params.scope === undefined) params.scope = options.scope
  const meta = { resource_metadata: options.resourceMetadata }
  const dpop = options.dpop
  if (dpop === undefined) return buildChallenge(err.challenge === 'DPoP' ? 'DPoP' : 'Bearer', realm, { ...params, ...meta })
  const inDpop = err.challenge === 'DPoP' || dpop.presented || !dpop.bearer
  if (!inDpop) {
    // The error is the Bearer challenge's; the DPoP one only says it is accepted too (RFC 9449 7.1 example).
    return `${buildChallenge('Bearer', realm, { ...params, ...meta })}, DPoP algs="${challengeValue(dpop.algs)}"`
  }
  const dpopPart = buildChallenge('DPoP', realm, { ...params, algs: dpop.algs, ...meta })
  return dpop.bearer ? `${buildChallenge('Bearer', realm, meta)}, ${dpopPart}` : dpopPart
}

/** An error answer as status, headers and JSON body: what both writers below send. */
export interface ErrorAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/**
 * Render an OAuthError. The body is `{ error, error_description }`; a 401
 * or 403 carries the challenge its class names (Basic at client-authenticated
 * endpoints, RFC 6749 5.2; Bearer at resources, RFC 6750 3; DPoP beside or
 * instead of it where DPoP-bound tokens are taken, RFC 9449 7.1).
 */
export function errorAnswer(err: OAuthError, options: ErrorReplyOptions = {}): ErrorAnswer {
  const realm = options.realm ?? 'bearward'
  const headers: Record<string, string> = { ...NO_STORE, ...options.headers, ...err.headers }
  if (err.challenge === 'Bearer' || err.challenge === 'DPoP') {
    headers['www-authenticate'] = resourceChallenge(err, realm, options)
  } else if (err.challenge === 'Basic') {
    headers['www-authenticate'] = buildChallenge('Basic', realm, {})
  }
  const body: Record<string, string> = {}
  if (err.error) body.error = err.error
  if (err.description !== undefined) body.error_description = err.description
  if (!err.error) body.error_description = 'A bearer access token is required'
  return { status: err.status, headers, body: JSON.stringify(err.body ?? body) }
}

/** Answer with an OAuthError (see errorAnswer). An answer already started is destroyed instead. */
export function sendError(res: ServerResponse, err: OAuthError, options: ErrorReplyOptions = {}): void {
  if (res.headersSent) {
    cutResponse(res)
    return
  }
  const answer = errorAnswer(err, options)
  res.statusCode = answer.status
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value)
  res.setHeader('content-type', 'application/json')
  res.setHeader('content-length', Buffer.byteLength(answer.body))
  res.end(answer.body)
}

/**
 * sendError for a request that has an id: the answer carries X-Request-Id,
 * the id the request's log lines carry. An answer already started is
 * destroyed by sendError as usual.
 */
export function sendErrorWithId(res: ServerResponse, requestId: string, err: OAuthError, options?: ErrorReplyOptions): void {
  // A gRPC call is refused in gRPC's terms (http/grpc.ts); an answer already started is destroyed as usual.
  if (!res.headersSent && isGrpcRequest(res.req)) {
    sendGrpcError(res, requestId, err, errorAnswer(err, options).headers)
    return
  }
  if (!res.headersSent) res.setHeader('x-request-id', requestId)
  sendError(res, err, options)
}

/**
 * The same answer written on a raw connection, where there is no
 * ServerResponse: an upgrade request we refuse, or a request head Node could
 * not parse. The connection closes after it (a refused upgrade, or a
 * connection whose framing is lost, cannot carry another request).
 */
export function errorOnSocket(socket: Duplex, err: OAuthError, options: ErrorReplyOptions = {}, requestId?: string): void {
  const answer = errorAnswer(err, options)
  let head = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}\r\n`
  for (const [name, value] of Object.entries(answer.headers)) {
    if (name !== 'connection') head += `${name}: ${value}\r\n`
  }
  if (requestId !== undefined) head += `x-request-id: ${requestId}\r\n`
  head += `date: ${new Date().toUTCString()}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(answer.body)}\r\n\r\n`
  socket.end(head + answer.body, () => socket.destroy())
}

/** Security headers for the server-rendered pages (login, consent, device, errors). */
export const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  pragma: 'no-cache',
  // No script at all; styles only from our own stylesheet. form-action is left
  // out on purpose: Chrome applies it to the redirect that follows a consent
  // POST, which must go to the client's redirect_uri.
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // same-origin, not no-referrer: under no-referrer the Fetch standard
  // serializes a form POST's Origin as `null`, which isSameOrigin (rightly)
  // refuses, so no browser could sign in. same-origin keeps our origin on our
  // own forms and sends nothing to other sites (a client's redirect_uri).
  'referrer-policy': 'same-origin',
})

export function sendHtml(res: ServerResponse, status: number, html: string, headers: Readonly<Record<string, string>> = {}): void {
  res.statusCode = status
  for (const [name, value] of Object.entries({ ...PAGE_HEADERS, ...headers })) res.setHeader(name, value)
  res.setHeader('content-length', Buffer.byteLength(html))
  res.end(html)
}

/** 302/303 redirect. The Location is built by the caller from trusted parts. */
export function sendRedirect(res: ServerResponse, location: string, status: 302 | 303 = 302, headers: Readonly<Record<string, string>> = {}): void {
  res.statusCode = status
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  res.setHeader('location', location)
  res.setHeader('cache-control', 'no-store')
  res.setHeader('referrer-policy', 'no-referrer')
  res.setHeader('content-length', 0)
  res.end()
}
