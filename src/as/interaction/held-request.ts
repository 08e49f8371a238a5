/**
 * Authorization requests the server holds and the browser names by
 * reference (`request_uri`): pushed by the client to /par (RFC 9126), or a
 * request object or pushed request resolved at /authorize and carried by
 * the sign-in pages from then on.
 *
 * A pushed `request_uri` is taken at /authorize exactly once, and the
 * authorization it starts gets a fresh reference of its own (a `started`
 * record), which every later step (login, second factor, consent, the
 * redirect back to /authorize after a login) names instead of the request's
 * parameters. The parameters therefore never travel through the browser,
 * where they could be changed, and the pushed `request_uri` cannot be used
 * again. The started record is taken when the code is issued or the person
 * denies: one authorization per pushed request.
 *
 * Records are keyed by the hash of the client id and the reference: a
 * reference presented with another client's id finds nothing, and cannot
 * spend the real client's request.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9126#section-4
 * @see https://www.rfc-editor.org/rfc/rfc9126#section-7.3
 */
import { epochSeconds } from '../../clock.js'
import { randomToken } from '../../crypto/random.js'
import { InvalidRequestUri, RequestUriNotSupported } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import type { PushedRequestRecord } from '../../store/types.js'
import type { AsContext } from '../context.js'

/** RFC 9126 2.2: the URN prefix of a pushed request's reference. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:'

/**
 * How long an authorization under way may take from /authorize to the code:
 * a sign-in, perhaps setting up a second factor, and consent.
 */
export const STARTED_REQUEST_TTL_SEC = 1800

/** A request held for a browser, as an authorization step reads it. */
export interface HeldRequest {
  /** The store key of the started record: taken when the code is issued or the person denies. */
  readonly key: string
  readonly record: PushedRequestRecord
  /** The query the pages carry from now on: the client and the reference, nothing else. */
  readonly raw: string
}

function keyOf(clientId: string, uri: string): string {
  return hashToken(`${clientId}\n${uri}`)
}

/** The query the pages carry for a held request: the client and the reference. */
function carried(clientId: string, uri: string): string {
  return new URLSearchParams({ client_id: clientId, request_uri: uri }).toString()
}

function newReference(): string {
  return `${REQUEST_URI_PREFIX}${randomToken()}`
}

/**
 * Keep a request a client pushed (its parameters validated) for
 * `par.request_uri_ttl`; its `request_uri` and `expires_in` (RFC 9126 2.2).
 */
export async function pushRequest(as: AsContext, clientId: string, params: string, signed: boolean): Promise<{ requestUri: string; expiresIn: number }> {
  const requestUri = newReference()
  const ttl = as.as.par.requestUriTtlSec
  const record: PushedRequestRecord = { clientId, stage: 'pushed', params, signed, pushed: true, expiresAt: epochSeconds(as.clock) + ttl }
  await as.store.pushedRequests.put(keyOf(clientId, requestUri), record, ttl)
  return { requestUri, expiresIn: ttl }
}

/** Start an authorization with `params` under a fresh reference (a request object resolved at /authorize, or a pushed request taken). */
export async function startHeld(as: AsContext, clientId: string, params: string, o: { signed: boolean; pushed: boolean }): Promise<HeldRequest> {
  const uri = newReference()
  const now = epochSeconds(as.clock)
  const record: PushedRequestRecord = {
    clientId,
    stage: 'started',
    params,
    signed: o.signed,
    pushed: o.pushed,
    startedAt: now,
    expiresAt: now + STARTED_REQUEST_TTL_SEC,
  }
  const key = keyOf(clientId, uri)
  await as.store.pushedRequests.put(key, record, STARTED_REQUEST_TTL_SEC)
  return { key, record, raw: carried(clientId, uri) }
}

/**
 * The request `uri` names for `clientId`. A pushed one is taken (once,
 * atomically, and only at /authorize: `entry`) and a started authorization
 * made of it; a started one is read. Throws RequestUriNotSupported for a
 * reference that is not ours (another host's URL: RFC 9101 6.2 is not
 * supported) and InvalidRequestUri for one that is unknown, expired, used,
 * or another client's.
 */
export async function resolveRequestUri(as: AsContext, clientId: string, uri: string, entry: boolean): Promise<HeldRequest> {
  if (!uri.startsWith(REQUEST_URI_PREFIX)) throw new RequestUriNotSupported('Only request_uri values pushed to this server (POST /par) are accepted')
  const key = keyOf(clientId, uri)
  const found = await as.store.pushedRequests.get(key)
  if (found === null) throw new InvalidRequestUri(undefined, { cause: 'request_uri unknown, expired, used or pushed by another client' })
  if (found.stage === 'started') return { key, record: found, raw: carried(clientId, uri) }
  if (!entry) throw new InvalidRequestUri(undefined, { cause: 'a pushed request_uri outside /authorize' })
  // Of two browsers racing with one request_uri, one takes it; the other finds nothing.
  const taken = await as.store.pushedRequests.take(key)
  if (taken === null || taken.stage !== 'pushed') throw new InvalidRequestUri(undefined, { cause: 'request_uri taken by a concurrent request' })
  return startHeld(as, clientId, taken.params, { signed: taken.signed, pushed: true })
}

/** End the authorization under way (the code issued, or denied): false when it had already ended (another tab finished it). */
export async function finishHeld(as: AsContext, key: string): Promise<boolean> {
  return (await as.store.pushedRequests.take(key)) !== null
}
