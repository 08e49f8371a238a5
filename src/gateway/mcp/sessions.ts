/**
 * MCP sessions bound to whoever opened them (issue #38.5). A stateful MCP
 * server (2025-03-26 to 2025-11-25 transports) takes any request carrying a
 * live `Mcp-Session-Id`, whoever's token came with it; the spec asks that
 * session ids be bound to the user. So the gateway binds the id it sees
 * issued in an answer (the one to `initialize`) to the hash of the token's
 * issuer, subject and client, in the store every instance shares, before
 * the client can read the id: the answer's head waits for the binding. A
 * request that carries a session id must then come with a token of that
 * owner; otherwise (another person, another client, an id it never saw
 * issued, a malformed or repeated header) it is answered as the transport
 * answers an unknown session, 404 `Session not found`, and the client opens
 * a new session. The upstream is still told who calls (identity headers).
 *
 *
 * The 2024-11-05 HTTP+SSE transport carries its session in the query of the
 * POST endpoint its GET stream announces first (`event: endpoint`, `data:
 * /messages?sessionId=…`; the Python SDK's parameter is `session_id`): that
 * id is bound the same way, the stream's first event held until it is, and
 * a request whose query carries one is checked like a header.
 *
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#session-management
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/security_best_practices#session-hijacking
 * @see https://modelcontextprotocol.io/specification/2024-11-05/basic/transports#http-with-sse
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { BadGateway, McpSessionNotFound, type OAuthError } from '../../errors.js'
import { failureOf } from '../../http/failure.js'
import { cutResponse } from '../../http/http2-request.js'
import { sendErrorWithId } from '../../http/reply.js'
import { hashToken } from '../../store/hash.js'
import type { Store } from '../../store/types.js'
import type { FlatHeaders } from '../flat-headers.js'
import { canonicalHeaderName } from '../header-names.js'
import type { TokenIdentity } from '../token-identity.js'
import type { ResponseRewriter } from '../upstream/rewrite.js'

/** How long a session stays bound unused; each request with it renews the binding. */
export const MCP_SESSION_TTL_SEC = 24 * 60 * 60

/** The most of an answer held while its session is bound (an initialize result is a few KB); beyond, the exchange fails. */
const MAX_HELD = 1024 * 1024

/** A session id as the transport defines it: visible ASCII (0x21 to 0x7E); a repeated header joins with ", " and is none. */
const SESSION_ID = /^[\x21-\x7e]{1,1024}$/

/**
 * The session id a request carries: undefined when none, null when the
 * header is repeated or not a session id. The header is found under every
 * name an upstream may read as it (`Mcp_Session_Id`: CGI-style servers map
 * `_` and `-` alike, header-names.ts), so a spelling the gateway did not
 * look at never carries someone's session past the check; two spellings
 * are a repeat.
 */
export function sessionIdOf(req: IncomingMessage): string | null | undefined {
  const raw = req.rawHeaders
  let id: string | undefined
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (canonicalHeaderName(raw[i] as string) !== 'mcp-session-id') continue
    if (id !== undefined) return null
    id = raw[i + 1] as string
  }
  if (id === undefined) return undefined
  return SESSION_ID.test(id) ? id : null
}

/**
 * The query parameters that carry a 2024-11-05 session id: the TypeScript
 * SDK's `sessionId`, the Python SDK's `session_id`, compared without case,
 * and with a bracket suffix (`sessionId[]`, `sessionId[0]`), which Express's
 * query parser reads as the same parameter.
 */
const LEGACY_SESSION_PARAM = /^(?:sessionid|session_id)(?:\[[^\]]*\])*$/i

/**
 * The 2024-11-05 session id a raw query carries: undefined when none, null
 * when the parameter is repeated (in any of its names) or not a session id.
 */
export function legacySessionIdOf(rawQuery: string): string | null | undefined {
  if (!/session/i.test(rawQuery) && !rawQuery.includes('%')) return undefined
  const found: string[] = []
  for (const [name, value] of new URLSearchParams(rawQuery)) if (LEGACY_SESSION_PARAM.test(name)) found.push(value)
  if (found.length === 0) return undefined
  const [id] = found
  if (found.length > 1 || id === undefined || !SESSION_ID.test(id)) return null
  return id
}

/** The most of a stream's first event read for a 2024-11-05 `endpoint` event; a longer first event is not one. */
const MAX_FIRST_EVENT = 8 * 1024

/**
 * The session id a stream's first SSE event announces, when that event is
 * a 2024-11-05 `endpoint` event: undefined while the event is incomplete,
 * null when it is not an endpoint event (or has no id), the id (or
 * `malformed`) otherwise.
 */
function announcedSession(text: string): string | null | undefined | 'malformed' {
  const end = /\r\n\r\n|\n\n|\r\r/.exec(text)
  if (end === null) return text.length > MAX_FIRST_EVENT ? null : undefined
  let event = 'message'
  const data: string[] = []
  for (const line of text.slice(0, end.index).split(/\r\n|\n|\r/)) {
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'event') event = value
    else if (field === 'data') data.push(value)
  }
  if (event !== 'endpoint') return null
  let query: string
  try {
    query = new URL(data.join('\n'), 'http://endpoint.invalid').search.slice(1)
  } catch {
    return 'malformed'
  }
  const id = legacySessionIdOf(query)
  return id === undefined ? null : id === null ? 'malformed' : id
}

/**
 * Owners already hashed, by identity. A token's identity is one object for as
 * long as the token cache keeps its validation, so a client's requests hash
 * their owner once rather than once each (a SHA-256 and a JSON array a request).
 */
const OWNERS = new WeakMap<TokenIdentity, string>()

/** Who a session belongs to: the token's issuer, subject and client, hashed (the store holds no names). */
function ownerOf(identity: TokenIdentity): string {
  let owner = OWNERS.get(identity)
  if (owner === undefined) {
    owner = hashToken(JSON.stringify([identity.issuer, identity.sub, identity.clientId]))
    OWNERS.set(identity, owner)
  }
  return owner
}

/**
 * Beside the owner, the binding remembers whether `initialize` declared URL-mode elicitation (issue #41): a
 * call that needs the person's approval is then answered with the 2025-11-25 `-32042` error that sends them
 * to the approval page. The owner is base64url: a space cannot be part of it.
 */
const URL_ELICITATION = ' url'

/** What a session's check found. */
export interface SessionCheck {
  /** The 404 when the request may not use the session; null when it may. */
  readonly refused: OAuthError | null
  /** The session's initialize declared URL-mode elicitation. */
  readonly urlElicitation: boolean
}

/** The gateway's session bindings, over the shared store. */
export class McpSessions {
  readonly #store: Pick<Store, 'mcpSessions'>

  constructor(store: Pick<Store, 'mcpSessions'>) {
    this.#store = store
  }

  /**
   * Whether a request with session `id` (from sessionIdOf) may go on for
   * `identity`: null when it may, the 404 otherwise. Rejects with the
   * store's error (the gateway fails closed, 503).
   */
  async check(route: string, id: string | null, identity: TokenIdentity): Promise<SessionCheck> {
    const refused = (cause: string): SessionCheck => ({ refused: new McpSessionNotFound({ cause }), urlElicitation: false })
    if (id === null) return refused('mcp session id malformed')
    const bound = await this.#store.mcpSessions.ownerOf(route, hashToken(id), MCP_SESSION_TTL_SEC)
    if (bound === null) return refused('mcp session not bound')
    const urlElicitation = bound.endsWith(URL_ELICITATION)
    const owner = urlElicitation ? bound.slice(0, -URL_ELICITATION.length) : bound
    if (owner !== ownerOf(identity)) return refused('mcp session bound to another')
    return { refused: null, urlElicitation }
  }

  /**
   * The rewriter of one forwarded MCP exchange: an answer that issues a
   * session id other than the request's is held until the id is bound to
   * `identity`, then passed on (through `inner`, the list filter, when
   * set). `requested`: the session id the request carried (already checked).
   */
  binder(
    route: string,
    requested: string | undefined,
    identity: TokenIdentity,
    requestId: string,
    inner: ResponseRewriter | null,
    urlElicitation = false,
  ): ResponseRewriter {
    return new SessionBinder(this.#store, route, requested, ownerOf(identity) + (urlElicitation ? URL_ELICITATION : ''), requestId, inner)
  }
}

/** Every value of `name` (lowercase) in a flat header list. */
function headerValues(headers: FlatHeaders, name: string): string[] {
  const out: string[] = []
  for (let i = 0; i + 1 < headers.length; i += 2) if (String(headers[i]).toLowerCase() === name) out.push(String(headers[i + 1]))
  return out
}

/** Holds an answer that opens a session until the session is bound; passes every other answer through. */
class SessionBinder implements ResponseRewriter {
  readonly #store: Pick<Store, 'mcpSessions'>
  readonly #route: string
  readonly #requested: string | undefined
  readonly #owner: string
  readonly #requestId: string
  readonly #inner: ResponseRewriter | null
  /** While the binding is written: what arrived, to pass on after it. */
  #held: { head: () => void; chunks: Buffer[]; size: number; ended: boolean } | null = null
  /** The binding failed: the answer was replaced by an error, the rest is dropped. */
  #failed = false
  /** An event stream's start, read until its first event shows whether it announces a 2024-11-05 session; null once known. */
  #firstEvent: Buffer[] | null = null

  constructor(
    store: Pick<Store, 'mcpSessions'>,
    route: string,
    requested: string | undefined,
    owner: string,
    requestId: string,
    inner: ResponseRewriter | null,
  ) {
    this.#store = store
    this.#route = route
    this.#requested = requested
    this.#owner = owner
    this.#requestId = requestId
    this.#inner = inner
  }

  writeHead(res: ServerResponse, status: number, statusText: string | undefined, headers: string[]): void {
    const head = (): void => {
      if (this.#inner !== null) this.#inner.writeHead(res, status, statusText, headers)
      // HTTP/2 has no reason phrase (RFC 9113 8.3.2).
      else if (statusText && res.req.httpVersionMajor !== 2) res.writeHead(status, statusText, headers)
      else res.writeHead(status, headers)
    }
    const values = headerValues(headers, 'mcp-session-id')
    const issued = values[0]
    if (issued === undefined) {
      // An event stream may announce a 2024-11-05 session in its first event: its body is read until then.
      if (headerValues(headers, 'content-type').some((type) => /^\s*text\/event-stream\s*(?:;|$)/i.test(type))) this.#firstEvent = []
      return head()
    }
    if (values.length === 1 && issued === this.#requested) return head()
    this.#held = { head, chunks: [], size: 0, ended: false }
    if (values.length > 1) {
      // A client reads two ids as one joined value, the gateway would bind only one of them: neither is passed on.
      this.#fail(res, new BadGateway('The upstream issued more than one session id'))
      return
    }
    this.#store.mcpSessions.bind(this.#route, hashToken(issued), this.#owner, MCP_SESSION_TTL_SEC).then(
      (bound) => (bound ? this.#release(res) : this.#fail(res, new BadGateway('The upstream issued a session id that belongs to another session'))),
      (err: unknown) => this.#fail(res, failureOf(err).answer),
    )
  }

  write(res: ServerResponse, chunk: Buffer): boolean {
    if (this.#failed) return true
    if (this.#firstEvent !== null) return this.#readFirstEvent(res, chunk)
    if (this.#held !== null) {
      // Never false while held: nothing is written, so no drain would come to resume the upstream.
      this.#held.size += chunk.length
      if (this.#held.size > MAX_HELD) this.#fail(res, new BadGateway('The upstream answer that opened a session is too large'))
      else this.#held.chunks.push(chunk)
      return true
    }
    return this.#inner === null ? res.write(chunk) : this.#inner.write(res, chunk)
  }

  end(res: ServerResponse): void {
    if (this.#failed) return
    if (this.#firstEvent !== null) this.#passFirstEvent(res)
    if (this.#held !== null) {
      this.#held.ended = true
      return
    }
    if (this.#inner === null) res.end()
    else this.#inner.end(res)
  }

  /** Reads a stream's start until its first event is whole: an `endpoint` event's session is bound before it goes out. */
  #readFirstEvent(res: ServerResponse, chunk: Buffer): boolean {
    const read = this.#firstEvent ?? []
    read.push(chunk)
    const announced = announcedSession(Buffer.concat(read).toString('utf8'))
    if (announced === undefined) return true
    if (announced === null) return this.#passFirstEvent(res)
    if (announced === 'malformed') {
      this.#fail(res, new BadGateway('The upstream announced a malformed session'))
      return true
    }
    this.#firstEvent = null
    this.#held = { head: () => undefined, chunks: read, size: 0, ended: false }
    this.#store.mcpSessions.bind(this.#route, hashToken(announced), this.#owner, MCP_SESSION_TTL_SEC).then(
      (bound) => (bound ? this.#release(res) : this.#fail(res, new BadGateway('The upstream announced a session that belongs to another'))),
      (err: unknown) => this.#fail(res, failureOf(err).answer),
    )
    return true
  }

  /** The stream's first event announces no session: what was read goes out as it came. */
  #passFirstEvent(res: ServerResponse): boolean {
    const read = this.#firstEvent ?? []
    this.#firstEvent = null
    let more = true
    for (const chunk of read) more = this.write(res, chunk)
    return more
  }

  /** Bound: the held head, chunks and end go out. */
  #release(res: ServerResponse): void {
    const held = this.#held
    if (held === null || res.destroyed) return
    this.#held = null
    try {
      held.head()
      for (const chunk of held.chunks) this.write(res, chunk)
      if (held.ended) this.end(res)
    } catch {
      // What the list filter cannot rewrite ends the exchange, as it would have synchronously.
      if (res.headersSent) cutResponse(res)
      else this.#fail(res, new BadGateway('The upstream answer could not be passed on'))
    }
  }

  /** Not bound: the client never sees the session id. */
  #fail(res: ServerResponse, err: OAuthError): void {
    this.#failed = true
    this.#held = null
    if (res.destroyed) return
    // Cut, never ended: over HTTP/2 a plain destroy() reads as a clean end (http2-request.ts).
    if (res.headersSent) cutResponse(res)
    else sendErrorWithId(res, this.#requestId, err)
  }
}
