import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Shared } from '../context.js'
import { sendJson } from '../http/reply.js'
import type { Logger } from '../log.js'
import { isAdminPath } from '../admin/serve.js'

/** The admin server on `admin_listen`: /healthz, /readyz and /metrics, GET and HEAD only; and the admin API (/admin/v1) and pages (/admin/) when on. */

/** What /readyz answers: ready, or the reasons not to send traffic here. */
export interface Readiness {
  ready: boolean
  body: Record<string, unknown>
}

/** Where the admin server's answers come from: one process's own state, or the primary asking its workers. */
export interface AdminSources {
  readiness(): Promise<Readiness>
  /** The Prometheus text of /metrics. */
  metrics(): string | Promise<string>
  /** The admin API and pages (`admin_api`, src/admin/serve.ts) for paths under /admin; absent: not served here. */
  adminApi?(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>
}

/**
 * The admin server, for a single process (src/app.ts) and for the primary of
 * worker processes (src/workers/admin.ts) alike. A source that throws is a
 * logged 500, never an unhandled rejection.
 */
export function createAdminServer(sources: AdminSources, log: Logger): Server {
  return createServer((req, res) => {
    answerAdmin(req, res, sources).catch((err: unknown) => {
      log.error({ err }, 'admin request failed')
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' })
      else res.destroy()
    })
  })
}

async function answerAdmin(req: IncomingMessage, res: ServerResponse, sources: AdminSources): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/'
  if (sources.adminApi !== undefined && isAdminPath(path)) {
    await sources.adminApi(req, res, path)
    return
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: 'method_not_allowed' }, { allow: 'GET, HEAD' })
    return
  }
  if (path === '/healthz') {
    sendJson(res, 200, { status: 'ok' })
  } else if (path === '/readyz') {
    const { ready, body } = await sources.readiness()
    sendJson(res, ready ? 200 : 503, body, { 'cache-control': 'no-store' })
  } else if (path === '/metrics') {
    const text = await sources.metrics()
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  } else {
    sendJson(res, 404, { error: 'not_found' })
  }
}

/** Readiness of one process: shutting down, the revocation list out of sync, or the store unreachable (1 s) say not ready. */
export async function processReadiness(shared: Shared, closing: boolean, lastReloadError: string | null): Promise<Readiness> {
  const reasons: string[] = []
  if (closing) reasons.push('shutting down')
  // What protected routes go by: not ready while they refuse (or, open, cannot check) revocation.
  if (!shared.revocations.healthy) reasons.push('revocation list not in sync with the store')
  try {
    await withTimeout(shared.store.ping(), 1000)
  } catch {
    reasons.push('store unreachable')
  }
  const body: Record<string, unknown> = { status: reasons.length ? 'unavailable' : 'ready', store: shared.store.kind }
  if (reasons.length) body.reasons = reasons
  if (lastReloadError) body.last_reload_error = lastReloadError
  return { ready: reasons.length === 0, body }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms)
    t.unref()
    p.then(
      (v) => {
        clearTimeout(t)
        resolve(v)
      },
      (e: unknown) => {
        clearTimeout(t)
        reject(e instanceof Error ? e : new Error(String(e)))
      },
    )
  })
}
