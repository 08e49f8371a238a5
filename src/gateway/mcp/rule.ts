/**
 * The MCP request inspector of a route that fronts an MCP server
 * (Streamable HTTP, both eras: 2025-03-26 to 2025-11-25, and 2026-07-28 and
 * later). Built once per Runtime.
 *
 * Before the token (headers only, nothing read): a browser request from an
 * origin the route does not allow is 403 (DNS rebinding); a GET or DELETE
 * of a revision the route does not accept is 400; an upgrade (WebSocket)
 * is 400, its messages would pass unjudged.
 *
 * After the token is valid (`judge`): the body, at most `mcp.max_body`, is
 * read and decided message by message (messages.ts). Every request needs the
 * route's scopes plus those of the tool, resource or prompt it names
 * (names.ts); a response or an ordinary notification needs none; a body that
 * is not completely understood is 400. 2026-07-28 requests must carry the
 * standard headers, agreeing with the body (headers.ts), else 400 with the
 * JSON-RPC HeaderMismatch error. The body is forwarded byte for byte.
 *
 * The 403 names every scope the request needs in one challenge, so a client
 * steps up once (RFC 6750 3.1 `scope`; MCP authorization, scope challenge).
 * A tool (resource, prompt) may also demand a stronger or more recent
 * sign-in (RFC 9470, `{ scopes, authentication }` rules): the 401 names
 * what the route and the tool need together (step-up.ts).
 */
import type { IncomingMessage } from 'node:http'
import type { McpRouteConfig, RouteConfig } from '../../config/validated-config.js'
import {
  InsufficientScope,
  InvalidRequest,
  McpHeaderMismatch,
  McpOriginRefused,
  McpUnsupportedProtocolVersion,
  type JsonRpcId,
  type OAuthError,
} from '../../errors.js'
import { readBody } from '../../http/body.js'
import type { ScopeRule } from '../scope.js'
import { StepUp, type StepUpRule } from '../step-up.js'
import { DEFAULT_REVISION, FIRST_BATCHLESS_REVISION, decodeName, envelopeRevision, header, isModern, isVersionToken, nameValue, originOf } from './headers.js'
import { parseStrictJson } from './json.js'
import { LIST_METHODS, type ListKind } from './list-filter.js'
import { classifyBody, param, Unclassifiable, type Body, type Message, type Params } from './messages.js'
import { nameProblem } from './name-text.js'
import { NameRules, NameValues, PLAIN_NAMES, RESOURCE_URIS } from './names.js'
import { uriProblem } from './resource-uri.js'

/** A scope requirement for one request, and its refusal when the token falls short. */
export interface McpRequirement {
  /** Route and per-name scopes together, deduplicated: the challenge's `scope`. */
  readonly required: readonly string[]
  readonly refusal: InsufficientScope
  /**
   * The sign-in the body's calls need (RFC 9470): the route's and their
   * tools', resources' and prompts' together; null when they add nothing to
   * the route's own (which the token already met).
   */
  readonly stepUp: StepUp | null
}

/** What the body said. */
export interface McpJudgement {
  readonly body: Buffer
  /** The scopes the body's messages need together (the route's included). */
  readonly requirement: McpRequirement
  /** The list requests whose results are filtered, by JSON-RPC id; null when none is. */
  readonly lists: ReadonlyMap<string | number, ListKind> | null
  /** The request is of the 2026-07-28 era (a filtered list result says `cacheScope`). */
  readonly modern: boolean
  /** The tool of each `tools/call` in the body, as sent, on a route whose tools have rate limits; empty elsewhere. */
  readonly toolCalls: readonly string[]
  /** The single request's JSON-RPC id (a refusal names it), else null. */
  readonly id: JsonRpcId
  /** The `tools/call` of a tool whose rule says `approval: required` (docs/approvals.md); null when the body has none. */
  readonly approval: ApprovalCall | null
  /**
   * The client declared URL-mode elicitation: in `initialize`'s capabilities (remembered with the session it opens), or
   * in a 2026-07-28 request's own `_meta` client capabilities.
   */
  readonly urlElicitation: boolean
}

/** A call that waits for the person's approval: always a single request (batches and notifications of it are refused). */
export interface ApprovalCall {
  readonly id: string | number
  readonly tool: string
  readonly params: Params
  /** The whole message as parsed: re-serialized only when the gateway takes its own retry members out. */
  readonly message: Readonly<Record<string, unknown>>
}

/** The `_meta` key of the 2026-07-28 envelope's client capabilities. */
const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities'

function objectParam(params: Params | undefined, key: string): Params | undefined {
  if (params === undefined) return undefined
  const v = param(params, key)
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Params) : undefined
}

/** `capabilities.elicitation.url` is an object (MCP 2025-11-25: `elicitation: {}` alone means form mode only). */
function declaresUrl(capabilities: Params | undefined): boolean {
  return objectParam(objectParam(capabilities, 'elicitation'), 'url') !== undefined
}

/** Whether a single message declares URL elicitation: an initialize's capabilities, or a request's 2026-07-28 envelope. */
function urlElicitationOf(body: Body): boolean {
  const m = body.messages[0]
  if (body.batch || m === undefined || m.kind !== 'request') return false
  if (m.method === 'initialize') return declaresUrl(objectParam(m.params, 'capabilities'))
  return declaresUrl(objectParam(objectParam(m.params, '_meta'), CLIENT_CAPABILITIES_META_KEY))
}

const NO_CALLS: readonly string[] = Object.freeze([])

function requirement(required: readonly string[], stepUp: StepUp | null = null): McpRequirement {
  const unique = Object.freeze([...new Set(required)])
  return { required: unique, refusal: new InsufficientScope(unique), stepUp }
}

/** The kinds of names rules are written for. */
type NamedKind = 'tools' | 'resources' | 'prompts'

/** True when the Content-Type's media type is application/json (charset, if named, UTF-8: the only one JSON has, RFC 8259 8.1). */
function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  if (contentType === 'application/json') return true
  const [media = '', ...params] = contentType.split(';')
  if (media.trim().toLowerCase() !== 'application/json') return false
  for (const p of params) {
    const [name = '', value = ''] = p.split('=')
    if (name.trim().toLowerCase() === 'charset' && value.trim().replace(/^"|"$/g, '').toLowerCase() !== 'utf-8') return false
  }
  return true
}

function invalid(description: string, cause: string): InvalidRequest {
  return new InvalidRequest(description, { cause })
}

/** The id a header error names: the single request's, else null. */
function idOf(body: Body): JsonRpcId {
  const first = body.messages[0]
  return !body.batch && first !== undefined && first.kind === 'request' ? first.id : null
}

/** The per-route inspector. */
export class McpRule {
  readonly #maxBody: number
  readonly #routeRequired: readonly string[]
  readonly #route: McpRequirement
  readonly #tools: NameRules
  readonly #resources: NameRules
  readonly #prompts: NameRules
  /** Step-ups per name (`{ scopes, authentication }` rules), by kind. */
  readonly #stepUps: Readonly<Record<NamedKind, NameValues<StepUp>>>
  /** The route's own step-up for a POST, which the token already met; null when none. */
  readonly #routeStepUp: StepUp | null
  readonly #versions: ReadonlySet<string> | null
  readonly #versionList: readonly string[]
  readonly #origins: ReadonlySet<string>
  /** The list methods filtered on this route: those whose kind has rules, unless `filter_lists: false`. */
  readonly #filtered: ReadonlyMap<string, ListKind>
  /** The route limits tool calls (docs/traffic.md): every tools/call names its tool in a spelling judged like a ruled one. */
  readonly #toolsLimited: boolean
  /** Tools whose calls wait for the person's approval (`approval: required`). */
  readonly #approvalTools: NameValues<true>

  constructor(route: RouteConfig, scopes: ScopeRule, stepUp: StepUpRule | null = null) {
    const mcp = route.mcp
    if (mcp === null) throw new Error(`route ${route.name} has no mcp section`)
    this.#maxBody = mcp.maxBodyBytes
    this.#routeRequired = scopes.required('POST')
    this.#route = requirement(this.#routeRequired)
    this.#tools = new NameRules(mcp.tools)
    this.#resources = new NameRules(mcp.resources, RESOURCE_URIS)
    this.#prompts = new NameRules(mcp.prompts)
    const compiled = (rules: McpRouteConfig['authentication'][NamedKind], reading = PLAIN_NAMES): NameValues<StepUp> =>
      new NameValues(Object.fromEntries(Object.entries(rules).map(([name, rule]) => [name, new StepUp([rule])])), reading)
    this.#stepUps = {
      tools: compiled(mcp.authentication.tools),
      resources: compiled(mcp.authentication.resources, RESOURCE_URIS),
      prompts: compiled(mcp.authentication.prompts),
    }
    this.#routeStepUp = stepUp?.of('POST') ?? null
    this.#versions = mcp.protocolVersions === null ? null : new Set(mcp.protocolVersions)
    this.#versionList = mcp.protocolVersions ?? []
    this.#origins = new Set(mcp.allowedOrigins)
    const filtered = new Map<string, ListKind>()
    if (mcp.filterLists) {
      for (const [method, kind] of LIST_METHODS) {
        const rules = kind === 'tools' ? this.#tools : kind === 'prompts' ? this.#prompts : this.#resources
        if (!rules.empty) filtered.set(method, kind)
      }
    }
    this.#filtered = filtered
    this.#toolsLimited = (route.limits?.rateLimits ?? []).some((l) => l.tool !== null || l.key === 'tool')
    this.#approvalTools = new NameValues(Object.fromEntries(mcp.approvalTools.map((t) => [t, true as const])))
  }

  /** Whether a request of this method carries a JSON-RPC message to judge (Streamable HTTP sends them by POST). */
  applies(req: IncomingMessage): boolean {
    return req.method === 'POST'
  }

  /**
   * The checks that need no body and no token, answered before either:
   * an upgrade (400), Origin (403), an MCP-Protocol-Version that is not even
   * a version token (400), the revision of a GET or DELETE the route does
   * not accept (400). null when the request may go on.
   * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#security-%26-endpoint
   */
  precheck(req: IncomingMessage): OAuthError | null {
    // MCP runs over Streamable HTTP only: a WebSocket tunnel would carry calls no rule judges (and no approval holds).
    if (req.headers.upgrade !== undefined) return invalid('An MCP route carries JSON-RPC over Streamable HTTP, never an upgraded connection', 'mcp upgrade')
    const origin = originOf(req)
    // No Origin: not a browser request (DNS rebinding needs a browser); a malformed one is refused.
    if (origin !== undefined && (origin === null || !this.#origins.has(origin))) return new McpOriginRefused({ cause: 'mcp origin not allowed' })
    const version = header(req, 'mcp-protocol-version')
    // A version that is not a date is one this gateway does not know: judged
    // by the strictest (2026-07-28) rules, refused by protocol_versions, or
    // left to the server, which names the revisions it supports (-32022).
    if (version !== undefined && !isVersionToken(version)) {
      return invalid('The MCP-Protocol-Version header does not name a protocol revision', 'mcp-protocol-version malformed')
    }
    // A GET (the 2025 SSE stream) or DELETE without the header is of the revision servers assume.
    // A POST's is judged with its body, whose request id the answer names.
    if (this.#versions !== null && !this.applies(req)) return this.#acceptVersion(version ?? DEFAULT_REVISION, null)
    return null
  }

  #acceptVersion(version: string, id: JsonRpcId): OAuthError | null {
    if (this.#versions === null || this.#versions.has(version)) return null
    return new McpUnsupportedProtocolVersion(version, this.#versionList, isModern(version), id, { cause: 'mcp protocol version not accepted' })
  }

  /**
   * Read the body and judge it (after the token was found valid). Rejects
   * with PayloadTooLarge (413) over `max_body`, InvalidRequest (400) for a
   * body it cannot classify completely, McpHeaderMismatch (400) for a
   * 2026-07-28 request whose headers are missing or disagree with the body,
   * McpUnsupportedProtocolVersion (400).
   */
  async judge(req: IncomingMessage): Promise<McpJudgement> {
    if (!isJsonContentType(req.headers['content-type'])) {
      throw invalid('An MCP request body is a JSON-RPC message sent as application/json', 'mcp post not json')
    }
    // The gateway judges the bytes as sent; an upstream that decodes a content coding (body-parser inflates) would act on others.
    const coding = req.headers['content-encoding']
    if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') {
      throw invalid('An MCP request body is sent without a content coding', 'mcp post content-encoding')
    }
    const raw = await readBody(req, this.#maxBody)
    const parsed = parseStrictJson(raw)
    if ('problem' in parsed) {
      if (parsed.problem === 'not json' || parsed.problem === 'not utf-8') throw invalid('The request body is not valid JSON', `mcp body ${parsed.problem}`)
      throw invalid('The request body repeats a member name, or uses __proto__', `mcp body ${parsed.problem}`)
    }
    let body: Body
    try {
      body = classifyBody(parsed.value)
    } catch (err) {
      if (!(err instanceof Unclassifiable)) throw err
      throw invalid('The request body is not a JSON-RPC message this gateway can judge', `mcp body: ${err.message}`)
    }
    const headerVersion = header(req, 'mcp-protocol-version')
    const claims = body.messages.map((m) => (m.kind === 'response' ? ({ claimed: false } as const) : envelopeRevision(m.params)))
    const modern = (headerVersion !== undefined && isModern(headerVersion)) || claims.some((c) => c.claimed && c.revision !== undefined && isModern(c.revision))
    if (body.batch) {
      if (modern || claims.some((c) => c.claimed) || (headerVersion !== undefined && headerVersion >= FIRST_BATCHLESS_REVISION)) {
        throw invalid('JSON-RPC batches are not part of MCP since revision 2025-06-18', 'mcp batch')
      }
      if (header(req, 'mcp-method') !== undefined || header(req, 'mcp-name') !== undefined) {
        throw invalid('Mcp-Method and Mcp-Name describe a single JSON-RPC request', 'mcp headers on a batch')
      }
    } else {
      this.#checkHeaders(req, body.messages[0] as Message, modern, idOf(body))
    }
    if (this.#versions !== null) {
      const first = body.messages[0] as Message
      const claim = claims[0]
      const initialize = !body.batch && first.kind === 'request' && first.method === 'initialize'
      // initialize negotiates the revision in the server; the requests after it name the result in the header.
      const version = headerVersion ?? (claim?.claimed ? claim.revision : initialize ? undefined : DEFAULT_REVISION)
      const refusal = version === undefined ? null : this.#acceptVersion(version, idOf(body))
      if (refusal !== null) throw refusal
    }
    const toolCalls = this.#toolsLimited ? toolCallsOf(body.messages) : NO_CALLS
    const requirement = this.#requirementOf(body.messages)
    const approval = this.#approvalTools.empty ? null : this.#approvalOf(body, parsed.value)
    return { body: raw, requirement, lists: this.#listsOf(body.messages), modern, toolCalls, id: idOf(body), approval, urlElicitation: urlElicitationOf(body) }
  }

  /**
   * The body's call of an approval-required tool (names already judged by #requirementOf). Such a call
   * must be a single request: in a batch, the gateway would have to hold one element and forward the
   * others, and a notification has no answer to send the person to the page with (400 for both).
   */
  #approvalOf(body: Body, value: unknown): ApprovalCall | null {
    let found: ApprovalCall | null = null
    body.messages.forEach((m, i) => {
      if (m.kind === 'response' || m.method !== 'tools/call') return
      const tool = param(m.params, 'name')
      if (typeof tool !== 'string' || this.#approvalTools.of(tool).length === 0) return
      if (body.batch) throw invalid('A call that needs a person’s approval must be sent alone, not in a batch', 'mcp approval call in a batch')
      if (m.kind === 'notification')
        throw invalid('A call that needs a person’s approval must be a request, not a notification', 'mcp approval call as notification')
      found = { id: m.id, tool, params: m.params, message: (Array.isArray(value) ? value[i] : value) as Record<string, unknown> }
    })
    return found
  }

  /**
   * Mcp-Method / Mcp-Name / MCP-Protocol-Version against the body. For a
   * 2026-07-28 request they are required and a problem is the JSON-RPC
   * HeaderMismatch; earlier, when sent, they must agree too (400).
   * @see https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http#server-validation
   */
  #checkHeaders(req: IncomingMessage, message: Message, modern: boolean, id: JsonRpcId): void {
    const fail = (description: string, cause: string): never => {
      throw modern ? new McpHeaderMismatch(id, description, { cause }) : invalid(description, cause)
    }
    const method = header(req, 'mcp-method')
    const name = header(req, 'mcp-name')
    if (message.kind === 'response') {
      if (method !== undefined || name !== undefined) fail('Mcp-Method and Mcp-Name describe a JSON-RPC request', 'mcp headers on a response')
      return
    }
    const version = header(req, 'mcp-protocol-version')
    const claim = envelopeRevision(message.params)
    if (modern && message.kind === 'request') {
      if (version === undefined) fail('The MCP-Protocol-Version header is required', 'mcp-protocol-version missing')
      if (method === undefined) fail('The Mcp-Method header is required', 'mcp-method missing')
    }
    if (claim.claimed && version !== undefined && claim.revision !== version) {
      fail('The MCP-Protocol-Version header does not match the protocol version in the request body', 'mcp-protocol-version mismatch')
    }
    if (method !== undefined && method !== message.method) fail('The Mcp-Method header does not match the request body', 'mcp-method mismatch')
    const source = nameValue(message.method, message.params)
    if (name === undefined) {
      if (modern && message.kind === 'request' && source?.value !== undefined) fail('The Mcp-Name header is required', 'mcp-name missing')
      return
    }
    const decoded = decodeName(name)
    if (decoded === null) fail('The Mcp-Name header is not valid base64 of UTF-8', 'mcp-name bad encoding')
    // A method that mirrors no field: the header may only repeat what the body names.
    const expected = source !== undefined ? source.value : fallbackName(message.params)
    if (decoded !== expected) fail('The Mcp-Name header does not match the request body', 'mcp-name mismatch')
  }

  /** The route's scopes plus those of every tool, resource and prompt the body names; and their step-ups. */
  #requirementOf(messages: readonly Message[]): McpRequirement {
    const extra: string[] = []
    const stepUps: StepUp[] = []
    for (const m of messages) {
      // A notification of a judged method is judged too: a server may run it and only drop the answer.
      if (m.kind === 'response') continue
      const named = this.#nameOf(m.method, m.params)
      if (named === null || named === 'unnamed') continue
      const rules = named.kind === 'tools' ? this.#tools : named.kind === 'prompts' ? this.#prompts : this.#resources
      extra.push(...rules.scopesOf(named.name))
      stepUps.push(...this.#stepUps[named.kind].of(named.name))
    }
    if (extra.length === 0 && stepUps.length === 0) return this.#route
    const stepUp = stepUps.length === 0 ? null : new StepUp([...(this.#routeStepUp?.parts ?? []), ...stepUps.flatMap((s) => s.parts)])
    return requirement([...this.#routeRequired, ...extra], stepUp)
  }

  /**
   * The tool, prompt or resource a request names, for the methods rules
   * apply to; null for others. A request that names none is refused when
   * the route has rules for its kind (nothing to judge it by), and is
   * 'unnamed' when it has none: no name could need more than the route's
   * scopes, and the server answers it (in 2026-07-28 a removed
   * `resources/subscribe` is the server's 404, -32601).
   */
  #nameOf(method: string, params: Params): { kind: NamedKind; name: string } | 'unnamed' | null {
    switch (method) {
      case 'tools/call':
        return this.#named('tools', params, 'name', 'A tools/call request names no tool')
      case 'prompts/get':
        return this.#named('prompts', params, 'name', 'A prompts/get request names no prompt')
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.#named('resources', params, 'uri', `A ${method} request names no resource`)
      case 'completion/complete':
        return this.#completionName(params)
      default:
        return null
    }
  }

  #named(kind: NamedKind, params: Params, key: string, description: string): { kind: NamedKind; name: string } | 'unnamed' {
    const ruleless = this.#ruleless(kind)
    if (typeof param(params, key) !== 'string' && ruleless) return 'unnamed'
    const name = stringParam(params, key, description)
    // Without rules for the kind no spelling could need more than the route's scopes: the server answers it.
    if (!ruleless) {
      noCaseTwin(params, key)
      judgeable(kind, name)
    }
    return { kind, name }
  }

  /** Whether the route has no rule (scopes or sign-in) for names of this kind. */
  #ruleless(kind: NamedKind): boolean {
    if (kind === 'tools' && (this.#toolsLimited || !this.#approvalTools.empty)) return false
    const rules = kind === 'tools' ? this.#tools : kind === 'prompts' ? this.#prompts : this.#resources
    return rules.empty && this.#stepUps[kind].empty
  }

  /** completion/complete completes an argument of a prompt or a resource template: it needs what that needs. */
  #completionName(params: Params): { kind: NamedKind; name: string } {
    const ref = param(params, 'ref')
    if (typeof ref !== 'object' || ref === null || Array.isArray(ref)) throw invalid('A completion/complete request has no ref', 'completion without ref')
    const r = ref as Params
    const type = param(r, 'type')
    // A ref names a prompt or a resource template (compared by its text, `orders://{id}`): never a URI to parse.
    const named = (kind: NamedKind, key: string, description: string): { kind: NamedKind; name: string } => {
      const name = stringParam(r, key, description)
      if (!this.#ruleless(kind)) {
        noCaseTwin(r, key)
        judgeableText(name, kind === 'prompts' ? 'prompt name' : 'resource template')
      }
      return { kind, name }
    }
    if (type === 'ref/prompt') return named('prompts', 'name', 'A completion/complete ref names no prompt')
    if (type === 'ref/resource') return named('resources', 'uri', 'A completion/complete ref names no resource')
    throw invalid('A completion/complete ref is of a type this gateway does not know', 'completion ref type')
  }

  #listsOf(messages: readonly Message[]): ReadonlyMap<string | number, ListKind> | null {
    if (this.#filtered.size === 0) return null
    let out: Map<string | number, ListKind> | null = null
    for (const m of messages) {
      if (m.kind !== 'request') continue
      const kind = this.#filtered.get(m.method)
      if (kind === undefined) continue
      out ??= new Map()
      out.set(m.id, kind)
    }
    return out
  }

  /** Whether `name` (a tool, prompt, resource URI or template) may be listed for a token with `granted`. */
  visible(kind: ListKind, name: string, granted: readonly string[]): boolean {
    const rules = kind === 'tools' ? this.#tools : kind === 'prompts' ? this.#prompts : this.#resources
    for (const scope of rules.scopesOf(name)) if (!granted.includes(scope)) return false
    return true
  }
}

/**
 * Refuse a name or URI a server could read as another (name-text.ts,
 * resource-uri.ts): the gateway would judge one reading and the server
 * serve the other.
 */
function judgeable(kind: NamedKind, name: string): void {
  if (kind === 'resources') {
    const problem = uriProblem(name)
    if (problem !== null) throw invalid('The resource URI is not in the one spelling every MCP server reads alike', problem)
    return
  }
  judgeableText(name, kind === 'tools' ? 'tool name' : 'prompt name')
}

/**
 * Refuse a member that differs from `key` only in case (`Name` beside
 * `name`): a server whose JSON binding ignores case (.NET's web defaults)
 * would read the last of the two, perhaps not the one judged.
 */
function noCaseTwin(params: Params, key: string): void {
  for (const k of Object.keys(params)) {
    if (k !== key && k.toLowerCase() === key) throw invalid(`The request names its ${key} twice, in two cases`, `a ${JSON.stringify(k)} member beside ${key}`)
  }
}

function judgeableText(name: string, what: string): void {
  const problem = nameProblem(name)
  if (problem !== null) throw invalid(`The ${what} holds characters a server could read another way`, problem)
}

function stringParam(params: Params, key: string, description: string): string {
  const value = param(params, key)
  if (typeof value !== 'string') throw invalid(description, `${key} is not a string`)
  return value
}

/** The tool each tools/call request or notification names (already judged by #requirementOf). */
function toolCallsOf(messages: readonly Message[]): readonly string[] {
  const out: string[] = []
  for (const m of messages) {
    if (m.kind === 'response' || m.method !== 'tools/call') continue
    const name = param(m.params, 'name')
    if (typeof name === 'string') out.push(name)
  }
  return out
}

/** What Mcp-Name repeats for a method that mirrors no field: `params.name`, else `params.uri`. */
function fallbackName(params: Params): string | undefined {
  const name = param(params, 'name')
  if (typeof name === 'string') return name
  const uri = param(params, 'uri')
  return typeof uri === 'string' ? uri : undefined
}

/** The 403 for a token that lacks a scope of `requirement`, or null when it has them all. */
export function checkRequirement(requirement: McpRequirement, granted: readonly string[]): InsufficientScope | null {
  for (const scope of requirement.required) if (!granted.includes(scope)) return requirement.refusal
  return null
}
