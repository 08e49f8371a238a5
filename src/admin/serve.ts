/**
 * One door for everything under `/admin` on either listener: the API under
 * `/admin/v1` (api.ts), the pages everywhere else below `/admin`
 * (pages/handler.ts). On admin_listen the mount point is empty; on the main
 * listener it is `admin_api.public_path` (`{public_path}/v1/…` the API,
 * `{public_path}/…` the pages).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AsContext } from '../as/context.js'
import { handleAdminApi, isAdminApiPath } from './api.js'
import { ADMIN_PAGES_BASE, handleAdminPages } from './pages/handler.js'

/** Whether `path` (mount point removed) is the admin API's or the pages'. */
export function isAdminPath(path: string): boolean {
  return path === ADMIN_PAGES_BASE || path.startsWith(`${ADMIN_PAGES_BASE}/`)
}

export interface AdminPlace {
  /** The request path with the mount point replaced by `/admin`. */
  path: string
  /** Scheme, host and mount point as the client addressed them: `http://host:9090` or `https://example.com/-/admin`'s origin. */
  origin: string
  /** The mount point as addressed (`` on admin_listen, `public_path` on the main listener). */
  mount: string
  secure: boolean
}

export async function handleAdmin(req: IncomingMessage, res: ServerResponse, as: AsContext | null, place: AdminPlace): Promise<void> {
  if (isAdminApiPath(place.path)) {
    const external = place.mount === '' ? place.path : `${place.mount}${place.path.slice(ADMIN_PAGES_BASE.length)}`
    return handleAdminApi(req, res, as, { path: place.path, url: `${place.origin}${external}` })
  }
  const base = `${place.origin}${place.mount === '' ? ADMIN_PAGES_BASE : place.mount}`
  const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '')
  return handleAdminPages(req, res, as, { base, secure: place.secure, path: place.path.slice(ADMIN_PAGES_BASE.length), query })
}
