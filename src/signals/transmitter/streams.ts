/**
 * A receiver's stream (SSF 1.0 8.1.1): what it asked for, as bearward keeps it
 * (one per receiver client, in the store's `signals` family), and the reading
 * of a receiver's request body into one. Every field is bounded: a receiver is
 * a client, and its stream lives in the shared store.
 */
import { InvalidRequest } from '../../errors.js'
import { EVENTS_SUPPORTED } from './events.js'

/** RFC 8935 push, the only delivery method bearward offers. */
export const PUSH_METHOD = 'urn:ietf:rfc:8935'
export type StreamStatus = 'enabled' | 'paused' | 'disabled'
const STATUSES: readonly StreamStatus[] = ['enabled', 'paused', 'disabled']

/** A stream request body larger than this is refused (413) unread. */
export const STREAM_BODY_LIMIT = 8 * 1024
const MAX_URL = 2048
const MAX_EVENTS_REQUESTED = 32
const MAX_EVENT_URI = 256
const MAX_DESCRIPTION = 512
const MAX_AUTHORIZATION_HEADER = 2048
const MAX_REASON = 512

export interface StreamRecord {
  streamId: string
  clientId: string
  eventsRequested: string[]
  endpointUrl: string
  /** SSF 1.0 8.1.1 `delivery.authorization_header`: sent with each push; never logged nor echoed. */
  authorizationHeader: string | null
  description: string | null
  status: StreamStatus
  reason: string | null
}

/** What a receiver may set: the fields of a create (POST), replace (PUT) or update (PATCH). */
export type StreamFields = Pick<StreamRecord, 'eventsRequested' | 'endpointUrl' | 'authorizationHeader' | 'description'>

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function boundedString(v: unknown, name: string, max: number): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > max) throw new InvalidRequest(`\`${name}\` must be a string of 1 to ${max} characters`)
  return v
}

/** A JSON object body, or invalid_request. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    throw new InvalidRequest('The body must be a JSON object')
  }
  if (!isObject(parsed)) throw new InvalidRequest('The body must be a JSON object')
  return parsed
}

/**
 * Read the fields a receiver sent. `base`: the stream updated (PATCH keeps
 * what is absent); null for a create or replace, where `delivery` is required.
 */
export function readStreamFields(body: Record<string, unknown>, base: StreamFields | null): StreamFields {
  let eventsRequested = base?.eventsRequested ?? []
  if (body.events_requested !== undefined) {
    const list = body.events_requested
    if (!Array.isArray(list) || list.length > MAX_EVENTS_REQUESTED) {
      throw new InvalidRequest(`\`events_requested\` must be an array of at most ${MAX_EVENTS_REQUESTED} event type URIs`)
    }
    eventsRequested = [...new Set(list.map((e) => boundedString(e, 'events_requested[]', MAX_EVENT_URI)))]
  }
  let endpointUrl = base?.endpointUrl
  let authorizationHeader = base?.authorizationHeader ?? null
  if (body.delivery !== undefined || base === null) {
    const d = body.delivery
    if (!isObject(d)) throw new InvalidRequest('`delivery` is required: `{ "method": "urn:ietf:rfc:8935", "endpoint_url": "https://..." }`')
    if (d.method !== PUSH_METHOD) throw new InvalidRequest(`\`delivery.method\` must be \`${PUSH_METHOD}\` (push): the only method this transmitter offers`)
    endpointUrl = readEndpointUrl(d.endpoint_url)
    authorizationHeader =
      d.authorization_header === undefined ? null : boundedString(d.authorization_header, 'delivery.authorization_header', MAX_AUTHORIZATION_HEADER)
  }
  if (endpointUrl === undefined) throw new InvalidRequest('`delivery.endpoint_url` is required')
  let description = base?.description ?? null
  if (body.description !== undefined) description = boundedString(body.description, 'description', MAX_DESCRIPTION)
  return { eventsRequested, endpointUrl, authorizationHeader, description }
}

function readEndpointUrl(v: unknown): string {
  const s = boundedString(v, 'delivery.endpoint_url', MAX_URL)
  let url: URL
  try {
    url = new URL(s)
  } catch {
    throw new InvalidRequest('`delivery.endpoint_url` must be an absolute https URL')
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '' || url.hash !== '') {
    throw new InvalidRequest('`delivery.endpoint_url` must be an absolute https URL without credentials or fragment')
  }
  return url.href
}

export function readStatus(v: unknown): StreamStatus {
  if (typeof v !== 'string' || !(STATUSES as readonly string[]).includes(v)) throw new InvalidRequest('`status` must be enabled, paused or disabled')
  return v as StreamStatus
}

export function readReason(v: unknown): string | null {
  return v === undefined ? null : boundedString(v, 'reason', MAX_REASON)
}

/** The events the stream receives: those it asked for that bearward sends (SSF 1.0 8.1.1 `events_delivered`). */
export function eventsDelivered(s: Pick<StreamRecord, 'eventsRequested'>): string[] {
  return s.eventsRequested.filter((e) => EVENTS_SUPPORTED.includes(e))
}

/** The stream configuration as a receiver reads it (SSF 1.0 8.1.1); the authorization header is never echoed. */
export function streamConfiguration(s: StreamRecord, issuer: string): Record<string, unknown> {
  return {
    stream_id: s.streamId,
    iss: issuer,
    aud: s.clientId,
    events_supported: [...EVENTS_SUPPORTED],
    events_requested: s.eventsRequested,
    events_delivered: eventsDelivered(s),
    delivery: { method: PUSH_METHOD, endpoint_url: s.endpointUrl },
    ...(s.description === null ? {} : { description: s.description }),
  }
}

/** A stored stream, or null when the store's text is not one (never trusted blindly: the store is shared). */
export function parseStored(text: string | null): StreamRecord | null {
  if (text === null) return null
  try {
    const v = JSON.parse(text) as StreamRecord
    return typeof v.streamId === 'string' && typeof v.clientId === 'string' && typeof v.endpointUrl === 'string' ? v : null
  } catch {
    return null
  }
}
