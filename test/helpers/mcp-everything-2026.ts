/**
 * The reference server for the MCP conformance package's server scenarios at
 * protocol revision 2026-07-28 (`@modelcontextprotocol/conformance-next`):
 * the tools, resources, prompts and completion those scenarios call, with
 * the names and answers each scenario's requirements text asks for, plus the
 * diagnostic tools `server-stateless` probes (`test_missing_capability`,
 * `test_streaming_elicitation`, `test_logging_tool`, the list-change
 * triggers).
 *
 * Written on the SDK 2.x low-level `Server` and `createMcpHandler`, which
 * own the wire rules of the revision (the `_meta` envelope, `server/discover`,
 * the standard header checks, `subscriptions/listen`, cache fields, the
 * `input_required` result type); this file says what the server holds and
 * how each handler answers, and checks the `Mcp-Param-*` headers itself (the
 * SDK does that only for its high-level `McpServer`). Every request builds a fresh `Server` (the
 * revision is stateless): anything that must survive between rounds of a
 * multi-round-trip call travels in an HMAC-sealed `requestState`.
 *
 * Requests whose Host or Origin is not a loopback name are refused with 403
 * before the handler sees them (DNS-rebinding protection).
 * @see https://modelcontextprotocol.io/specification/draft/basic/transports
 */
import { randomBytes } from 'node:crypto'
import {
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  createRequestStateCodec,
  hostHeaderValidationResponse,
  inputRequired,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  MissingRequiredClientCapabilityError,
  originValidationResponse,
  ProtocolError,
  Server,
  type CallToolResult,
  type ClientCapabilities,
  type GetPromptResult,
  type InputRequest,
  type InputRequiredResult,
  type McpHttpHandler,
  type RequestStateCodec,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server'
import { serveMcpHandler, type RunningMcpHandler } from './mcp-sdk2.js'

const IMAGE = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='
const AUDIO = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA='
const INVALID_PARAMS = -32602
/** HeaderMismatch: an Mcp-* header disagrees with the body (SEP-2243). */
const HEADER_MISMATCH = -32020

type Args = Record<string, unknown>
type Answer = CallToolResult | InputRequiredResult

/** What a tool handler gets: its arguments, the request context, and the state sealer. */
interface ToolCall {
  readonly args: Args
  readonly ctx: ServerContext
  readonly seal: (payload: RoundState) => Promise<string>
}

/** The verified state of a multi-round-trip call, as the server sealed it in the previous round. */
interface RoundState {
  readonly tool: string
  readonly round: number
  readonly name?: string
}

interface ToolDef {
  readonly tool: Tool
  readonly call: (call: ToolCall) => Answer | Promise<Answer>
}

const EMPTY = { type: 'object' as const, properties: {} }
const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] })

// ---- reading what the client sent back in a retried round ----

/** The bare response the client sent for `key`, when it is an object (anything else is as good as absent). */
function responseFor(ctx: ServerContext, key: string): Record<string, unknown> | undefined {
  const value = ctx.mcpReq.inputResponses?.[key]
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

/** A string field of an accepted elicitation, or undefined when the user did not accept or the field is missing. */
function elicited(ctx: ServerContext, key: string, field: string): string | undefined {
  const r = responseFor(ctx, key)
  if (r?.action !== 'accept') return undefined
  const content = r.content
  if (typeof content !== 'object' || content === null) return undefined
  const value = (content as Record<string, unknown>)[field]
  return typeof value === 'string' ? value : undefined
}

/** The text a sampling response carries, or undefined. */
function sampled(ctx: ServerContext, key: string): string | undefined {
  const content = responseFor(ctx, key)?.content
  if (typeof content !== 'object' || content === null) return undefined
  const value = (content as Record<string, unknown>).text
  return typeof value === 'string' ? value : undefined
}

/** The root URIs a roots/list response carries, or undefined when it is not a list of roots. */
function rootUris(ctx: ServerContext, key: string): string[] | undefined {
  const roots = responseFor(ctx, key)?.roots
  if (!Array.isArray(roots)) return undefined
  return roots.map((r) => String((r as Record<string, unknown> | null)?.uri ?? ''))
}

/** The sealed state of this round, or undefined on a first call (a tampered one never gets here: the server's verify hook refuses it). */
function stateOf(ctx: ServerContext, tool: string): RoundState | undefined {
  const state = ctx.mcpReq.requestState<RoundState>()
  return state !== undefined && state.tool === tool ? state : undefined
}

/** The capabilities this request's `_meta` envelope declares (each request declares its own: there is no session). */
function clientCapabilities(ctx: ServerContext): ClientCapabilities {
  // The SDK types the lifted envelope as an empty object; it is keyed by the reserved meta keys.
  const envelope: Record<string, unknown> = ctx.mcpReq.envelope ?? {}
  const caps = envelope[CLIENT_CAPABILITIES_META_KEY]
  return typeof caps === 'object' && caps !== null ? (caps as ClientCapabilities) : {}
}

// ---- the input requests the scenarios expect, word for word ----

const askName = (message: string): InputRequest =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } })
const askColor = (): InputRequest =>
  inputRequired.elicit({
    message: 'Step 2: What is your favorite color?',
    requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
  })
const askConfirm = (): InputRequest =>
  inputRequired.elicit({ message: 'Please confirm', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } })
const askModel = (question: string, maxTokens: number): InputRequest =>
  inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: question } }], maxTokens })

// ---- the multi-round-trip tools (SEP-2322) ----

/** Ask for a name until the client answers with one (missing, wrong or malformed answers are asked again, not errors). */
function greet(call: ToolCall): Answer {
  const name = elicited(call.ctx, 'user_name', 'name')
  if (name === undefined) return inputRequired({ inputRequests: { user_name: askName('What is your name?') } })
  return text(`Hello, ${name}!`)
}

function sample(call: ToolCall): Answer {
  const answer = sampled(call.ctx, 'capital_question')
  if (answer === undefined) return inputRequired({ inputRequests: { capital_question: askModel('What is the capital of France?', 100) } })
  return text(`Sampling response: ${answer}`)
}

function listRoots(call: ToolCall): Answer {
  const roots = rootUris(call.ctx, 'client_roots')
  if (roots === undefined) return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } })
  return text(`Client roots (${roots.length}): ${roots.join(', ')}`)
}

async function confirmWithState(call: ToolCall): Promise<Answer> {
  const tool = 'test_input_required_result_request_state'
  const state = stateOf(call.ctx, tool)
  const ok = responseFor(call.ctx, 'confirm')
  if (state === undefined || ok === undefined) {
    return inputRequired({ inputRequests: { confirm: askConfirm() }, requestState: await call.seal({ tool, round: 1 }) })
  }
  return text(`state-ok: confirmation received (${JSON.stringify(ok.content ?? {})})`)
}

async function multipleInputs(call: ToolCall): Promise<Answer> {
  const tool = 'test_input_required_result_multiple_inputs'
  const name = elicited(call.ctx, 'user_name', 'name')
  const greeting = sampled(call.ctx, 'greeting')
  const roots = rootUris(call.ctx, 'client_roots')
  if (stateOf(call.ctx, tool) === undefined || name === undefined || greeting === undefined || roots === undefined) {
    return inputRequired({
      inputRequests: {
        user_name: askName('What is your name?'),
        greeting: askModel('Generate a greeting', 50),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await call.seal({ tool, round: 1 }),
    })
  }
  return text(`name=${name}, greeting=${greeting}, roots=${roots.join(', ')}`)
}

/** Three rounds: a name, then (with the name carried in the sealed state) a colour, then the answer. */
async function multiRound(call: ToolCall): Promise<Answer> {
  const tool = 'test_input_required_result_multi_round'
  const state = stateOf(call.ctx, tool)
  const askStep1 = async (): Promise<Answer> =>
    inputRequired({ inputRequests: { step1: askName('Step 1: What is your name?') }, requestState: await call.seal({ tool, round: 1 }) })
  if (state === undefined) return askStep1()
  if (state.round === 1) {
    const name = elicited(call.ctx, 'step1', 'name')
    if (name === undefined) return askStep1()
    return inputRequired({ inputRequests: { step2: askColor() }, requestState: await call.seal({ tool, round: 2, name }) })
  }
  const color = elicited(call.ctx, 'step2', 'color')
  if (color === undefined) {
    return inputRequired({ inputRequests: { step2: askColor() }, requestState: await call.seal({ tool, round: 2, name: state.name ?? '' }) })
  }
  return text(`${state.name ?? ''} likes ${color}`)
}

/** The state is sealed, so a changed byte fails the server's verify hook with -32602 before this runs again. */
async function tamperProof(call: ToolCall): Promise<Answer> {
  const tool = 'test_input_required_result_tampered_state'
  if (stateOf(call.ctx, tool) === undefined || responseFor(call.ctx, 'confirm') === undefined) {
    return inputRequired({ inputRequests: { confirm: askConfirm() }, requestState: await call.seal({ tool, round: 1 }) })
  }
  return text('state-ok: the request state was verified')
}

/** Ask only for what the client said it can do (SEP-2322: never an input request for an undeclared capability). */
function withDeclaredCapabilities(call: ToolCall): Answer {
  const caps = clientCapabilities(call.ctx)
  if (call.ctx.mcpReq.inputResponses !== undefined) return text(`Received: ${Object.keys(call.ctx.mcpReq.inputResponses).join(', ')}`)
  const requests: Record<string, InputRequest> = {}
  if (caps.elicitation !== undefined) requests.user_name = askName('What is your name?')
  if (caps.sampling !== undefined) requests.greeting = askModel('Generate a greeting', 50)
  if (caps.roots !== undefined) requests.client_roots = inputRequired.listRoots()
  if (Object.keys(requests).length === 0) return text('The client declared no capability to ask with')
  return inputRequired({ inputRequests: requests })
}

// ---- the diagnostic tools server-stateless probes ----

/** Needs sampling: without the client declaring it, the call is refused with -32021 naming it. */
function needsSampling(call: ToolCall): Answer {
  if (clientCapabilities(call.ctx).sampling === undefined) throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } })
  return text('The client declared sampling')
}

/** On this revision a server that needs input answers with input_required, never with a request of its own on the stream. */
function streamingElicitation(call: ToolCall): Answer {
  const name = elicited(call.ctx, 'user_name', 'name')
  if (name === undefined) return inputRequired({ inputRequests: { user_name: askName('What is your name?') } })
  return text(`Hello, ${name}!`)
}

/** Logs, which the SDK must drop unless the request's `_meta` set a log level. */
async function logs(call: ToolCall): Promise<Answer> {
  await call.ctx.mcpReq.log?.('info', 'test_logging_tool ran').catch(() => {})
  return text('Logging tool executed')
}

// ---- the tool list ----

function toolList(changes: () => McpHttpHandler['notify']): readonly ToolDef[] {
  return [
    // First on purpose: header validation calls the first listed tool with no arguments and expects it to succeed.
    {
      tool: { name: 'test_simple_text', description: 'Returns a fixed text', inputSchema: EMPTY },
      call: () => text('This is a simple text response for testing.'),
    },
    {
      tool: { name: 'test_image_content', description: 'Returns an image', inputSchema: EMPTY },
      call: () => ({ content: [{ type: 'image', data: IMAGE, mimeType: 'image/png' }] }),
    },
    {
      tool: { name: 'test_audio_content', description: 'Returns audio', inputSchema: EMPTY },
      call: () => ({ content: [{ type: 'audio', data: AUDIO, mimeType: 'audio/wav' }] }),
    },
    {
      tool: { name: 'test_embedded_resource', description: 'Returns an embedded resource', inputSchema: EMPTY },
      call: () => ({
        content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
      }),
    },
    {
      tool: { name: 'test_multiple_content_types', description: 'Returns text, an image and a resource', inputSchema: EMPTY },
      call: () => ({
        content: [
          { type: 'text', text: 'Multiple content types test:' },
          { type: 'image', data: IMAGE, mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
        ],
      }),
    },
    {
      tool: { name: 'test_tool_with_progress', description: 'Reports progress three times', inputSchema: EMPTY },
      call: async ({ ctx }) => {
        const progressToken = ctx.mcpReq._meta?.progressToken ?? 0
        for (const progress of [0, 50, 100]) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
          })
        }
        return text(String(progressToken))
      },
    },
    {
      tool: { name: 'test_error_handling', description: 'Always fails', inputSchema: EMPTY },
      call: () => ({ isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }),
    },
    {
      tool: {
        name: 'json_schema_2020_12_tool',
        description: 'Takes an input schema with JSON Schema 2020-12 keywords, which must reach the client unchanged',
        inputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
          properties: {
            name: { type: 'string' },
            address: { $ref: '#/$defs/address' },
            contactMethod: { type: 'string', enum: ['phone', 'email'] },
            phone: { type: 'string' },
            email: { type: 'string' },
          },
          allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
          if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
          // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword the scenario checks for, not a thenable
          then: { required: ['phone'] },
          else: { required: ['email'] },
          additionalProperties: false,
        },
      },
      call: ({ args }) => text(`Called with ${JSON.stringify(args)}`),
    },
    {
      // A parameter mirrored in an Mcp-Param-Region header (SEP-2243): checked against the body before dispatch.
      tool: {
        name: 'test_header_param',
        description: 'Echoes a region that the client also sends as a header',
        inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] },
      },
      call: ({ args }) => text(`Region: ${String(args.region)}`),
    },
    { tool: { name: 'test_input_required_result_elicitation', description: 'Asks for a name', inputSchema: EMPTY }, call: greet },
    { tool: { name: 'test_input_required_result_sampling', description: 'Asks the model a question', inputSchema: EMPTY }, call: sample },
    { tool: { name: 'test_input_required_result_list_roots', description: "Asks for the client's roots", inputSchema: EMPTY }, call: listRoots },
    {
      tool: { name: 'test_input_required_result_request_state', description: 'Asks for a confirmation, with state', inputSchema: EMPTY },
      call: confirmWithState,
    },
    { tool: { name: 'test_input_required_result_multiple_inputs', description: 'Asks three things at once', inputSchema: EMPTY }, call: multipleInputs },
    { tool: { name: 'test_input_required_result_multi_round', description: 'Asks two things, one round each', inputSchema: EMPTY }, call: multiRound },
    { tool: { name: 'test_input_required_result_tampered_state', description: 'Refuses altered state', inputSchema: EMPTY }, call: tamperProof },
    {
      tool: { name: 'test_input_required_result_capabilities', description: 'Asks only what the client can answer', inputSchema: EMPTY },
      call: withDeclaredCapabilities,
    },
    { tool: { name: 'test_missing_capability', description: 'Needs the sampling capability', inputSchema: EMPTY }, call: needsSampling },
    { tool: { name: 'test_streaming_elicitation', description: 'Needs an elicitation', inputSchema: EMPTY }, call: streamingElicitation },
    { tool: { name: 'test_logging_tool', description: 'Logs a message', inputSchema: EMPTY }, call: logs },
    {
      tool: { name: 'test_trigger_tool_change', description: 'Announces a tool list change', inputSchema: EMPTY },
      call: () => {
        changes().toolsChanged()
        return text('Tool list change announced')
      },
    },
    {
      tool: { name: 'test_trigger_prompt_change', description: 'Announces a prompt list change', inputSchema: EMPTY },
      call: () => {
        changes().promptsChanged()
        return text('Prompt list change announced')
      },
    },
  ]
}

// ---- resources ----

const RESOURCES = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    title: 'Static Text Resource',
    mimeType: 'text/plain',
    text: 'This is the content of the static text resource.',
  },
  { uri: 'test://static-binary', name: 'static-binary', title: 'Static Binary Resource', mimeType: 'image/png', blob: IMAGE },
] as const
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/

type ResourceContents = { uri: string; mimeType: string; text: string } | { uri: string; mimeType: string; blob: string }

function readResource(uri: string): { contents: ResourceContents[] } {
  const found = RESOURCES.find((r) => r.uri === uri)
  if (found !== undefined) {
    const { name: _name, title: _title, ...contents } = found
    return { contents: [contents] }
  }
  const id = TEMPLATE.exec(uri)?.[1]
  // Never an empty `contents`: an unknown URI is an error naming it (SEP-2164).
  if (id === undefined) throw new ProtocolError(INVALID_PARAMS, 'Resource not found', { uri })
  return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] }
}

// ---- prompts ----

interface PromptDef {
  readonly title: string
  readonly description: string
  readonly arguments?: Array<{ name: string; description: string; required: boolean }>
  readonly get: (args: Args, ctx: ServerContext) => GetPromptResult | InputRequiredResult
}

const user = (content: GetPromptResult['messages'][number]['content']): GetPromptResult['messages'][number] => ({ role: 'user', content })

const PROMPTS: Record<string, PromptDef> = {
  test_simple_prompt: {
    title: 'Simple Test Prompt',
    description: 'A prompt without arguments',
    get: () => ({ messages: [user({ type: 'text', text: 'This is a simple prompt for testing.' })] }),
  },
  test_prompt_with_arguments: {
    title: 'Prompt With Arguments',
    description: 'A prompt with two required arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
    get: (a) => ({ messages: [user({ type: 'text', text: `Prompt with arguments: arg1='${String(a.arg1)}', arg2='${String(a.arg2)}'` })] }),
  },
  test_prompt_with_embedded_resource: {
    title: 'Prompt With Embedded Resource',
    description: 'A prompt that embeds a resource',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    get: (a) => ({
      messages: [
        user({ type: 'resource', resource: { uri: String(a.resourceUri), mimeType: 'text/plain', text: 'Embedded resource content for testing.' } }),
        user({ type: 'text', text: 'Please process the embedded resource above.' }),
      ],
    }),
  },
  test_prompt_with_image: {
    title: 'Prompt With Image',
    description: 'A prompt that includes an image',
    get: () => ({ messages: [user({ type: 'image', data: IMAGE, mimeType: 'image/png' }), user({ type: 'text', text: 'Please analyze the image above.' })] }),
  },
  test_input_required_result_prompt: {
    title: 'Prompt Needing Input',
    description: 'A prompt that asks the user for context first (input_required is not only for tools)',
    get: (_a, ctx) => {
      const context = elicited(ctx, 'user_context', 'context')
      if (context === undefined) {
        return inputRequired({
          inputRequests: {
            user_context: inputRequired.elicit({
              message: 'What context should the prompt use?',
              requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] },
            }),
          },
        })
      }
      return { messages: [user({ type: 'text', text: `Answer with this context in mind: ${context}` })] }
    },
  },
}

// ---- the server ----

/** One Server per request: the tools and the state codec are shared, nothing else outlives the request. */
function buildServer(tools: readonly ToolDef[], codec: RequestStateCodec<RoundState>): Server {
  const server = new Server(
    { name: 'bearward-conformance-2026', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { listChanged: true },
        prompts: { listChanged: true },
        completions: {},
        logging: {},
      },
      // Lists are the same for everyone for a minute; reads of these fixed resources too.
      cacheHints: {
        'tools/list': { ttlMs: 60_000, cacheScope: 'public' },
        'prompts/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/templates/list': { ttlMs: 60_000, cacheScope: 'public' },
        'resources/read': { ttlMs: 60_000, cacheScope: 'public' },
      },
      requestState: { verify: (state, ctx) => codec.verify(state, ctx) },
    },
  )
  const seal = (payload: RoundState): Promise<string> => codec.mint(payload)
  server.setRequestHandler('tools/list', () => ({ tools: tools.map((d) => d.tool) }))
  server.setRequestHandler('tools/call', (req, ctx) => {
    const def = tools.find((d) => d.tool.name === req.params.name)
    if (def === undefined) throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${req.params.name}`)
    return def.call({ args: req.params.arguments ?? {}, ctx, seal })
  })
  server.setRequestHandler('resources/list', () => ({ resources: RESOURCES.map(({ uri, name, title, mimeType }) => ({ uri, name, title, mimeType })) }))
  server.setRequestHandler('resources/templates/list', () => ({
    resourceTemplates: [{ uriTemplate: 'test://template/{id}/data', name: 'template', title: 'Resource Template', mimeType: 'application/json' }],
  }))
  server.setRequestHandler('resources/read', (req) => readResource(req.params.uri))
  server.setRequestHandler('prompts/list', () => ({
    prompts: Object.entries(PROMPTS).map(([name, p]) => ({
      name,
      title: p.title,
      description: p.description,
      ...(p.arguments ? { arguments: p.arguments } : {}),
    })),
  }))
  server.setRequestHandler('prompts/get', (req, ctx) => {
    const prompt = PROMPTS[req.params.name]
    if (prompt === undefined) throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${req.params.name}`)
    return prompt.get(req.params.arguments ?? {}, ctx)
  })
  server.setRequestHandler('completion/complete', () => ({ completion: { values: [], total: 0, hasMore: false } }))
  return server
}

/** 403 for a Host or Origin that is not a loopback name: a page on another site must not reach a local server. */
function rebindingRefusal(request: Request): Response | undefined {
  return hostHeaderValidationResponse(request, localhostAllowedHostnames()) ?? originValidationResponse(request, localhostAllowedOrigins())
}

// ---- Mcp-Param-* headers (SEP-2243) ----
// The SDK checks these only for tools registered on its high-level McpServer;
// this server registers raw JSON Schemas on the low-level Server, so it checks
// them itself, before the request reaches the SDK.

/** The `x-mcp-header` declarations of a tool's input schema: argument name to header suffix. */
function headerDeclarations(tool: Tool): Array<{ argument: string; header: string }> {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>
  return Object.entries(properties).flatMap(([argument, schema]) =>
    typeof schema['x-mcp-header'] === 'string' ? [{ argument, header: `Mcp-Param-${schema['x-mcp-header']}` }] : [],
  )
}

const BASE64_WRAPPED = /^=\?base64\?(.*)\?=$/
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * A header value as the client meant it: `=?base64?...?=` is Base64 of UTF-8
 * (undefined when that Base64 is malformed: refused, never guessed at);
 * anything else, even Base64-looking text without both markers, is literal.
 */
function headerValue(raw: string): string | undefined {
  const value = raw.trim()
  const wrapped = BASE64_WRAPPED.exec(value)?.[1]
  if (wrapped === undefined) return value
  return BASE64.test(wrapped) ? Buffer.from(wrapped, 'base64').toString('utf8') : undefined
}

/** What is wrong with a call's Mcp-Param-* headers, or undefined when each one agrees with its argument. */
function paramHeaderProblem(tool: Tool, args: Args, headers: Headers): string | undefined {
  for (const { argument, header } of headerDeclarations(tool)) {
    const raw = headers.get(header)
    const body = args[argument]
    if (raw === null) {
      if (body !== undefined && body !== null) return `${header} is missing but arguments.${argument} is set`
      continue
    }
    const value = headerValue(raw)
    if (value === undefined) return `${header} is not valid Base64`
    if (body === undefined || value !== String(body)) return `${header} does not match arguments.${argument}`
  }
  return undefined
}

function headerMismatch(id: unknown, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id, error: { code: HEADER_MISMATCH, message } }), {
    status: 400,
    headers: { 'content-type': 'application/json' },
  })
}

/** 400 / -32020 for a tools/call whose Mcp-Param-* headers disagree with its arguments; anything unreadable is left to the SDK. */
async function paramHeaderRefusal(request: Request, tools: readonly ToolDef[]): Promise<Response | undefined> {
  if (request.method !== 'POST') return undefined
  let message: unknown
  try {
    message = JSON.parse(await request.clone().text())
  } catch {
    return undefined
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined
  const { id, method, params } = message as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } }
  if (method !== 'tools/call' || typeof params !== 'object' || params === null) return undefined
  const tool = tools.find((d) => d.tool.name === params.name)?.tool
  if (tool === undefined) return undefined
  const args = typeof params.arguments === 'object' && params.arguments !== null ? (params.arguments as Args) : {}
  const problem = paramHeaderProblem(tool, args, request.headers)
  return problem === undefined ? undefined : headerMismatch(id, problem)
}

/** Start the reference server on 127.0.0.1, port 0; the MCP endpoint is `${url}/mcp` (any path answers). */
export async function startEverything2026Server(): Promise<RunningMcpHandler> {
  // One key for the life of the server: every round of a flow reaches this process.
  const codec = createRequestStateCodec<RoundState>({ key: randomBytes(32) })
  // The trigger tools publish on the handler's subscription bus, which only exists once the handler does.
  const tools: readonly ToolDef[] = toolList(() => inner.notify)
  const inner = createMcpHandler(() => buildServer(tools, codec))
  const guarded: McpHttpHandler = {
    ...inner,
    fetch: async (request, options) => rebindingRefusal(request) ?? (await paramHeaderRefusal(request, tools)) ?? inner.fetch(request, options),
  }
  return serveMcpHandler(guarded)
}
