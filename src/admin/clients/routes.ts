/**
 * /admin/v1/clients: every client the server knows, wherever it lives
 * (view.ts), and the admin-managed ones created, changed, disabled,
 * deleted and given a new secret here (actions.ts). Lists are sorted by id
 * and paginated with a signed cursor bound to the `source` filter.
 */
import { registeredClient } from '../../as/client-directory.js'
import { setTimeout as delay } from 'node:timers/promises'
import { type Clock, epochSeconds } from '../../clock.js'
import { byBytes } from '../../store/people/memory.js'
import { pageLimit } from '../cursor.js'
import { checkRevision, contentTag, ifMatchRevision, requiredIfMatch, revisionTag } from '../etag.js'
import { readJsonObject } from '../json-body.js'
import { badRequest } from '../problem.js'
import type { AdminCall, AdminReply, AdminRoute } from '../router.js'
import {
  auditClient,
  changed,
  createClient,
  endClientGrants,
  type FoundClient,
  findAnyClient,
  readOnlyClient,
  rotateSecret,
  validatedMetadata,
} from './actions.js'
import { adminClientView, CLIENT_SOURCES, type ClientSource, type ClientView, clientView } from './view.js'

function sourceFilter(value: string | null): ClientSource | null {
  if (value === null) return null
  if (!(CLIENT_SOURCES as readonly string[]).includes(value)) throw badRequest(`source must be one of ${CLIENT_SOURCES.join(', ')}`)
  return value as ClientSource
}

async function listClients({ query, admin }: AdminCall): Promise<AdminReply> {
  const limit = pageLimit(query.get('limit'))
  const source = sourceFilter(query.get('source'))
  // The cursor is bound to the filter: a page of one source does not resume another.
  const list = source === null ? 'clients' : `clients?source=${source}`
  const cursor = query.get('cursor')
  const after = cursor === null ? null : admin.cursors.decode(list, cursor)
  const as = admin.as
  const now = epochSeconds(as.clock)
  const wants = (s: ClientSource): boolean => source === null || source === s
  const items: ClientView[] = []
  if (wants('config'))
    items.push(...[...as.clients.values()].filter((c) => after === null || byBytes(c.clientId, after) > 0).map((c) => clientView(c, 'config')))
  const registration = as.as.registration
  // Registered clients are found only while registration is on; metadata-document clients are fetched, not stored: neither is listed otherwise.
  if (wants('registration') && registration !== null)
    items.push(...(await as.store.clients.list(after, limit + 1)).map((r) => clientView(registeredClient(r, registration), 'registration')))
  if (wants('admin')) items.push(...(await as.store.adminClients.list(after, limit + 1)).map((r) => adminClientView(r, now)))
  items.sort((a, b) => byBytes(a.id, b.id))
  const page = items.slice(0, limit)
  const last = page[page.length - 1]
  return { status: 200, body: { items: page, next_cursor: items.length > limit && last !== undefined ? admin.cursors.encode(list, last.id) : null } }
}

function clientReply(found: FoundClient, nowSec: number, status = 200): AdminReply {
  if (found.kind === 'admin') return { status, body: adminClientView(found.record, nowSec), headers: { etag: revisionTag(found.record.version) } }
  const body = clientView(found.client)
  return { status, body, headers: { etag: contentTag(body) } }
}

/** The admin-managed client `id` names; 409 read_only for one that lives elsewhere. */
async function managed(call: AdminCall) {
  const found = await findAnyClient(call.admin.as, call.params.id as string)
  if (found.kind !== 'admin') throw readOnlyClient(found.client)
  return found.record
}

async function getClient({ params, admin }: AdminCall): Promise<AdminReply> {
  return clientReply(await findAnyClient(admin.as, params.id as string), epochSeconds(admin.as.clock))
}

async function postClient({ req, caller, admin }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const { record, secret } = await createClient(as, req, caller, await readJsonObject(req))
  const reply = clientReply({ kind: 'admin', record }, epochSeconds(as.clock), 201)
  return {
    ...reply,
    // The secret is shown here once; only its hash is kept.
    body: { ...(reply.body as ClientView), ...(secret === null ? {} : { client_secret: secret }) },
    headers: { ...reply.headers, location: `${as.issuer}/admin/v1/clients/${encodeURIComponent(record.clientId)}` },
  }
}

async function patchClient(call: AdminCall): Promise<AdminReply> {
  const { req, params, caller, admin } = call
  const as = admin.as
  const record = await managed(call)
  const expected = requiredIfMatch(req)
  const body = await readJsonObject(req)
  if (body.client_id !== undefined && body.client_id !== params.id) throw badRequest('client_id cannot change')
  const method = body.token_endpoint_auth_method
  if (method !== undefined && method !== record.metadata.token_endpoint_auth_method)
    throw badRequest('token_endpoint_auth_method cannot change: create another client')
  // A member given replaces the stored one; null removes it. The whole then passes the one validator again.
  const merged: Record<string, unknown> = { ...record.metadata }
  for (const [k, v] of Object.entries(body)) {
    if (v === null) delete merged[k]
    else merged[k] = v
  }
  const metadata = validatedMetadata(as, merged)
  const next = changed(await as.store.adminClients.update(record.clientId, expected === -1 ? null : expected, { metadata }, epochSeconds(as.clock)))
  auditClient(as, req, caller, 'client.updated', record.clientId)
  return clientReply({ kind: 'admin', record: next }, epochSeconds(as.clock))
}

/** Resolve once `clock` is past the whole second `sec` (at most a second's wait). */
async function untilAfter(clock: Clock, sec: number): Promise<void> {
  const wait = (sec + 1) * 1000 - clock.now()
  if (wait > 0 && wait <= 1000) await delay(wait)
}

async function setDisabled(call: AdminCall, disabled: boolean): Promise<AdminReply> {
  const { req, caller, admin } = call
  const as = admin.as
  const expected = ifMatchRevision(req)
  const record = await managed(call)
  checkRevision(expected, record.version)
  // The disable put a `client` entry on the revocation list that refuses its tokens expiring up to
  // a token lifetime from that second: enabled in that same second, its new tokens would be refused
  // too. Wait for the next second (at most one) so they expire after the entry.
  if (!disabled && record.disabled) await untilAfter(as.clock, record.updatedAt)
  const next = changed(
    await as.store.adminClients.update(record.clientId, expected === null || expected === -1 ? null : expected, { disabled }, epochSeconds(as.clock)),
  )
  // The flag first (every flow looks the client up), then what its grants still hold.
  if (disabled) await endClientGrants(as, req, caller, record.clientId)
  auditClient(as, req, caller, 'client.updated', record.clientId)
  return clientReply({ kind: 'admin', record: next }, epochSeconds(as.clock))
}

async function deleteClient(call: AdminCall): Promise<AdminReply> {
  const { req, caller, admin } = call
  const as = admin.as
  const expected = ifMatchRevision(req)
  const record = await managed(call)
  checkRevision(expected, record.version)
  changed(await as.store.adminClients.delete(record.clientId, expected === null || expected === -1 ? null : expected))
  await endClientGrants(as, req, caller, record.clientId)
  auditClient(as, req, caller, 'client.deleted', record.clientId)
  return { status: 204 }
}

async function rotate(call: AdminCall): Promise<AdminReply> {
  const { req, caller, admin } = call
  const as = admin.as
  const expected = ifMatchRevision(req)
  const record = await managed(call)
  checkRevision(expected, record.version)
  const body = await readJsonObject(req)
  const unknown = Object.keys(body).filter((k) => k !== 'previous_expires_at')
  if (unknown.length > 0) throw badRequest(`Unknown member: ${unknown.join(', ')}`)
  const until = body.previous_expires_at
  if (until !== undefined && (typeof until !== 'number' || !Number.isInteger(until))) throw badRequest('previous_expires_at is epoch seconds')
  const { record: next, secret } = await rotateSecret(as, req, caller, record, expected === -1 ? null : expected, until ?? null)
  return {
    status: 200,
    body: { client_id: next.clientId, client_secret: secret, previous_expires_at: next.previousExpiresAt as number },
    headers: { etag: revisionTag(next.version) },
  }
}

const ID_QUERY = {
  limit: { schema: { type: 'integer', minimum: 1, maximum: 200 }, description: 'Page size (default 50)' },
  cursor: { schema: { type: 'string' }, description: 'next_cursor of the previous page' },
}

export const CLIENT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/clients',
    operation: {
      operationId: 'listClients',
      summary: 'List clients: configured, registered (RFC 7591) and admin-managed',
      tags: ['clients'],
      query: {
        ...ID_QUERY,
        source: { schema: { enum: [...CLIENT_SOURCES] }, description: 'Only clients of this source' },
      },
      responses: { '200': { description: 'A page of clients', schema: 'ClientList' } },
    },
    handle: listClients,
  },
  {
    method: 'POST',
    path: '/clients',
    operation: {
      operationId: 'createClient',
      summary: 'Create an admin-managed client (its secret is in this answer only)',
      tags: ['clients'],
      requestBody: 'ClientCreate',
      responses: { '201': { description: 'Created', schema: 'ClientCreated', etag: true } },
    },
    handle: postClient,
  },
  {
    method: 'GET',
    path: '/clients/{id}',
    operation: {
      operationId: 'getClient',
      summary: 'Read a client',
      tags: ['clients'],
      responses: { '200': { description: 'The client', schema: 'Client', etag: true } },
    },
    handle: getClient,
  },
  {
    method: 'PATCH',
    path: '/clients/{id}',
    operation: {
      operationId: 'updateClient',
      summary: 'Change an admin-managed client’s metadata (null removes a member)',
      tags: ['clients'],
      requestBody: 'ClientUpdate',
      ifMatch: 'required',
      responses: { '200': { description: 'Updated', schema: 'Client', etag: true } },
    },
    handle: patchClient,
  },
  {
    method: 'DELETE',
    path: '/clients/{id}',
    operation: {
      operationId: 'deleteClient',
      summary: 'Delete an admin-managed client; its grants are revoked',
      tags: ['clients'],
      ifMatch: 'optional',
      responses: { '204': { description: 'Deleted', schema: null } },
    },
    handle: deleteClient,
  },
  {
    method: 'POST',
    path: '/clients/{id}/disable',
    operation: {
      operationId: 'disableClient',
      summary: 'Disable an admin-managed client: no token, no authorization; its grants are revoked',
      tags: ['clients'],
      ifMatch: 'optional',
      responses: { '200': { description: 'Disabled', schema: 'Client', etag: true } },
    },
    handle: (call) => setDisabled(call, true),
  },
  {
    method: 'POST',
    path: '/clients/{id}/enable',
    operation: {
      operationId: 'enableClient',
      summary: 'Enable a disabled admin-managed client (its revoked grants stay revoked)',
      tags: ['clients'],
      ifMatch: 'optional',
      responses: { '200': { description: 'Enabled', schema: 'Client', etag: true } },
    },
    handle: (call) => setDisabled(call, false),
  },
  {
    method: 'POST',
    path: '/clients/{id}/secrets',
    operation: {
      operationId: 'rotateClientSecret',
      summary: 'Rotate an admin-managed client’s secret: the new one is in this answer only; the old one works until previous_expires_at',
      tags: ['clients'],
      requestBody: 'SecretRotation',
      ifMatch: 'optional',
      responses: { '200': { description: 'Rotated', schema: 'ClientSecret', etag: true } },
    },
    handle: rotate,
  },
]
