/**
 * The reference server for the MCP conformance package's server scenarios
 * (`@modelcontextprotocol/conformance` 0.1.16, protocol 2025-06-18 and
 * 2025-11-25): the tools, resources, prompts, logging and completion those
 * scenarios call, with the names and answers they expect. It follows the
 * package's own "everything server"
 * (examples/servers/typescript/everything-server.ts in
 * modelcontextprotocol/conformance at v0.1.16, MIT), written here on the SDK
 * 1.x low-level `Server` and its stateful Streamable HTTP transport on
 * node:http instead of express.
 *
 * Stateful: `initialize` opens a session (Mcp-Session-Id), later requests and
 * the GET stream name it, DELETE ends it; events are kept for resumption
 * (Last-Event-ID) and SSE responses announce a short `retry` (SEP-1699).
 * Requests whose Host is not a loopback name are refused with 403, as the
 * SDK's express app does (DNS-rebinding protection).
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  CreateMessageResultSchema,
  type CallToolResult,
  type GetPromptResult,
  type JSONRPCMessage,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import { closeServer, listen } from './http.js'

const IMAGE = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='
const AUDIO = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA='
/** The SSE `retry` the server announces (ms): short, so the polling scenario does not wait long. */
const RETRY_MS = 500

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>
type Args = Record<string, unknown>

const EMPTY = { type: 'object' as const, properties: {} }
const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] })
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** An elicitation/create sent from inside a tool call, answered as the scenarios read it. */
async function elicit(extra: Extra, params: Record<string, unknown>, done: string): Promise<CallToolResult> {
  try {
    const r = await extra.sendRequest({ method: 'elicitation/create', params } as ServerRequest, ElicitResultSchema)
    return text(`${done}: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`)
  } catch (err) {
    return text(`Elicitation not supported or error: ${(err as Error).message}`)
  }
}

async function steps(extra: Extra, notify: (i: number) => ServerNotification): Promise<void> {
  for (let i = 0; i < 3; i++) {
    if (i > 0) await sleep(50)
    await extra.sendNotification(notify(i))
  }
}

interface ToolDef {
  readonly tool: Tool
  readonly call: (args: Args, extra: Extra) => Promise<CallToolResult>
}

const TOOLS: readonly ToolDef[] = [
  {
    tool: { name: 'test_simple_text', description: 'Tests simple text content response', inputSchema: EMPTY },
    call: async () => text('This is a simple text response for testing.'),
  },
  {
    tool: { name: 'test_image_content', description: 'Tests image content response', inputSchema: EMPTY },
    call: async () => ({ content: [{ type: 'image', data: IMAGE, mimeType: 'image/png' }] }),
  },
  {
    tool: { name: 'test_audio_content', description: 'Tests audio content response', inputSchema: EMPTY },
    call: async () => ({ content: [{ type: 'audio', data: AUDIO, mimeType: 'audio/wav' }] }),
  },
  {
    tool: { name: 'test_embedded_resource', description: 'Tests embedded resource content response', inputSchema: EMPTY },
    call: async () => ({
      content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
    }),
  },
  {
    tool: { name: 'test_multiple_content_types', description: 'Tests response with multiple content types (text, image, resource)', inputSchema: EMPTY },
    call: async () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: IMAGE, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) },
        },
      ],
    }),
  },
  {
    tool: { name: 'test_tool_with_logging', description: 'Tests tool that emits log messages during execution', inputSchema: EMPTY },
    call: async (_args, extra) => {
      const said = ['Tool execution started', 'Tool processing data', 'Tool execution completed']
      await steps(extra, (i) => ({ method: 'notifications/message', params: { level: 'info', data: said[i] } }))
      return text('Tool with logging executed successfully')
    },
  },
  {
    tool: { name: 'test_tool_with_progress', description: 'Tests tool that reports progress notifications', inputSchema: EMPTY },
    call: async (_args, extra) => {
      const progressToken = extra._meta?.progressToken ?? 0
      await steps(extra, (i) => ({
        method: 'notifications/progress',
        params: { progressToken, progress: i * 50, total: 100, message: `Completed step ${i * 50} of 100` },
      }))
      return text(String(progressToken))
    },
  },
  {
    tool: { name: 'test_error_handling', description: 'Tests error response handling', inputSchema: EMPTY },
    call: async () => ({ isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }),
  },
  {
    tool: {
      name: 'test_reconnection',
      description: 'Closes the SSE stream mid-call; the result follows after the client reconnects (SEP-1699)',
      inputSchema: EMPTY,
    },
    call: async (_args, extra) => {
      extra.closeSSEStream?.()
      await sleep(100)
      return text('Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.')
    },
  },
  {
    tool: {
      name: 'test_sampling',
      description: 'Tests server-initiated sampling (LLM completion request)',
      inputSchema: { type: 'object', properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } }, required: ['prompt'] },
    },
    call: async (args, extra) => {
      try {
        const r = await extra.sendRequest(
          {
            method: 'sampling/createMessage',
            params: { messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt) } }], maxTokens: 100 },
          },
          CreateMessageResultSchema,
        )
        return text(`LLM response: ${r.content.type === 'text' ? r.content.text : 'No response'}`)
      } catch (err) {
        return text(`Sampling not supported or error: ${(err as Error).message}`)
      }
    },
  },
  {
    tool: {
      name: 'test_elicitation',
      description: 'Tests server-initiated elicitation (user input request)',
      inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'The message to show the user' } }, required: ['message'] },
    },
    call: (args, extra) =>
      elicit(
        extra,
        {
          message: String(args.message),
          requestedSchema: { type: 'object', properties: { response: { type: 'string', description: "User's response" } }, required: ['response'] },
        },
        'User response',
      ),
  },
  {
    tool: { name: 'test_elicitation_sep1034_defaults', description: 'Tests elicitation with default values per SEP-1034', inputSchema: EMPTY },
    call: (_args, extra) =>
      elicit(
        extra,
        {
          message: 'Please review and update the form fields with defaults',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'User name', default: 'John Doe' },
              age: { type: 'integer', description: 'User age', default: 30 },
              score: { type: 'number', description: 'User score', default: 95.5 },
              status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
              verified: { type: 'boolean', description: 'Verification status', default: true },
            },
            required: [],
          },
        },
        'Elicitation completed',
      ),
  },
  {
    tool: { name: 'test_elicitation_sep1330_enums', description: 'Tests elicitation with enum schema improvements per SEP-1330', inputSchema: EMPTY },
    call: (_args, extra) =>
      elicit(
        extra,
        {
          message: 'Please select options from the enum fields',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
              titledSingle: {
                type: 'string',
                description: 'Select one option with titles',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                description: 'Select one option (legacy)',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: {
                type: 'array',
                description: 'Select multiple options',
                minItems: 1,
                maxItems: 3,
                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              },
              titledMulti: {
                type: 'array',
                description: 'Select multiple options with titles',
                minItems: 1,
                maxItems: 3,
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
            required: [],
          },
        },
        'Elicitation completed',
      ),
  },
  {
    tool: {
      name: 'json_schema_2020_12_tool',
      description: 'Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)',
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      },
    },
    call: async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  },
]

const RESOURCES = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    title: 'Static Text Resource',
    mimeType: 'text/plain',
    text: 'This is the content of the static text resource.',
  },
  { uri: 'test://static-binary', name: 'static-binary', title: 'Static Binary Resource', mimeType: 'image/png', blob: IMAGE },
  { uri: 'test://watched-resource', name: 'watched-resource', title: 'Watched Resource', mimeType: 'text/plain', text: 'Watched resource content' },
] as const
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/

const PROMPTS: Record<
  string,
  { title: string; description: string; arguments?: Array<{ name: string; description: string; required: boolean }>; get: (args: Args) => GetPromptResult }
> = {
  test_simple_prompt: {
    title: 'Simple Test Prompt',
    description: 'A simple prompt without arguments',
    get: () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }] }),
  },
  test_prompt_with_arguments: {
    title: 'Prompt With Arguments',
    description: 'A prompt with required arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
    get: (a) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${String(a.arg1)}', arg2='${String(a.arg2)}'` } }],
    }),
  },
  test_prompt_with_embedded_resource: {
    title: 'Prompt With Embedded Resource',
    description: 'A prompt that includes an embedded resource',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    get: (a) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'resource', resource: { uri: String(a.resourceUri), mimeType: 'text/plain', text: 'Embedded resource content for testing.' } },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  },
  test_prompt_with_image: {
    title: 'Prompt With Image',
    description: 'A prompt that includes image content',
    get: () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: IMAGE, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  },
}

function mcpServer(): Server {
  const server = new Server(
    { name: 'mcp-conformance-test-server', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
    },
  )
  const log = (message: string): void => {
    server.sendLoggingMessage({ level: 'info', logger: 'conformance-test-server', data: message }).catch(() => {})
  }
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS.map((d) => d.tool) }))
  server.setRequestHandler(CallToolRequestSchema, (req, extra) => {
    const def = TOOLS.find((d) => d.tool.name === req.params.name)
    if (def === undefined) return { isError: true, content: [{ type: 'text', text: `Unknown tool: ${req.params.name}` }] }
    return def.call(req.params.arguments ?? {}, extra)
  })
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: RESOURCES.map(({ uri, name, title, mimeType }) => ({ uri, name, title, mimeType })),
  }))
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [{ uriTemplate: 'test://template/{id}/data', name: 'template', title: 'Resource Template', mimeType: 'application/json' }],
  }))
  server.setRequestHandler(ReadResourceRequestSchema, (req) => {
    const uri = req.params.uri
    const found = RESOURCES.find((r) => r.uri === uri)
    if (found !== undefined) {
      const { name: _name, title: _title, ...contents } = found
      return { contents: [contents] }
    }
    const id = TEMPLATE.exec(uri)?.[1]
    if (id === undefined) throw new Error(`Resource ${uri} not found`)
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] }
  })
  server.setRequestHandler(SubscribeRequestSchema, (req) => {
    log(`Subscribed to resource: ${req.params.uri}`)
    return {}
  })
  server.setRequestHandler(UnsubscribeRequestSchema, (req) => {
    log(`Unsubscribed from resource: ${req.params.uri}`)
    return {}
  })
  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: Object.entries(PROMPTS).map(([name, p]) => ({
      name,
      title: p.title,
      description: p.description,
      ...(p.arguments ? { arguments: p.arguments } : {}),
    })),
  }))
  server.setRequestHandler(GetPromptRequestSchema, (req) => {
    const prompt = PROMPTS[req.params.name]
    if (prompt === undefined) throw new Error(`Prompt ${req.params.name} not found`)
    return prompt.get(req.params.arguments ?? {})
  })
  server.setRequestHandler(SetLevelRequestSchema, (req) => {
    log(`Log level set to: ${req.params.level}`)
    return {}
  })
  server.setRequestHandler(CompleteRequestSchema, () => ({ completion: { values: [], total: 0, hasMore: false } }))
  return server
}

/** Events of every session, kept for resumption (SEP-1699). */
function eventStore(): EventStore {
  const events = new Map<string, { streamId: string; message: JSONRPCMessage }>()
  let n = 0
  return {
    async storeEvent(streamId, message) {
      const eventId = `${streamId}::${String(++n).padStart(8, '0')}`
      events.set(eventId, { streamId, message })
      return eventId
    },
    async replayEventsAfter(lastEventId, { send }) {
      const streamId = lastEventId.split('::')[0] ?? ''
      for (const [eventId, e] of events)
        if (e.streamId === streamId && eventId > lastEventId && Object.keys(e.message).length > 0) await send(eventId, e.message)
      return streamId
    },
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

function loopbackHost(req: IncomingMessage): boolean {
  const host = req.headers.host
  if (host === undefined) return false
  try {
    return LOOPBACK_HOSTS.has(new URL(`http://${host}`).hostname)
  } catch {
    return false
  }
}

function reply(res: import('node:http').ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

export interface RunningEverything {
  /** Base URL; the MCP endpoint is `${url}/mcp`. */
  readonly url: string
  /** Requests that reached the server (method and path). */
  readonly seen: Array<{ method: string; url: string }>
  readonly server: HttpServer
  close(): Promise<void>
}

/** Start the reference server on 127.0.0.1, port 0. */
export async function startEverythingServer(): Promise<RunningEverything> {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const store = eventStore()
  const seen: Array<{ method: string; url: string }> = []
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '' })
    if (!loopbackHost(req)) {
      reply(res, 403, { jsonrpc: '2.0', error: { code: -32000, message: `Invalid Host: ${String(req.headers.host)}` }, id: null })
      return
    }
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        let body: unknown
        try {
          body = raw === '' ? undefined : JSON.parse(raw)
        } catch {
          reply(res, 400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null })
          return
        }
        const sessionId = req.headers['mcp-session-id']
        const known = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined
        if (known !== undefined) {
          await known.handleRequest(req, res, body)
          return
        }
        const initialize = req.method === 'POST' && sessionId === undefined && (body as { method?: unknown } | undefined)?.method === 'initialize'
        if (!initialize) {
          reply(res, 400, { jsonrpc: '2.0', error: { code: -32000, message: 'Invalid or missing session ID' }, id: null })
          return
        }
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore: store,
          retryInterval: RETRY_MS,
          onsessioninitialized: (id) => {
            sessions.set(id, transport)
          },
        })
        transport.onclose = () => {
          if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
        }
        await mcpServer().connect(transport)
        await transport.handleRequest(req, res, body)
      })().catch(() => {
        if (!res.headersSent) reply(res, 500, { jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null })
        else res.destroy()
      })
    })
  })
  const { url } = await listen(server)
  return {
    url,
    seen,
    server,
    async close() {
      for (const t of sessions.values()) await t.close().catch(() => {})
      await closeServer(server)
    },
  }
}
