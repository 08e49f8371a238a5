/**
 * Open exchanges end when their access ends. A token is checked when a
 * request arrives; a response that stays open (an SSE stream, an MCP listen
 * stream, a long poll, a WebSocket tunnel) would otherwise keep delivering
 * after the token was revoked or expired. RFC 7009 2.2: once revoked, a
 * token must stop working at the resource server; a stream it opened is that
 * token still working.
 *
 * One registry per gateway (per Runtime). Every forwarded exchange with a
 * token is registered until it closes, with the second its access ends
 * (`exp` + `gateway.stream_expiry_grace`). The revocation list tells the
 * registry of every entry it learns (its own revocations, pub/sub messages
 * from other instances, a resync that finds what a lost message carried),
 * and the open exchanges of that token or grant are ended at once; one
 * timer, armed for the earliest deadline, ends the expired ones.
 *
 * The hot path pays one small object per exchange and two links: the list
 * is intrusive (each entry carries its own links), so opening and closing an
 * exchange allocates nothing else, and the timer is re-armed only when a
 * deadline earlier than every other one arrives. There is no index (by jti,
 * grant or deadline): a Map keyed by jti sees a new key for nearly every
 * request, and that churn made V8's scavenges promote what the requests had
 * allocated, costing more than everything else the registry does
 * (docs/performance.md, "Open exchanges: one list, no index"). A revocation
 * or a deadline walks the open exchanges instead: there are as many as
 * requests in flight plus open streams, and both events are rare next to
 * requests.
 *
 * A registry whose Runtime was swapped out by a reload stays subscribed
 * until its last exchange closes (`retire`): a WebSocket tunnel opened under
 * the old config is still ended when its token is revoked.
 */
import type { Clock } from '../clock.js'
import type { Logger } from '../log.js'
import { labelKey, type Metrics } from '../metrics.js'
import type { RevocationEntry } from '../store/types.js'
import type { TokenIdentity } from './token-identity.js'

/** Why an exchange was ended (the metric's `reason` label). */
export type EndReason = 'revoked' | 'expired'

/** What an open exchange does when it must end: cut its response or close its tunnel. */
export interface Endable {
  endExchange(reason: EndReason): void
}

/** The revocation list as the registry uses it. */
export interface RevocationFeed {
  isRevoked(jti: string | null, grantId: string | null): boolean
  onRevoked(listener: (entry: RevocationEntry) => void): () => void
}

export interface OpenExchangesDeps {
  clock: Clock
  revocations: RevocationFeed
  metrics: Pick<Metrics, 'exchangesEnded'>
  /** Seconds an exchange outlives its token's exp. */
  graceSec: number
}

/** setTimeout's longest delay is 2^31-1 ms; a far deadline is re-checked this often instead. */
const MAX_TIMER_MS = 3_600_000

const REASON_KEY: Readonly<Record<EndReason, string>> = {
  revoked: labelKey({ reason: 'revoked' }),
  expired: labelKey({ reason: 'expired' }),
}

const MESSAGE: Readonly<Record<EndReason, string>> = {
  revoked: 'open exchange ended: its access token was revoked',
  expired: 'open exchange ended: its access token expired',
}

/** Where an ended exchange's log line goes: the request's logger, bound only when read. */
export interface LogSource {
  readonly log: Logger
}

/** One registered exchange; `close()` it when the exchange closes (idempotent). */
export class OpenExchange {
  readonly #registry: OpenExchanges
  readonly target: Endable
  readonly jti: string | null
  readonly grantId: string | null
  /** Epoch second at which the exchange is ended (exp + grace). */
  readonly dueSec: number
  readonly route: string
  readonly logs: LogSource
  // Links of the registry's list: fields, so an entry is one allocation.
  prev: OpenExchange | null = null
  next: OpenExchange | null = null
  open = true

  constructor(registry: OpenExchanges, target: Endable, identity: TokenIdentity, dueSec: number, route: string, logs: LogSource) {
    this.#registry = registry
    this.target = target
    this.jti = identity.jti
    this.grantId = identity.grantId
    this.dueSec = dueSec
    this.route = route
    this.logs = logs
  }

  /** The exchange closed (finished, failed, or ended here): forget it. */
  close(): void {
    if (this.open) this.#registry.remove(this)
  }
}

/** The open exchanges of one gateway. */
export class OpenExchanges {
  readonly #clock: Clock
  readonly #revocations: RevocationFeed
  readonly #metrics: Pick<Metrics, 'exchangesEnded'>
  readonly #graceSec: number
  /** The newest open exchange; the others follow through `next`. */
  #first: OpenExchange | null = null
  #size = 0
  #timer: NodeJS.Timeout | null = null
  /** The second the timer is armed for (Infinity when none). */
  #armedSec = Number.POSITIVE_INFINITY
  #unsubscribe: (() => void) | null
  #retired = false

  constructor(deps: OpenExchangesDeps) {
    this.#clock = deps.clock
    this.#revocations = deps.revocations
    this.#metrics = deps.metrics
    this.#graceSec = deps.graceSec
    this.#unsubscribe = deps.revocations.onRevoked((entry) => this.#revoked(entry))
  }

  /** Exchanges registered and not closed. */
  get size(): number {
    return this.#size
  }

  /**
   * Register an exchange made with `identity`'s token on `route`. A token
   * revoked since it was checked (a revocation that arrived while a DPoP
   * proof or the upstream connection was awaited) or already past its
   * deadline is ended at once.
   */
  open(target: Endable, identity: TokenIdentity, route: string, logs: LogSource): OpenExchange {
    const entry = new OpenExchange(this, target, identity, identity.exp + this.#graceSec, route, logs)
    this.#size++
    this.#link(entry)
    if (this.#revocations.isRevoked(entry.jti, entry.grantId)) this.#end(entry, 'revoked')
    else if (entry.dueSec < this.#armedSec) this.#arm(entry.dueSec)
    return entry
  }

  /**
   * The Runtime was swapped out: no new exchanges come. Stay subscribed to
   * the revocation list until the open ones have closed.
   */
  retire(): void {
    this.#retired = true
    if (this.#size === 0) this.#release()
  }

  /** Unlink a closed exchange (OpenExchange.close). */
  remove(entry: OpenExchange): void {
    entry.open = false
    this.#size--
    this.#unlink(entry)
    if (this.#size === 0 && this.#retired) this.#release()
  }

  #link(entry: OpenExchange): void {
    const first = this.#first
    if (first !== null) {
      entry.next = first
      first.prev = entry
    }
    this.#first = entry
  }

  #unlink(entry: OpenExchange): void {
    const { prev, next } = entry
    if (prev !== null) prev.next = next
    else this.#first = next
    if (next !== null) next.prev = prev
    entry.prev = null
    entry.next = null
  }

  /** The open exchanges that `matches`, collected first: ending one unlinks it, and a target may close others as it ends. */
  #select(matches: (entry: OpenExchange) => boolean): OpenExchange[] {
    const selected: OpenExchange[] = []
    for (let entry = this.#first; entry !== null; entry = entry.next) if (matches(entry)) selected.push(entry)
    return selected
  }

  /** End the open exchanges of the revoked token or grant. */
  #revoked(revoked: RevocationEntry): void {
    // A client entry: its tokens' open exchanges end when the token expires (they carry no client id here).
    if (revoked.kind === 'client') return
    const matches = revoked.kind === 'jti' ? (e: OpenExchange) => e.jti === revoked.id : (e: OpenExchange) => e.grantId === revoked.id
    for (const entry of this.#select(matches)) if (entry.open) this.#end(entry, 'revoked')
  }

  #end(entry: OpenExchange, reason: EndReason): void {
    this.remove(entry)
    this.#metrics.exchangesEnded.incKey(REASON_KEY[reason])
    // The route and why; never the token.
    const log = entry.logs.log
    log.info({ route: entry.route, reason }, MESSAGE[reason])
    try {
      entry.target.endExchange(reason)
    } catch (err) {
      log.warn({ route: entry.route, err: err instanceof Error ? err.message : String(err) }, 'ending an open exchange failed')
    }
  }

  #arm(dueSec: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#armedSec = dueSec
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, dueSec * 1000 - this.#clock.now()))
    this.#timer = setTimeout(() => this.#expire(), delay)
    this.#timer.unref()
  }

  /** The timer fired: end what is due, arm for the next deadline. */
  #expire(): void {
    this.#timer = null
    this.#armedSec = Number.POSITIVE_INFINITY
    const nowMs = this.#clock.now()
    // One walk: the due ones to end, and the earliest deadline of the rest.
    const due: OpenExchange[] = []
    let next = Number.POSITIVE_INFINITY
    for (let entry = this.#first; entry !== null; entry = entry.next) {
      if (entry.dueSec * 1000 <= nowMs) due.push(entry)
      else if (entry.dueSec < next) next = entry.dueSec
    }
    for (const entry of due) if (entry.open) this.#end(entry, 'expired')
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next)
  }

  #release(): void {
    this.#unsubscribe?.()
    this.#unsubscribe = null
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#armedSec = Number.POSITIVE_INFINITY
  }
}
