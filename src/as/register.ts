/**
 * Dynamic client registration (RFC 7591) at POST /register, and the client
 * configuration endpoint (RFC 7592) at GET and DELETE
 * /register?client_id=... with the registration access token. Only when
 * `authorization_server.registration.enabled`.
 *
 * What keeps an open registration endpoint from becoming a problem:
 * - each address may register `rate_limit.per_address` clients per window
 *   (counted before anything else, bad requests included; an IPv6 address
 *   by its network, `authorization_server.rate_limit.ipv6_prefix`), and the
 *   store holds at most `max_clients` live registered clients (503 past it,
 *   see RegistrationFull), so nobody fills the store; an
 *   `initial_access_token` closes the door to strangers;
 * - the metadata passes `validateClientMetadata` (redirect URIs, grants,
 *   scopes within `registration.scopes`, plus `openid` and `offline_access`);
 * - the client secret and the registration access token are stored only as
 *   hashes (scrypt and SHA-256) and shown once, in the 201 answer;
 * - an unused client is forgotten after `client_ttl` (the store's expiry);
 * - its consent page is always shown, with a caution (see interaction/authorization-steps.ts).
 */
import { requestOrigin } from './audit.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { epochSeconds } from '../clock.js'
import type { RegistrationConfig } from '../config/validated-config.js'
import { randomBase64url } from '../crypto/random.js'
import { generateClientSecret, hashSecret, safeEqual } from '../crypto/secret.js'
import { InvalidClientMetadata, InvalidRequest, InvalidToken, MethodNotAllowed, NotFound, RegistrationFull, TooManyRequests } from '../errors.js'
import { readBody } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import { hashToken } from '../store/hash.js'
import type { RegisteredClientMetadata, RegisteredClientRecord } from '../store/types.js'
import { validateClientMetadata } from './client-metadata.js'
import { selfDescribedClientScopes } from './scope.js'
import type { AsContext, AsHandler } from './context.js'
import { addressBucket } from '../http/address-bucket.js'

/** A registration request is a small JSON object; anything bigger is not one. */
const MAX_BODY = 16 * 1024
/** The longest Retry-After a full registration endpoint gives. */
const MAX_RETRY_AFTER_SEC = 3600

/** The client configuration endpoint of a client (RFC 7592 `registration_client_uri`). */
export function registrationClientUri(as: AsContext, clientId: string): string {
  return `${as.issuer}/register?client_id=${encodeURIComponent(clientId)}`
}

/** The `Authorization: Bearer` value of a request, or null. */
function bearer(req: IncomingMessage): string | null {
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(req.headers.authorization ?? '')
  return m?.[1] ?? null
}

function isJson(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase()
  return type === 'application/json'
}

/** The client's metadata as answered: what it registered, its id and when. */
function clientInformation(as: AsContext, record: RegisteredClientRecord): Record<string, unknown> {
  return {
    client_id: record.clientId,
    client_id_issued_at: record.issuedAt,
    ...(record.secretHash !== null ? { client_secret_expires_at: 0 } : {}),
    registration_client_uri: registrationClientUri(as, record.clientId),
    ...record.metadata,
  }
}

/** RFC 7591 3: POST /register. */
async function register(req: IncomingMessage, res: ServerResponse, as: AsContext, registration: RegistrationConfig): Promise<void> {
  const address = addressBucket(as.clientAddress.of(req), as.as.rateLimit.ipv6Prefix)
  if ((await as.store.rateLimits.hit(`register:${hashToken(address)}`, registration.windowSec)) > registration.perAddress) {
    throw new TooManyRequests(registration.windowSec, 'Too many registrations from this address; try again later')
  }
  if (registration.initialAccessToken !== null) {
    const presented = bearer(req)
    if (presented === null || !safeEqual(presented, registration.initialAccessToken)) {
      throw new InvalidToken('A valid initial access token is required to register', { cause: 'initial access token missing or wrong' })
    }
  }
  if (!isJson(req)) throw new InvalidRequest('Content-Type must be application/json')
  const body = await readBody(req, MAX_BODY)
  let input: unknown
  try {
    input = JSON.parse(body.toString('utf8'))
  } catch {
    throw new InvalidClientMetadata('The request body is not valid JSON')
  }
  const metadata: RegisteredClientMetadata = validateClientMetadata(input, {
    allowedScopes: selfDescribedClientScopes(registration.scopes),
    declaredDetailsTypes: as.authorizationDetailsTypes.names(),
  })

  const clientId = randomBase64url(16)
  // A public client has no secret, and a private_key_jwt client needs none: it signs with its key.
  const method = metadata.token_endpoint_auth_method
  const secret = method === 'none' || method === 'private_key_jwt' ? null : generateClientSecret()
  const registrationToken = randomBase64url(32)
  const now = epochSeconds(as.clock)
  const record: RegisteredClientRecord = {
    clientId,
    secretHash: secret === null ? null : await hashSecret(secret),
    registrationTokenHash: hashToken(registrationToken),
    metadata,
    issuedAt: now,
    expiresAt: now + registration.clientTtlSec,
  }
  const seat = await as.store.clients.putWithin(record, registration.maxClients)
  as.metrics.registeredClients.set(seat.live)
  if (!seat.stored) {
    as.metrics.registrationsRefused.inc()
    throw new RegistrationFull(retryAfterSec(as, seat.freeAtMs))
  }
  as.audit.record({
    event: 'client.registered',
    actor: { kind: 'anonymous' },
    subject: { kind: 'client', id: clientId },
    clientId,
    ...requestOrigin(as, req),
    outcome: 'success',
  })
  const answer = clientInformation(as, record)
  sendJson(res, 201, { ...answer, ...(secret !== null ? { client_secret: secret } : {}), registration_access_token: registrationToken }, NO_STORE)
}

/** Until the first live client's seat frees itself, at most an hour (a deletion frees one sooner). */
function retryAfterSec(as: AsContext, freeAtMs: number): number {
  return Math.min(MAX_RETRY_AFTER_SEC, Math.max(1, Math.ceil((freeAtMs - as.clock.now()) / 1000)))
}

/**
 * RFC 7592 2: the registration a registration access token is for. A wrong
 * token and an unknown client get the same 401 (2.1: "MUST respond with
 * HTTP 401"), so the endpoint tells nobody which ids exist.
 */
async function authorizedRecord(req: IncomingMessage, as: AsContext, clientId: string | null): Promise<RegisteredClientRecord> {
  const presented = bearer(req)
  if (presented === null) throw new InvalidToken('The registration access token is required', { cause: 'no registration access token' })
  if (clientId === null) throw new InvalidRequest('The request names no client_id')
  const record = await as.store.clients.get(clientId)
  if (record === null || !safeEqual(hashToken(presented), record.registrationTokenHash)) {
    throw new InvalidToken('The registration access token is invalid', {
      cause: record === null ? 'unknown registered client' : 'wrong registration access token',
    })
  }
  return record
}

/**
 * The registration endpoint and the client configuration endpoint.
 * @see https://www.rfc-editor.org/rfc/rfc7591#section-3
 * @see https://www.rfc-editor.org/rfc/rfc7592#section-2
 */
export const handleRegister: AsHandler = async (req, res, ctx, as) => {
  const registration = as.as.registration
  if (registration === null) throw new NotFound()
  if (req.method === 'POST') return register(req, res, as, registration)
  const clientId = new URLSearchParams(ctx.rawQuery).get('client_id')
  if (req.method === 'GET') {
    const record = await authorizedRecord(req, as, clientId)
    return sendJson(res, 200, clientInformation(as, record), NO_STORE)
  }
  if (req.method === 'DELETE') {
    const record = await authorizedRecord(req, as, clientId)
    await as.store.clients.delete(record.clientId)
    as.metrics.registeredClients.set(await as.store.clients.count())
    res.statusCode = 204
    for (const [k, v] of Object.entries(NO_STORE)) res.setHeader(k, v)
    res.end()
    return
  }
  throw new MethodNotAllowed(['POST', 'GET', 'DELETE'])
}
