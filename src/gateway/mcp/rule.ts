/**
 * Per-tool scopes for a route that fronts an MCP server (Streamable HTTP,
 * MCP 2025-06-18 and later): the gateway reads the JSON-RPC body of a POST
 * (bounded by `mcp.max_body`, buffered, then forwarded byte for byte) and,
 * for `tools/call` of a tool listed under `mcp.tools`, requires that tool's
 * scopes as well as the route's. A batch needs the union of its calls.
 *
 * The 403 names every scope the request needs in one challenge, so a client
 * steps up once (RFC 6750 3.1 `scope`; MCP authorization, scope challenge).
 *
 * `Mcp-Method` / `Mcp-Name` headers (MCP 2026-07-28), when sent, must agree
 * with the body: an intermediary that routes or logs by header must see the
 * request the policy judged. A body that is not JSON-RPC is the upstream's
 * business and is judged by the route's rules alone; a JSON body that does
 * not parse is refused, since a more lenient parser upstream could read a
 * call into it that we did not judge.
 */
import type { IncomingMessage } from 'node:http'
import type { RouteConfig } from '../config/types.js'
import { InsufficientScope, InvalidRequest } from '../errors.js'
import { readBody } from '../http/body.js'
import type { ScopeRule } from './scope.js'

/** A scope requirement for one request, and its refusal when the token falls short. */
export interface McpRequirement {
  /** Route and tool scopes together, deduplicated: the challenge's `scope`. */
  readonly required: readonly string[]
  readonly refusal: InsufficientScope
}

/** What the body said: the requirement of its tool calls, or null when the route's own rule is all. */
export interface McpJudgement {
  readonly body: Buffer
  readonly requirement: McpRequirement | null
}

const TOOLS_CALL = 'tools/call'

function requirement(required: readonly string[]): McpRequirement {
  const unique = Object.freeze([...new Set(required)])
  return { required: unique, refusal: new InsufficientScope(unique) }
}

/** One JSON-RPC message's method and name, as MCP's standard headers mirror them. */
interface Message {
  readonly method: string
  /** `params.name`, else `params.uri` (what `Mcp-Name` carries); null when neither is a string. */
  readonly name: string | null
  readonly toolName: unknown
}

/** A JSON-RPC 2.0 request or notification (JSON-RPC 2.0 4), or null for anything else. */
function asMessage(value: unknown): Message | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null
  const v = value as Record<string, unknown>
  if (v.jsonrpc !== '2.0' || typeof v.method !== 'string') return null
  const params = typeof v.params === 'object' && v.params !== null && !Array.isArray(v.params) ? (v.params as Record<string, unknown>) : {}
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : null
  return { method: v.method, name, toolName: params.name }
}

/** True when the Content-Type names JSON (`application/json`, `application/*+json`). */
function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const semi = contentType.indexOf(';')
  const media = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase()
  return media === 'application/json' || (media.startsWith('application/') && media.endsWith('+json'))
}

/**
 * A request header's value. Node joins a repeated custom header with ", ",
 * which then disagrees with the body: a repeat is refused as a mismatch.
 */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

/** The per-route rule: built once per Runtime. */
export class McpRule {
  readonly #maxBody: number
  readonly #routeRequired: readonly string[]
  /** Per listed tool: the route's POST scopes and the tool's. */
  readonly #byTool: ReadonlyMap<string, McpRequirement>

  constructor(route: RouteConfig, scopes: ScopeRule) {
    const mcp = route.mcp
    if (mcp === null) throw new Error(`route ${route.name} has no mcp section`)
    this.#maxBody = mcp.maxBodyBytes
    this.#routeRequired = scopes.required('POST')
    this.#byTool = new Map(Object.entries(mcp.tools).map(([tool, extra]) => [tool, requirement([...this.#routeRequired, ...extra])]))
  }

  /** Whether a request of this method carries a JSON-RPC message to judge (Streamable HTTP sends them by POST). */
  applies(req: IncomingMessage): boolean {
    return req.method === 'POST'
  }

  /**
   * Read the body and judge it. Rejects with PayloadTooLarge (413) over
   * `max_body`, InvalidRequest (400) for JSON that does not parse, a
   * `tools/call` without a tool name, or `Mcp-Method` / `Mcp-Name` headers
   * that disagree with the body.
   */
  async judge(req: IncomingMessage): Promise<McpJudgement> {
    const headerMethod = header(req, 'mcp-method')
    const headerName = header(req, 'mcp-name')
    const body = await readBody(req, this.#maxBody)
    const json = isJson(req.headers['content-type'])
    let parsed: unknown
    try {
      parsed = json ? JSON.parse(body.toString('utf8')) : undefined
    } catch {
      throw new InvalidRequest('The request body is not valid JSON', { cause: 'mcp body does not parse' })
    }
    const batch = Array.isArray(parsed)
    const messages = (batch ? (parsed as unknown[]) : [parsed]).map(asMessage)
    const jsonRpc = json && messages.length > 0 && messages.every((m) => m !== null)
    if (headerMethod !== undefined || headerName !== undefined) {
      const one = jsonRpc && !batch ? messages[0] : null
      if (one === null || one === undefined)
        throw new InvalidRequest('Mcp-Method and Mcp-Name describe a single JSON-RPC request', { cause: 'mcp headers without one message' })
      if (headerMethod !== undefined && headerMethod !== one.method)
        throw new InvalidRequest('The Mcp-Method header does not match the request body', { cause: 'mcp-method mismatch' })
      if (headerName !== undefined && headerName !== one.name)
        throw new InvalidRequest('The Mcp-Name header does not match the request body', { cause: 'mcp-name mismatch' })
    }
    if (!jsonRpc) return { body, requirement: null }
    return { body, requirement: this.#requirementOf(messages as Message[]) }
  }

  #requirementOf(messages: readonly Message[]): McpRequirement | null {
    const found: McpRequirement[] = []
    for (const m of messages) {
      if (m.method !== TOOLS_CALL) continue
      if (typeof m.toolName !== 'string') throw new InvalidRequest('A tools/call request names no tool', { cause: 'tools/call without params.name' })
      const r = this.#byTool.get(m.toolName)
      if (r !== undefined && !found.includes(r)) found.push(r)
    }
    if (found.length === 0) return null
    if (found.length === 1) return found[0] as McpRequirement
    // A batch calling several listed tools: the union, built for this request.
    return requirement(found.flatMap((r) => r.required))
  }
}

/** The 403 for a token that lacks a scope of `requirement`, or null when it has them all. */
export function checkRequirement(requirement: McpRequirement, granted: readonly string[]): InsufficientScope | null {
  for (const scope of requirement.required) if (!granted.includes(scope)) return requirement.refusal
  return null
}
