/**
 * The support-desk actions of the admin pages. Each one the admin API has
 * is done by calling that API route's own handler (the route table,
 * routes.ts) with the pages' admin as the caller: the same checks, store
 * calls and audit events as `curl` against /admin/v1 — there is no second
 * implementation.
 */
import type { IncomingMessage } from 'node:http'
import type { AsContext } from '../../as/context.js'
import type { AdminCaller } from '../auth.js'
import { findAnyClient, readOnlyClient, rotateSecret } from '../clients/actions.js'
import type { AdminContext } from '../context.js'
import { type Found, findPerson } from '../people/actions.js'
import { AdminProblem } from '../problem.js'
import type { AdminMethod, AdminReply } from '../router.js'
import { ADMIN_ROUTER } from '../routes.js'
import type { PagesSession } from './session.js'
import type { PersonRow } from './views.js'

/** The admin API's caller for the signed-in admin of the pages (a person with `bearward:admin`). */
export function callerOf(session: PagesSession): AdminCaller {
  const c = session.claims
  return { clientId: c.clientId, sub: c.sub, person: true, jti: c.jti, grantId: c.grantId, write: true }
}

/** Run the admin API route `method path` (under /admin/v1) for the pages' admin; its AdminProblem, if any, is thrown. */
export async function callApi(
  admin: AdminContext,
  req: IncomingMessage,
  session: PagesSession,
  method: AdminMethod,
  path: string,
  query: URLSearchParams = new URLSearchParams(),
): Promise<AdminReply> {
  const { route, params } = ADMIN_ROUTER.match(method, path)
  return route.handle({ req, params, query, caller: callerOf(session), admin })
}

/** Whether the admin API has the route `method path` (a rotation not yet served, say). */
export function apiHas(method: AdminMethod, path: string): boolean {
  try {
    ADMIN_ROUTER.match(method, path)
    return true
  } catch (err) {
    if (err instanceof AdminProblem) return false
    throw err
  }
}

const personPath = (username: string): string => `/people/${encodeURIComponent(username)}`

/** The person a username names (as the API finds them), or null. */
export async function personByUsername(as: AsContext, username: string): Promise<PersonRow | null> {
  let found: Found
  try {
    found = await findPerson(as, username)
  } catch (err) {
    if (err instanceof AdminProblem && err.status === 404) return null
    throw err
  }
  return found.kind === 'config'
    ? { username: found.user.username, sub: found.user.sub, source: 'config', disabled: found.disabled }
    : { username: found.record.username, sub: found.record.sub, source: 'admin', disabled: found.record.disabled }
}

/** The actions of a person's page, each the admin API's own route. */
export const PERSON_ACTIONS = {
  reset_factors: { method: 'DELETE', path: (username: string) => `${personPath(username)}/factors` },
  sign_out_everywhere: { method: 'DELETE', path: (username: string) => `${personPath(username)}/sessions` },
  disable: { method: 'POST', path: (username: string) => `${personPath(username)}/disable` },
} as const satisfies Record<string, { method: AdminMethod; path: (username: string) => string }>

export type PersonAction = keyof typeof PERSON_ACTIONS

export function isPersonAction(action: string): action is PersonAction {
  return Object.hasOwn(PERSON_ACTIONS, action)
}

/** One of a person's grants as the admin API lists it (GET /grants?person=). */
export interface GrantItem {
  id: string
  client_id: string
  scope: string
  created_at: number
}

/** The person's live grants, through the admin API's own list (first 200). */
export async function grantsOf(admin: AdminContext, req: IncomingMessage, session: PagesSession, sub: string): Promise<GrantItem[]> {
  const reply = await callApi(admin, req, session, 'GET', '/grants', new URLSearchParams({ person: sub, limit: '200' }))
  return (reply.body as { items: GrantItem[] }).items
}

/** Revoke one grant through the admin API (DELETE /grants/{id}): its tokens refused, its streams ended, `grant.revoked`. */
export async function revokeGrant(admin: AdminContext, req: IncomingMessage, session: PagesSession, grantId: string): Promise<void> {
  await callApi(admin, req, session, 'DELETE', `/grants/${encodeURIComponent(grantId)}`)
}

/** One of a client's live grants as the admin API lists it (GET /grants?client=). */
export interface ClientGrantItem extends GrantItem {
  person: string
}

/** The client's live grants, through the admin API's own list (first 200). */
export async function grantsOfClient(admin: AdminContext, req: IncomingMessage, session: PagesSession, clientId: string): Promise<ClientGrantItem[]> {
  const reply = await callApi(admin, req, session, 'GET', '/grants', new URLSearchParams({ client: clientId, limit: '200' }))
  return (reply.body as { items: ClientGrantItem[] }).items
}

/**
 * Rotate an admin-managed client's secret with the API's own action
 * (clients/actions.ts, as `POST /clients/{id}/secrets` does; the route's JSON
 * body is not the pages' form): the new secret, shown once, the default overlap.
 */
export async function rotateClientSecret(
  admin: AdminContext,
  req: IncomingMessage,
  session: PagesSession,
  clientId: string,
): Promise<{ secret: string; previousExpiresAt: number }> {
  const found = await findAnyClient(admin.as, clientId)
  if (found.kind !== 'admin') throw readOnlyClient(found.client)
  const { record, secret } = await rotateSecret(admin.as, req, callerOf(session), found.record, null, null)
  return { secret, previousExpiresAt: record.previousExpiresAt as number }
}

/** One item of the admin API's client list. */
export interface ClientItem {
  id: string
  name: string
  type: string
  source: string
  disabled: boolean
}

/** Clients whose id or name contains `needle`, through the admin API's own list (every source), up to `max` + 1 and `maxScanned` read. */
export async function searchClients(
  admin: AdminContext,
  req: IncomingMessage,
  session: PagesSession,
  needle: string,
  max: number,
  maxScanned: number,
): Promise<ClientItem[]> {
  const found: ClientItem[] = []
  let cursor: string | null = null
  for (let scanned = 0; scanned < maxScanned && found.length <= max; ) {
    const query = new URLSearchParams({ limit: '200', ...(cursor === null ? {} : { cursor }) })
    const page = (await callApi(admin, req, session, 'GET', '/clients', query)).body as { items: ClientItem[]; next_cursor: string | null }
    scanned += page.items.length
    for (const c of page.items) if (c.id.toLowerCase().includes(needle) || c.name.toLowerCase().includes(needle)) found.push(c)
    cursor = page.next_cursor
    if (cursor === null) break
  }
  return found
}
