/**
 * A route's concurrency step (`max_in_flight`, `max_streams`; docs/traffic.md,
 * Concurrency limits): how many forwarded requests and how many long-lived
 * streams the route holds at once on this instance, route-wide and per key
 * (client, subject, grant or address).
 *
 * A slot is taken when the gateway has decided to forward (after the token
 * was judged, so a per-key limit counts who the token speaks for) and given
 * back when the exchange ends, however it ends: the response finished, the
 * client went away, the upstream failed or timed out, the body was refused.
 * The gateway ties the give-back to the response's (or the upgraded
 * socket's) `close`, the one event every ending emits, so no path of the
 * proxy has to remember it. Past a limit the answer is 503 with Retry-After,
 * at once: nothing waits for a slot, so no queue can grow.
 *
 * Two counts, because a stream is not a request that is slow: an event
 * stream or a WebSocket tunnel holds its slot for hours. A request that is
 * a stream from the start (what `opensStream` recognises) takes a stream
 * slot; an ordinary request whose answer turns out to be an event stream
 * moves from the requests to the streams when its response head arrives
 * (`answered`), where a stream slot is free; where none is, the answer is
 * not relayed and the client gets the streams' 503 (counted as a request,
 * an endless answer would hold a request slot for hours, and without
 * `max_in_flight` nothing would bound how many).
 *
 * Per-key counts live in a map keyed by the SHA-256 of the key's value, one
 * entry per key holding at least one slot: an entry is deleted when its
 * count returns to zero, so the map never holds more entries than slots are
 * held, whatever values callers send. State is per Runtime (per plan): a
 * reload starts new counts while the old Runtime's exchanges drain; the
 * gauges are shared by both, so they stay exact.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { ConcurrencyKey, ConcurrencyLimitConfig, RouteConcurrencyConfig, RouteConfig } from '../config/validated-config.js'
import { ConcurrencyLimitReached } from '../errors.js'
import { isGrpcRequest } from '../http/grpc.js'
import type { AddressBuckets } from '../http/address-bucket.js'
import { labelKey, type Metrics } from '../metrics.js'
import type { TokenIdentity } from './token-identity.js'

/** What the step records: the two gauges and the refusals. */
export type ConcurrencyMetrics = Pick<Metrics, 'inFlight' | 'openStreams' | 'concurrencyRefused'>

/** Where a request was refused: the route-wide limit or its key's. */
type RefusedAt = 'route' | 'key'

/** The per-key bucket of a request that has no value for the key (a token without a grant): such requests share it. */
const NO_VALUE = '-'

/** A count of slots, route-wide and per key; a limit left out is Infinity (counted, never refused). */
class SlotCount {
  readonly #route: number
  readonly #perKey: number
  /** Which part of the request names the key; null: no per-key limit. */
  readonly key: ConcurrencyKey | null
  #held = 0
  /** Slots held per key hash; an entry exists only while its count is above zero. */
  readonly #byKey = new Map<string, number>()

  constructor(config: ConcurrencyLimitConfig | null) {
    this.#route = config?.route ?? Number.POSITIVE_INFINITY
    this.#perKey = config?.perKey?.limit ?? Number.POSITIVE_INFINITY
    this.key = config?.perKey?.key ?? null
  }

  /** Take one slot for `key` (null: no per-key limit); where it was refused, or null when taken. */
  take(key: string | null): RefusedAt | null {
    if (this.#held >= this.#route) return 'route'
    if (key !== null) {
      const held = this.#byKey.get(key) ?? 0
      if (held >= this.#perKey) return 'key'
      this.#byKey.set(key, held + 1)
    }
    this.#held++
    return null
  }

  give(key: string | null): void {
    this.#held--
    if (key === null) return
    const held = (this.#byKey.get(key) ?? 1) - 1
    if (held <= 0) this.#byKey.delete(key)
    else this.#byKey.set(key, held)
  }

  /** Slots held (tests and the docs' memory bound). */
  get held(): number {
    return this.#held
  }

  /** Keys holding at least one slot. */
  get keys(): number {
    return this.#byKey.size
  }
}

/** The value a per-key limit counts by; null when the request has none (its own shared bucket). */
function keyValue(key: ConcurrencyKey, identity: TokenIdentity | null, req: IncomingMessage, addresses: AddressBuckets): string | null {
  switch (key) {
    case 'client':
      return identity?.clientId ?? null
    case 'subject':
      return identity?.sub ?? null
    case 'grant':
      return identity?.grantId ?? null
    case 'address':
      return addresses.of(req)
  }
}

/** A media type that is `text/event-stream` (parameters and case aside). */
function isEventStream(contentType: string | string[] | undefined): boolean {
  const value = Array.isArray(contentType) ? contentType[0] : contentType
  return value?.trimStart().toLowerCase().startsWith('text/event-stream') === true
}

/**
 * Whether a request opens a long-lived stream, judged before it is
 * forwarded: a gRPC call (the wire does not say whether its method streams,
 * so every call counts as one), on an MCP route its listen streams (the
 * 2025-11-25 GET stream; a 2026-07-28 `subscriptions/listen` POST, named by
 * its `Mcp-Method` header, which the MCP step holds to the body), elsewhere
 * a GET that asks for an event stream (what EventSource sends). WebSocket
 * upgrades are streams too; the gateway says so (`admit(..., true)`).
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#the-eventsource-interface
 */
export function opensStream(req: IncomingMessage, mcpRoute: boolean): boolean {
  if (isGrpcRequest(req)) return true
  const method = req.method
  if (mcpRoute) return method === 'GET' || (method === 'POST' && req.headers['mcp-method'] === 'subscriptions/listen')
  if (method !== 'GET') return false
  const accept = req.headers.accept
  return accept?.toLowerCase().includes('text/event-stream') === true
}

/** The concurrency step of one route's plan: null in the plan of a route that sets neither limit. */
export class ConcurrencyPlan {
  readonly #requests: SlotCount
  readonly #streams: SlotCount
  /** An answer that is an event stream moves its request to the streams (not on an MCP route: there its POSTs' event streams end with the call). */
  readonly #movesOnEventStream: boolean
  readonly #metrics: ConcurrencyMetrics
  readonly #addresses: AddressBuckets
  /** The gauges' series of this route, rendered once. */
  readonly #series: string
  /** The refusal counter's series, by limit and where it refused. */
  readonly #refusedSeries: Readonly<Record<'requests' | 'streams', Readonly<Record<RefusedAt, string>>>>

  constructor(route: Pick<RouteConfig, 'name' | 'mcp'>, config: RouteConcurrencyConfig, metrics: ConcurrencyMetrics, addresses: AddressBuckets) {
    this.#requests = new SlotCount(config.maxInFlight)
    this.#streams = new SlotCount(config.maxStreams)
    this.#movesOnEventStream = route.mcp === null
    this.#metrics = metrics
    this.#addresses = addresses
    this.#series = labelKey({ route: route.name })
    const refused = (limit: string): Record<RefusedAt, string> => ({
      route: labelKey({ route: route.name, limit, scope: 'route' }),
      key: labelKey({ route: route.name, limit, scope: 'key' }),
    })
    this.#refusedSeries = { requests: refused('max_in_flight'), streams: refused('max_streams') }
  }

  /**
   * Take a slot for a request about to be forwarded: a stream slot when
   * `upgrade` (a WebSocket tunnel) or the request opens a stream, a request
   * slot otherwise. The slot, to give back when the exchange ends; or the
   * 503 to answer instead, nothing forwarded.
   */
  admit(req: IncomingMessage, identity: TokenIdentity | null, upgrade: boolean): ConcurrencySlot | ConcurrencyLimitReached {
    const kind = upgrade || opensStream(req, !this.#movesOnEventStream) ? 'streams' : 'requests'
    const count = kind === 'streams' ? this.#streams : this.#requests
    const key = this.#keyOf(count, identity, req)
    const refused = count.take(key)
    if (refused !== null) {
      this.#metrics.concurrencyRefused.incKey(this.#refusedSeries[kind][refused])
      return new ConcurrencyLimitReached(kind)
    }
    this.#gauge(kind, 1)
    return new ConcurrencySlot(this, kind, key, identity, req)
  }

  /** The hashed per-key value `count` counts this request by; null when it has no per-key limit. */
  #keyOf(count: SlotCount, identity: TokenIdentity | null, req: IncomingMessage): string | null {
    if (count.key === null) return null
    const value = keyValue(count.key, identity, req, this.#addresses)
    return value === null ? NO_VALUE : createHash('sha256').update(value).digest('base64url')
  }

  #gauge(kind: 'requests' | 'streams', by: number): void {
    ;(kind === 'streams' ? this.#metrics.openStreams : this.#metrics.inFlight).addKey(this.#series, by)
  }

  /** Give a slot back (ConcurrencySlot.release). */
  give(kind: 'requests' | 'streams', key: string | null): void {
    ;(kind === 'streams' ? this.#streams : this.#requests).give(key)
    this.#gauge(kind, -1)
  }

  /** An MCP route's POST answered with an event stream is the answer to one call: it stays a request. */
  get movesOnEventStream(): boolean {
    return this.#movesOnEventStream
  }

  /**
   * A request's answer is an event stream: move its slot to the streams when
   * one is free there. The stream key, or undefined when none is (counted
   * as a refusal of `max_streams`).
   */
  move(identity: TokenIdentity | null, req: IncomingMessage): string | null | undefined {
    const key = this.#keyOf(this.#streams, identity, req)
    const refused = this.#streams.take(key)
    if (refused !== null) {
      this.#metrics.concurrencyRefused.incKey(this.#refusedSeries.streams[refused])
      return undefined
    }
    this.#gauge('streams', 1)
    return key
  }

  /** Slots held now, and keys holding one (tests; the bound docs/traffic.md states). */
  get held(): { requests: number; streams: number; requestKeys: number; streamKeys: number } {
    return { requests: this.#requests.held, streams: this.#streams.held, requestKeys: this.#requests.keys, streamKeys: this.#streams.keys }
  }
}

/** One slot held by one exchange; released exactly once, when the exchange ends. */
export class ConcurrencySlot {
  readonly #plan: ConcurrencyPlan
  #kind: 'requests' | 'streams'
  #key: string | null
  /** Kept only until the answer's head: a move to the streams needs the stream key. */
  #identity: TokenIdentity | null
  #req: IncomingMessage | null
  #released = false

  constructor(plan: ConcurrencyPlan, kind: 'requests' | 'streams', key: string | null, identity: TokenIdentity | null, req: IncomingMessage) {
    this.#plan = plan
    this.#kind = kind
    this.#key = key
    this.#identity = identity
    this.#req = req
  }

  /** Which count the slot is in now. */
  get kind(): 'requests' | 'streams' {
    return this.#kind
  }

  /**
   * The upstream's response head arrived with this Content-Type: an event
   * stream moves the slot to the streams. False when no stream slot is free:
   * the answer must not be relayed (the caller answers the streams' 503).
   */
  answered(contentType: string | string[] | undefined): boolean {
    const req = this.#req
    const identity = this.#identity
    this.#req = null
    this.#identity = null
    if (this.#released || this.#kind === 'streams' || req === null || !this.#plan.movesOnEventStream || !isEventStream(contentType)) return true
    const key = this.#plan.move(identity, req)
    if (key === undefined) return false
    this.#plan.give('requests', this.#key)
    this.#kind = 'streams'
    this.#key = key
    return true
  }

  /** The exchange ended: give the slot back (idempotent). */
  readonly release = (): void => {
    if (this.#released) return
    this.#released = true
    this.#req = null
    this.#identity = null
    this.#plan.give(this.#kind, this.#key)
  }
}
