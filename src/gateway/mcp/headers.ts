/**
 * MCP's HTTP headers as an intermediary must read them.
 *
 * - `MCP-Protocol-Version` names the revision (a date). From 2026-07-28 on,
 *   every request POST carries it with `Mcp-Method`, and `tools/call`,
 *   `resources/read`, `prompts/get` (and the `tasks/*` calls) carry
 *   `Mcp-Name`; they must agree with the body, whose `params._meta` names the
 *   revision again (`io.modelcontextprotocol/protocolVersion`).
 * - `Mcp-Name` carries a value that is not plain printable ASCII as
 *   `=?base64?…?=` (UTF-8, canonical base64), decoded before comparing.
 *
 * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#request-metadata
 */
import type { IncomingMessage } from 'node:http'
import { param, type Params } from './messages.js'

/** The first revision whose requests carry the standard headers (and no batches, no sessions). */
export const FIRST_MODERN_REVISION = '2026-07-28'
/** The first revision without JSON-RPC batches. */
export const FIRST_BATCHLESS_REVISION = '2025-06-18'
/** The revision a server may assume when a request names none (2025-06-18 transports). */
export const DEFAULT_REVISION = '2025-03-26'
/** The `_meta` key of the 2026-07-28 per-request envelope naming the revision. */
export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion'

/** Revisions are ISO dates: they order as strings. */
const REVISION = /^\d{4}-\d{2}-\d{2}$/

export function isRevision(value: string): boolean {
  return REVISION.test(value)
}

/**
 * What an MCP-Protocol-Version may hold at all: one token of visible ASCII,
 * no comma (a repeated header joins with ", "), at most 64 characters. A
 * token that is not a date is a version this gateway does not know.
 */
const VERSION_TOKEN = /^[\x21-\x2b\x2d-\x7e]{1,64}$/

export function isVersionToken(value: string): boolean {
  return VERSION_TOKEN.test(value)
}

/**
 * Whether a revision is of the 2026-07-28 era. A version that is not a date
 * cannot be placed: it gets the strictest rules (the standard headers
 * required, no batches).
 */
export function isModern(revision: string): boolean {
  return !isRevision(revision) || revision >= FIRST_MODERN_REVISION
}

/**
 * A request header's value; undefined when absent. Node joins a repeated
 * custom header with ", ", which then names no revision and matches no body
 * value: a repeat is refused as a mismatch, never read as its first copy.
 */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

/** The body field `Mcp-Name` mirrors, per method (the SDK's MCP_NAME_HEADER_SOURCE). */
const NAME_SOURCE: ReadonlyMap<string, string> = new Map([
  ['tools/call', 'name'],
  ['prompts/get', 'name'],
  ['resources/read', 'uri'],
  ['tasks/get', 'taskId'],
  ['tasks/update', 'taskId'],
  ['tasks/cancel', 'taskId'],
])

/** Which params field `Mcp-Name` mirrors for `method`; undefined when it mirrors none. */
export function nameSource(method: string): string | undefined {
  return NAME_SOURCE.get(method)
}

/** The body value `Mcp-Name` must carry for a message: the source field's string, undefined when absent or not a string. */
export function nameValue(method: string, params: Params): { field: string; value: string | undefined } | undefined {
  const field = NAME_SOURCE.get(method)
  if (field === undefined) return undefined
  const raw = param(params, field)
  return { field, value: typeof raw === 'string' ? raw : undefined }
}

const BASE64_PREFIX = '=?base64?'
const BASE64_SUFFIX = '?='
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
// ignoreBOM keeps a leading U+FEFF: a decoder that dropped it would match `\ufeffdelete_order` to `delete_order`.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * An `Mcp-Name` value as the client meant it: optional whitespace trimmed
 * (RFC 9110 5.5), the base64 sentinel decoded; null for a sentinel whose
 * payload is not canonical base64 of UTF-8 (the spec: reject).
 * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#value-encoding
 */
export function decodeName(value: string): string | null {
  const v = value.replace(/^[ \t]+|[ \t]+$/g, '')
  if (!(v.startsWith(BASE64_PREFIX) && v.endsWith(BASE64_SUFFIX) && v.length >= BASE64_PREFIX.length + BASE64_SUFFIX.length)) return v
  const b64 = v.slice(BASE64_PREFIX.length, v.length - BASE64_SUFFIX.length)
  if (!CANONICAL_BASE64.test(b64)) return null
  try {
    return UTF8.decode(Buffer.from(b64, 'base64'))
  } catch {
    return null
  }
}

/** The revision a message's 2026-07-28 envelope claims: absent, a string, or present but not a string. */
export function envelopeRevision(params: Params): { claimed: false } | { claimed: true; revision: string | undefined } {
  const meta = param(params, '_meta')
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta) || !Object.hasOwn(meta, PROTOCOL_VERSION_META_KEY)) return { claimed: false }
  const value = (meta as Record<string, unknown>)[PROTOCOL_VERSION_META_KEY]
  return { claimed: true, revision: typeof value === 'string' ? value : undefined }
}

/**
 * The serialized origin of an `Origin` header, as allowed_origins lists
 * them; null for `null`, a repeated header, or anything that is not an
 * origin (such a request is refused, never taken as no Origin).
 */
export function originOf(req: IncomingMessage): string | null | undefined {
  const raw = req.headers.origin
  if (raw === undefined) return undefined
  if (Array.isArray(raw)) return null
  try {
    const origin = new URL(raw).origin
    return origin === 'null' ? null : origin
  } catch {
    return null
  }
}
