/**
 * Open exchanges end when their access ends. A token is checked when a
 * request arrives; a response that stays open (an SSE stream, an MCP listen
 * stream, a long poll, a WebSocket tunnel) would otherwise keep delivering
 * after the token was revoked or expired. RFC 7009 2.2: once revoked, a
 * token must stop working at the resource server; a stream it opened is that
 * token still working.
 *
 * One registry per gateway (per Runtime). Every forwarded exchange with a
 * token is registered until it closes, by its `jti`, its grant id and the
 * second its access ends (`exp` + `gateway.stream_expiry_grace`). The
 * revocation list tells the registry of every entry it learns (its own
 * revocations, pub/sub messages from other instances, a resync that finds
 * what a lost message carried), and the matching exchanges are ended at
 * once; one timer, armed for the earliest deadline, ends the expired ones.
 *
 * The hot path pays one small object per exchange and a few Map operations:
 * the lists are intrusive (each entry carries its own links), so opening and
 * closing an exchange allocates no Set or array, and the timer is re-armed
 * only when a deadline earlier than every other one arrives.
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

/** Which of an entry's three lists a link belongs to. */
const JTI = 0
const GRANT = 1
const DUE = 2
type ListIndex = typeof JTI | typeof GRANT | typeof DUE

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
  // Links of the jti, grant and deadline lists: fields, not arrays, so an entry is one allocation.
  jtiPrev: OpenExchange | null = null
  jtiNext: OpenExchange | null = null
  grantPrev: OpenExchange | null = null
  grantNext: OpenExchange | null = null
  duePrev: OpenExchange | null = null
  dueNext: OpenExchange | null = null
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

function prevOf(e: OpenExchange, list: ListIndex): OpenExchange | null {
  return list === JTI ? e.jtiPrev : list === GRANT ? e.grantPrev : e.duePrev
}

function nextOf(e: OpenExchange, list: ListIndex): OpenExchange | null {
  return list === JTI ? e.jtiNext : list === GRANT ? e.grantNext : e.dueNext
}

function setPrev(e: OpenExchange, list: ListIndex, to: OpenExchange | null): void {
  if (list === JTI) e.jtiPrev = to
  else if (list === GRANT) e.grantPrev = to
  else e.duePrev = to
}

function setNext(e: OpenExchange, list: ListIndex, to: OpenExchange | null): void {
  if (list === JTI) e.jtiNext = to
  else if (list === GRANT) e.grantNext = to
  else e.dueNext = to
}

/** The open exchanges of one gateway, by token id, grant id and deadline. */
export class OpenExchanges {
  readonly #clock: Clock
  readonly #revocations: RevocationFeed
  readonly #metrics: Pick<Metrics, 'exchangesEnded'>
  readonly #graceSec: number
  /** Heads of the lists, by jti, by grant id, by deadline second. */
  readonly #heads: [Map<string, OpenExchange>, Map<string, OpenExchange>, Map<number, OpenExchange>] = [new Map(), new Map(), new Map()]
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
    if (entry.jti !== null) this.#link(JTI, this.#heads[JTI], entry.jti, entry)
    if (entry.grantId !== null) this.#link(GRANT, this.#heads[GRANT], entry.grantId, entry)
    this.#link(DUE, this.#heads[DUE], entry.dueSec, entry)
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
    if (entry.jti !== null) this.#unlink(JTI, this.#heads[JTI], entry.jti, entry)
    if (entry.grantId !== null) this.#unlink(GRANT, this.#heads[GRANT], entry.grantId, entry)
    this.#unlink(DUE, this.#heads[DUE], entry.dueSec, entry)
    if (this.#size === 0 && this.#retired) this.#release()
  }

  #link<K>(list: ListIndex, heads: Map<K, OpenExchange>, key: K, entry: OpenExchange): void {
    const head = heads.get(key)
    if (head !== undefined) {
      setNext(entry, list, head)
      setPrev(head, list, entry)
    }
    heads.set(key, entry)
  }

  #unlink<K>(list: ListIndex, heads: Map<K, OpenExchange>, key: K, entry: OpenExchange): void {
    const prev = prevOf(entry, list)
    const next = nextOf(entry, list)
    if (prev !== null) setNext(prev, list, next)
    else if (next !== null) heads.set(key, next)
    else heads.delete(key)
    if (next !== null) setPrev(next, list, prev)
    setPrev(entry, list, null)
    setNext(entry, list, null)
  }

  /** End every exchange of a list (entries unlink themselves as they end). */
  #endAll<K>(heads: Map<K, OpenExchange>, key: K, reason: EndReason): void {
    for (let entry = heads.get(key); entry !== undefined; entry = heads.get(key)) this.#end(entry, reason)
  }

  #revoked(entry: RevocationEntry): void {
    if (entry.kind === 'jti') this.#endAll(this.#heads[JTI], entry.id, 'revoked')
    else this.#endAll(this.#heads[GRANT], entry.id, 'revoked')
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
    const heads = this.#heads[DUE]
    let next = Number.POSITIVE_INFINITY
    for (const dueSec of [...heads.keys()]) {
      if (dueSec * 1000 <= nowMs) this.#endAll(heads, dueSec, 'expired')
      else if (dueSec < next) next = dueSec
    }
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
