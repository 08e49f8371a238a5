/**
 * One admin API request, on admin_listen or under `admin_api.public_path`:
 * the route (404/405), the caller (401/403, unless the route is public),
 * the handler, and the JSON or problem answer. Answers are never cached.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AsContext } from '../as/context.js'
import { ADMIN_API_BASE } from '../config/sections/admin-api.js'
import type { AdminApiConfig } from '../config/validated-config.js'
import { ClientAborted, StoreUnavailableError } from '../errors.js'
import { NO_STORE } from '../http/reply.js'
import { requestOrigin } from './actor.js'
import { type AdminCaller, authenticateAdmin } from './auth.js'
import { adminContextOf } from './context.js'
import { AdminProblem, sendProblem } from './problem.js'
import { ADMIN_ROUTER } from './routes.js'

/** Longest request target we parse: far beyond any real call (a cursor, a filter). */
const MAX_TARGET = 4096

export interface AdminRequestPlace {
  /** The request path with the mount point (admin_listen's `` or `public_path`) already removed, starting `/admin/v1`. */
  path: string
  /** The request's URL as the client addressed it, without query: a DPoP proof's `htu`. */
  url: string
}

/** Whether `path` (mount point removed) is the admin API's. */
export function isAdminApiPath(path: string): boolean {
  return path === ADMIN_API_BASE || path.startsWith(`${ADMIN_API_BASE}/`)
}

/**
 * The admin API path of `rawPath` on the main listener: `{public_path}/v1/…`
 * is `/admin/v1/…`; null when `public_path` is not set or the path is not under it.
 */
export function publicAdminPath(config: AdminApiConfig | null | undefined, rawPath: string): string | null {
  const mount = config?.publicPath
  if (mount == null) return null
  if (rawPath !== mount && !rawPath.startsWith(`${mount}/`)) return null
  return `/admin${rawPath.slice(mount.length)}`
}

/** Answer one admin API request. `as` null: no authorization server (or admin_api off): 404. */
export async function handleAdminApi(req: IncomingMessage, res: ServerResponse, as: AsContext | null, place: AdminRequestPlace): Promise<void> {
  try {
    await answer(req, res, as, place)
  } catch (err) {
    if (err instanceof AdminProblem) sendProblem(res, err)
    else if (err instanceof StoreUnavailableError)
      sendProblem(res, new AdminProblem(503, 'store_unavailable', 'The store is unavailable: try again'), { 'retry-after': '1' })
    else if (err instanceof ClientAborted) res.destroy()
    else {
      as?.log.error({ err }, 'admin API request failed')
      if (!res.headersSent) sendProblem(res, new AdminProblem(500, 'server_error', 'The request failed; see the server log'))
      else res.destroy()
    }
  }
}

async function answer(req: IncomingMessage, res: ServerResponse, as: AsContext | null, place: AdminRequestPlace): Promise<void> {
  const admin = as === null ? null : adminContextOf(as)
  if (admin === null) throw new AdminProblem(404, 'not_found', 'The admin API is off (admin_api.enabled)')
  if ((req.url ?? '').length > MAX_TARGET) throw new AdminProblem(414, 'invalid_request', 'The request target is too long')
  const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '')
  const { route, params } = ADMIN_ROUTER.match(req.method ?? 'GET', place.path.slice(ADMIN_API_BASE.length) || '/')
  const caller = route.public ? ANONYMOUS : await authenticated(req, admin.as, place.url)
  const reply = await route.handle({ req, params, query, caller, admin })
  const headers = { ...NO_STORE, ...reply.headers }
  if (reply.body === undefined) {
    res.writeHead(reply.status, headers)
    res.end()
    return
  }
  const payload = JSON.stringify(reply.body)
  res.writeHead(reply.status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) })
  res.end(req.method === 'HEAD' ? undefined : payload)
}

/** The caller, or the refusal, which the audit trail records as `admin.denied` with its reason code. */
async function authenticated(req: IncomingMessage, as: AsContext, url: string): Promise<AdminCaller> {
  try {
    return await authenticateAdmin(req, as, url)
  } catch (err) {
    if (err instanceof AdminProblem) {
      as.audit.record({
        event: 'admin.denied',
        actor: { kind: 'anonymous' },
        subject: { kind: 'none' },
        ...requestOrigin(req),
        outcome: 'failure',
        reason: err.reason ?? err.kind,
      })
    }
    throw err
  }
}

/** The caller of a public route (the OpenAPI document): no one in particular. */
const ANONYMOUS = { clientId: '', sub: '', person: false, jti: '', grantId: null, write: false } as const
