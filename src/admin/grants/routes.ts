/**
 * /admin/v1/grants: a person's grants (refresh families), listed through the
 * index the account page reads (allowances), or a client's, through the
 * grants store's index by client, and revoked through the one
 * revocation path (src/as/revocation.ts): the family ends, the grant id goes
 * on the revocation list published to every instance, which refuses its
 * access tokens and ends its open streams. /admin/v1/tokens/revoke puts one
 * access token's jti on that list.
 */
import { revokeEntry, revokeGrant } from '../../as/revocation.js'
import { epochSeconds } from '../../clock.js'
import type { GrantRecord } from '../../store/types.js'
import { looksLikeToken, tokenByJti } from '../../audit/events.js'
import { adminActor, requestOrigin } from '../actor.js'
import { pageLimit, pageOf } from '../cursor.js'
import { readJsonObject } from '../json-body.js'
import { badRequest, notFound } from '../problem.js'
import type { AdminCall, AdminReply, AdminRoute } from '../router.js'

/** Longest person filter looked at (a `sub`). */
const MAX_SUB = 256

function grantView(g: GrantRecord) {
  return { id: g.grantId, person: g.sub, client_id: g.clientId, scope: g.scope, resource: g.resource, created_at: g.createdAt, expires_at: g.expiresAt }
}

/** A client's live grants, without naming a person: the grants store's index by client. */
async function grantsOfClient({ query, admin }: AdminCall, client: string): Promise<AdminReply> {
  const limit = pageLimit(query.get('limit'))
  const list = `grants?client=${client}`
  const cursor = query.get('cursor')
  const after = cursor === null ? null : admin.cursors.decode(list, cursor)
  // One more than a page says whether another follows; a revoked grant is gone from the store (and refused meanwhile).
  const found = (await admin.as.store.grants.listByClient(client, after, limit + 1)).filter((g) => !admin.as.revocations.isRevoked(null, g.grantId))
  const page = found.slice(0, limit)
  const last = page[page.length - 1]
  return {
    status: 200,
    body: { items: page.map(grantView), next_cursor: found.length > limit && last !== undefined ? admin.cursors.encode(list, last.grantId) : null },
  }
}

async function listGrants(call: AdminCall): Promise<AdminReply> {
  const { query, admin } = call
  const person = query.get('person')
  const client = query.get('client')
  if (client !== null && (client === '' || client.length > MAX_SUB)) throw badRequest('client must name a client_id')
  if (person === null && client !== null) return grantsOfClient(call, client)
  if (person === null || person === '' || person.length > MAX_SUB)
    throw badRequest('Name the person or the client whose grants to list: ?person=<sub> or ?client=<client_id>')
  const limit = pageLimit(query.get('limit'))
  // The cursor is bound to the list and its filter: another person's (or client's) cursor is refused.
  const list = `grants?person=${person}&client=${client ?? ''}`
  const cursor = query.get('cursor')
  const after = cursor === null ? null : admin.cursors.decode(list, cursor)
  const store = admin.as.store
  const allowances = (await store.allowances.list(person)).filter((a) => client === null || a.clientId === client)
  const ids = [...new Set(allowances.flatMap((a) => a.grantIds))].sort()
  const now = epochSeconds(admin.as.clock)
  const grants: GrantRecord[] = []
  for (const id of ids) {
    const g = await store.grants.get(id)
    // An index entry outlives its family by design; a revoked grant is gone from the store.
    if (g !== null && g.expiresAt > now && !admin.as.revocations.isRevoked(null, g.grantId)) grants.push(g)
  }
  const page = pageOf(grants, (g) => g.grantId, after, limit)
  return { status: 200, body: { items: page.items.map(grantView), next_cursor: page.last === null ? null : admin.cursors.encode(list, page.last) } }
}

async function revokeOneGrant({ req, params, admin, caller }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const grant = await as.store.grants.get(params.id as string)
  if (grant === null) throw notFound('No live grant with this id')
  const until = Math.max(epochSeconds(as.clock) + as.as.accessToken.ttlSec, grant.maxAccessExp)
  await revokeGrant(as, grant.grantId, until)
  as.audit.record({
    event: 'grant.revoked',
    actor: adminActor(caller),
    subject: { kind: 'grant', id: grant.grantId },
    clientId: grant.clientId,
    ...requestOrigin(req),
    outcome: 'success',
  })
  return { status: 204 }
}

async function revokeToken({ req, admin, caller }: AdminCall): Promise<AdminReply> {
  const body = await readJsonObject(req)
  const jti = body.jti
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256 || Object.keys(body).some((k) => k !== 'jti')) {
    throw badRequest('The body is {"jti": "<the access token’s jti>"}')
  }
  if (looksLikeToken(jti)) throw badRequest('Send the token’s jti, not the token')
  const as = admin.as
  // No token outlives access_token.ttl from now: the entry need not last longer.
  await revokeEntry(as, { kind: 'jti', id: jti, exp: epochSeconds(as.clock) + as.as.accessToken.ttlSec })
  as.audit.record({
    event: 'token.revoked',
    actor: adminActor(caller),
    subject: tokenByJti({ jti }),
    ...requestOrigin(req),
    outcome: 'success',
  })
  return { status: 204 }
}

export const GRANT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/grants',
    operation: {
      operationId: 'listGrants',
      summary: 'List the live grants of a person or of a client',
      tags: ['grants'],
      query: {
        person: { schema: { type: 'string' }, description: 'The person’s `sub` (this, or client, or both)' },
        client: { schema: { type: 'string' }, description: 'Only this client’s grants (alone: every person’s grants of this client)' },
        limit: { schema: { type: 'integer', minimum: 1, maximum: 200 }, description: 'Page size (default 50)' },
        cursor: { schema: { type: 'string' }, description: 'next_cursor of the previous page' },
      },
      responses: { '200': { description: 'A page of grants', schema: 'GrantList' } },
    },
    handle: listGrants,
  },
  {
    method: 'DELETE',
    path: '/grants/{id}',
    operation: {
      operationId: 'revokeGrant',
      summary: 'Revoke a grant: its tokens are refused and its streams ended on every instance',
      tags: ['grants'],
      responses: { '204': { description: 'Revoked', schema: null } },
    },
    handle: revokeOneGrant,
  },
  {
    method: 'POST',
    path: '/tokens/revoke',
    operation: {
      operationId: 'revokeToken',
      summary: 'Revoke one access token by its jti',
      tags: ['tokens'],
      requestBody: 'TokenRevocation',
      responses: { '204': { description: 'Revoked', schema: null } },
    },
    handle: revokeToken,
  },
]
