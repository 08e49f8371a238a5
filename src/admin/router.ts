/**
 * The admin API's route table: method + path pattern (`/clients/{id}`) →
 * handler, with the OpenAPI operation each route documents (openapi.ts
 * builds /admin/v1/openapi.json from this same table, so a route cannot go
 * undocumented). A path that matches no pattern is 404; a pattern that
 * matches under another method is 405 with `Allow`.
 */
import type { IncomingMessage } from 'node:http'
import type { AdminCaller } from './auth.js'
import type { AdminContext } from './context.js'
import { AdminProblem } from './problem.js'

export type AdminMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE'

/** What a handler gets: the request, its path parameters and query, who calls, and the API's dependencies. */
export interface AdminCall {
  readonly req: IncomingMessage
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  readonly caller: AdminCaller
  readonly admin: AdminContext
}

/** What a handler answers: a status, a JSON body (absent for 204), extra headers (ETag). */
export interface AdminReply {
  status: number
  body?: unknown
  headers?: Record<string, string>
}

/** An OpenAPI 3.1 operation's documented parts (the rest is filled in by openapi.ts). */
export interface AdminOperation {
  operationId: string
  summary: string
  tags: string[]
  /** Query parameters: name → schema and description. */
  query?: Record<string, { schema: Record<string, unknown>; description: string }>
  /** `components/schemas` name of the JSON request body, when there is one. */
  requestBody?: string
  /** Status → `components/schemas` name of the body (null: no body), with a description. */
  responses: Record<string, { description: string; schema: string | null; etag?: boolean }>
  /** Headers the request must or may send (If-Match). */
  ifMatch?: 'required' | 'optional'
}

export interface AdminRoute {
  method: AdminMethod
  /** Under /admin/v1, `{name}` for a path parameter (one segment). */
  path: string
  operation: AdminOperation
  /** No token needed (the OpenAPI document). */
  public?: boolean
  handle(call: AdminCall): Promise<AdminReply>
}

interface Compiled {
  route: AdminRoute
  pattern: RegExp
  names: string[]
}

/** Longest path parameter we look at: every id of ours is far shorter. */
const MAX_PARAM_LENGTH = 256

export class AdminRouter {
  readonly routes: readonly AdminRoute[]
  readonly #compiled: readonly Compiled[]

  constructor(routes: readonly AdminRoute[]) {
    const seen = new Set<string>()
    for (const r of routes) {
      const key = `${r.method} ${r.path}`
      if (seen.has(key)) throw new Error(`admin router: ${key} twice`)
      seen.add(key)
    }
    this.routes = routes
    this.#compiled = routes.map((route) => {
      const names: string[] = []
      const source = route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([a-z_]+)\}/g, (_m, name: string) => {
        names.push(name)
        return '([^/]+)'
      })
      return { route, pattern: new RegExp(`^${source}$`), names }
    })
  }

  /** The route for `method` and `path` (under /admin/v1) with its decoded parameters; 404/405 otherwise. */
  match(method: string, path: string): { route: AdminRoute; params: Record<string, string> } {
    const allowed: string[] = []
    const wanted = method === 'HEAD' ? 'GET' : method
    for (const c of this.#compiled) {
      const m = c.pattern.exec(path)
      if (m === null) continue
      if (c.route.method !== wanted) {
        allowed.push(c.route.method)
        continue
      }
      const params: Record<string, string> = {}
      for (const [i, name] of c.names.entries()) params[name] = decodeParam(m[i + 1] as string)
      return { route: c.route, params }
    }
    if (allowed.length > 0) {
      const allow = [...new Set(allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed)].join(', ')
      throw new AdminProblem(405, 'method_not_allowed', `Use ${allow}`, { allow })
    }
    throw new AdminProblem(404, 'not_found', 'No such admin endpoint')
  }
}

function decodeParam(raw: string): string {
  let value: string
  try {
    value = decodeURIComponent(raw)
  } catch {
    throw new AdminProblem(400, 'invalid_request', 'A path parameter is not valid percent-encoding')
  }
  if (value.length === 0 || value.length > MAX_PARAM_LENGTH) throw new AdminProblem(404, 'not_found', 'No such resource')
  return value
}
