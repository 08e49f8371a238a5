/**
 * What an MCP POST body holds, message by message (JSON-RPC 2.0 4 and 5, as
 * MCP restricts it): a request (`method` and an `id` that is a string or an
 * integer), a notification (`method`, no `id`), or a response (`id` and
 * exactly one of `result` / `error`). A body the gateway cannot classify
 * completely is refused: a member it does not know, a message that is two
 * kinds at once, params that are not an object, an empty batch. A body it
 * only half understood would otherwise be judged by the route rule alone,
 * and what it did not understand could be a call (issue: a response in a
 * batch carried a call past its scopes).
 *
 * @see https://www.jsonrpc.org/specification#request_object
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic#requests
 */

/** A classified message; `params` is an own-property view (never a prototype's). */
export type Message =
  | { readonly kind: 'request'; readonly id: string | number; readonly method: string; readonly params: Params }
  | { readonly kind: 'notification'; readonly method: string; readonly params: Params }
  | { readonly kind: 'response'; readonly id: string | number | null }

/** The params object of a request or notification ({} when absent). */
export type Params = Readonly<Record<string, unknown>>

/** The messages of a body: one, or a batch (JSON-RPC 2.0 6). */
export interface Body {
  readonly batch: boolean
  readonly messages: readonly Message[]
}

/** Why a body cannot be classified (logged as the refusal's cause). */
export class Unclassifiable extends Error {}

const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params'])
const RESPONSE_MEMBERS = new Set(['jsonrpc', 'id', 'result', 'error'])

/**
 * Method names as MCP writes them: ASCII letters, digits, `/`, `_`, `-`, `.`.
 * A name with spaces, control or non-ASCII characters is nothing MCP defines
 * and could be folded into one by a lenient server.
 */
const METHOD = /^[A-Za-z0-9_./-]+$/

/** Methods whose name the gateway judges: a variant in another case could be read as them by a case-folding server. */
const JUDGED_METHODS = ['tools/call', 'resources/read', 'resources/subscribe', 'resources/unsubscribe', 'prompts/get', 'completion/complete']
const JUDGED_FOLDED = new Map(JUDGED_METHODS.map((m) => [m.toLowerCase(), m]))

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A JSON-RPC id as MCP allows it in a request: a string or an integer (never null, never a fraction). */
function isRequestId(value: unknown): value is string | number {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value))
}

function own(o: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined
}

/** Classify one message or throw Unclassifiable. */
export function classify(value: unknown): Message {
  if (!isObject(value)) throw new Unclassifiable('a message that is not an object')
  if (own(value, 'jsonrpc') !== '2.0') throw new Unclassifiable('jsonrpc is not "2.0"')
  const keys = Object.keys(value)
  if (Object.hasOwn(value, 'method')) {
    for (const k of keys) if (!REQUEST_MEMBERS.has(k)) throw new Unclassifiable(`unknown request member ${JSON.stringify(k)}`)
    const method = own(value, 'method')
    if (typeof method !== 'string' || !METHOD.test(method)) throw new Unclassifiable('method is not a method name')
    const judged = JUDGED_FOLDED.get(method.toLowerCase())
    if (judged !== undefined && judged !== method) throw new Unclassifiable('method differs from a judged one only in case')
    const rawParams = own(value, 'params')
    if (rawParams !== undefined && !isObject(rawParams)) throw new Unclassifiable('params is not an object')
    const params: Params = rawParams ?? {}
    if (!Object.hasOwn(value, 'id')) return { kind: 'notification', method, params }
    const id = own(value, 'id')
    if (!isRequestId(id)) throw new Unclassifiable('a request id that is not a string or an integer')
    return { kind: 'request', id, method, params }
  }
  for (const k of keys) if (!RESPONSE_MEMBERS.has(k)) throw new Unclassifiable(`unknown response member ${JSON.stringify(k)}`)
  const hasResult = Object.hasOwn(value, 'result')
  const hasError = Object.hasOwn(value, 'error')
  if (hasResult === hasError) throw new Unclassifiable('neither a request nor a response')
  if (!Object.hasOwn(value, 'id')) throw new Unclassifiable('a response without id')
  const id = own(value, 'id')
  if (id !== null && !isRequestId(id)) throw new Unclassifiable('a response id that is not a string, an integer or null')
  if (hasError) {
    const error = own(value, 'error')
    if (!isObject(error) || typeof own(error, 'code') !== 'number' || typeof own(error, 'message') !== 'string') throw new Unclassifiable('a malformed error')
  } else if (!isObject(own(value, 'result'))) {
    throw new Unclassifiable('a result that is not an object')
  }
  return { kind: 'response', id }
}

/** Classify a whole parsed body: every message, or Unclassifiable. */
export function classifyBody(value: unknown): Body {
  if (!Array.isArray(value)) return { batch: false, messages: [classify(value)] }
  if (value.length === 0) throw new Unclassifiable('an empty batch')
  const messages = value.map(classify)
  const ids = new Set<string | number>()
  for (const m of messages) {
    if (m.kind !== 'request') continue
    // Two requests with one id: a response could not say which it answers (and the list filter could not either).
    if (ids.has(m.id)) throw new Unclassifiable('two requests with one id')
    ids.add(m.id)
  }
  return { batch: true, messages }
}

/** An own member of params. */
export function param(params: Params, key: string): unknown {
  return Object.hasOwn(params, key) ? params[key] : undefined
}
