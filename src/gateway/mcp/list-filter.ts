/**
 * List results filtered by the token (`mcp.filter_lists`): a `tools/list`,
 * `prompts/list`, `resources/list` or `resources/templates/list` result
 * shows only what the same token may call, get or read under the route's
 * per-name rules. Each page is filtered on its own and keeps its
 * `nextCursor`, so pagination goes on through the server's cursors.
 *
 * A filtered result depends on the token: it is marked not shareable,
 * `Cache-Control: private` on the HTTP answer and, for a 2026-07-28 request
 * (whose list results are cacheable, with `ttlMs` and `cacheScope`),
 * `cacheScope: "private"` in the result.
 *
 * A JSON answer is held whole (at most MAX_LIST_BODY), rewritten and sent
 * with its new Content-Length. An SSE answer streams through event by event;
 * only the event that carries a listed request's response is rewritten.
 * What cannot be filtered (a compressed or unparseable answer, an event too
 * large) ends the exchange rather than pass unfiltered.
 *
 * @see https://modelcontextprotocol.io/specification/2026-07-28/server/tools#listing-tools
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
import type { ServerResponse } from 'node:http'
import type { FlatHeaders } from '../flat-headers.js'
import type { ResponseRewriter } from '../upstream/rewrite.js'

export type ListKind = 'tools' | 'prompts' | 'resources' | 'templates'

/** The list methods and what they list. */
export const LIST_METHODS: ReadonlyMap<string, ListKind> = new Map([
  ['tools/list', 'tools'],
  ['prompts/list', 'prompts'],
  ['resources/list', 'resources'],
  ['resources/templates/list', 'templates'],
])

/** Per kind: the result's array, and the member of each item the rules judge. */
const FIELDS: Readonly<Record<ListKind, { readonly list: string; readonly name: string }>> = {
  tools: { list: 'tools', name: 'name' },
  prompts: { list: 'prompts', name: 'name' },
  resources: { list: 'resources', name: 'uri' },
  templates: { list: 'resourceTemplates', name: 'uriTemplate' },
}

/** The largest JSON answer, or SSE event, held to be filtered. */
export const MAX_LIST_BODY = 8 * 1024 * 1024

/** Whether the token may see an item of `kind` named `name`. */
export type Visibility = (kind: ListKind, name: string) => boolean

/** An answer that cannot be filtered: the exchange ends instead. */
export class Unfilterable extends Error {}

type HeaderList = FlatHeaders

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * Filter one JSON-RPC message (or a batch of them) in place; true when a
 * listed request's response was in it.
 */
function filterMessage(value: unknown, lists: ReadonlyMap<string | number, ListKind>, visible: Visibility, modern: boolean): boolean {
  if (Array.isArray(value)) {
    let any = false
    for (const v of value) any = filterMessage(v, lists, visible, modern) || any
    return any
  }
  if (!isObject(value) || !Object.hasOwn(value, 'id')) return false
  const id = value.id
  if (typeof id !== 'string' && typeof id !== 'number') return false
  const kind = lists.get(id)
  if (kind === undefined) return false
  const result = Object.hasOwn(value, 'result') ? value.result : undefined
  if (!isObject(result)) return true
  const { list, name } = FIELDS[kind]
  const items = Object.hasOwn(result, list) ? result[list] : undefined
  if (Array.isArray(items)) {
    // An item without a readable name cannot be judged: it is not shown.
    result[list] = items.filter((item) => isObject(item) && typeof item[name] === 'string' && visible(kind, item[name] as string))
  }
  if (modern || Object.hasOwn(result, 'cacheScope')) result.cacheScope = 'private'
  return true
}

/** Cache-Control for a per-token answer: `private`, the upstream's other directives kept, `public` and `s-maxage` dropped. */
function privateCacheControl(upstream: string | undefined): string {
  const kept = (upstream ?? '')
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '' && !/^(public|private|s-maxage)\b/i.test(d))
  if (kept.some((d) => /^no-store$/i.test(d))) return kept.join(', ')
  return ['private', ...kept].join(', ')
}

/** The header list without `names` (lowercase), and the last value of each of `names` it had. */
function take(headers: HeaderList, names: readonly string[]): { rest: HeaderList; values: Map<string, string> } {
  const rest: HeaderList = []
  const values = new Map<string, string>()
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = String(headers[i]).toLowerCase()
    const value = headers[i + 1] as string
    if (names.includes(name)) values.set(name, String(value))
    else rest.push(headers[i] as string, value)
  }
  return { rest, values }
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
}

/** The rewriter of one exchange whose request listed something. */
export class ListFilter implements ResponseRewriter {
  readonly #lists: ReadonlyMap<string | number, ListKind>
  readonly #visible: Visibility
  readonly #modern: boolean
  #mode: 'pass' | 'json' | 'sse' = 'pass'
  /** json: the held status line and headers. */
  #head: { status: number; statusText: string | undefined; headers: HeaderList } | null = null
  #chunks: Buffer[] = []
  #size = 0
  /** sse: text of the event being received (events are split on blank lines). */
  #pending = ''
  readonly #decoder = new TextDecoder('utf-8', { fatal: true })

  constructor(lists: ReadonlyMap<string | number, ListKind>, visible: Visibility, modern: boolean) {
    this.#lists = lists
    this.#visible = visible
    this.#modern = modern
  }

  writeHead(res: ServerResponse, status: number, statusText: string | undefined, headers: HeaderList): void {
    const { rest, values } = take(headers, ['content-type', 'content-length', 'cache-control', 'content-encoding'])
    const type = mediaType(values.get('content-type'))
    const json = type === 'application/json'
    const sse = type === 'text/event-stream'
    if (status < 200 || status > 299 || (!json && !sse)) {
      this.#mode = 'pass'
      write(res, status, statusText, headers)
      return
    }
    const encoding = values.get('content-encoding')
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') throw new Unfilterable('a compressed list answer')
    const out: HeaderList = [...rest, 'content-type', values.get('content-type') as string, 'cache-control', privateCacheControl(values.get('cache-control'))]
    if (sse) {
      this.#mode = 'sse'
      write(res, status, statusText, out)
      return
    }
    this.#mode = 'json'
    this.#head = { status, statusText, headers: out }
  }

  write(res: ServerResponse, chunk: Buffer): boolean {
    if (this.#mode === 'pass') return res.write(chunk)
    if (this.#mode === 'json') {
      this.#size += chunk.length
      if (this.#size > MAX_LIST_BODY) throw new Unfilterable('a list answer too large to filter')
      this.#chunks.push(chunk)
      return true
    }
    this.#pending += this.#decoder.decode(chunk, { stream: true })
    if (this.#pending.length > MAX_LIST_BODY) throw new Unfilterable('an event too large to filter')
    let out = ''
    for (;;) {
      const end = /\r\n\r\n|\n\n|\r\r/.exec(this.#pending)
      if (end === null) break
      const event = this.#pending.slice(0, end.index + end[0].length)
      this.#pending = this.#pending.slice(end.index + end[0].length)
      out += this.#event(event)
    }
    return out === '' ? true : res.write(out)
  }

  end(res: ServerResponse): void {
    if (this.#mode === 'pass') {
      res.end()
      return
    }
    if (this.#mode === 'sse') {
      const rest = this.#pending + this.#decoder.decode()
      res.end(rest === '' ? undefined : this.#event(rest))
      return
    }
    const head = this.#head
    if (head === null) throw new Unfilterable('no head')
    let value: unknown
    try {
      value = JSON.parse(Buffer.concat(this.#chunks, this.#size).toString('utf8'))
    } catch {
      throw new Unfilterable('a list answer that is not JSON')
    }
    filterMessage(value, this.#lists, this.#visible, this.#modern)
    const body = Buffer.from(JSON.stringify(value))
    write(res, head.status, head.statusText, [...head.headers, 'content-length', String(body.length)])
    res.end(body)
  }

  /** One SSE event: rewritten when its data is a listed request's response, else the same text. */
  #event(event: string): string {
    const lines = event.split(/\r\n|\n|\r/)
    const data: string[] = []
    const others: string[] = []
    for (const line of lines) {
      if (line === '') continue
      if (line === 'data' || line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      else others.push(line)
    }
    if (data.length === 0) return event
    let value: unknown
    try {
      value = JSON.parse(data.join('\n'))
    } catch {
      return event
    }
    if (!filterMessage(value, this.#lists, this.#visible, this.#modern)) return event
    return `${others.map((l) => `${l}\n`).join('')}data: ${JSON.stringify(value)}\n\n`
  }
}

function write(res: ServerResponse, status: number, statusText: string | undefined, headers: HeaderList): void {
  if (statusText) res.writeHead(status, statusText, headers)
  else res.writeHead(status, headers)
}
